#!lua flags=no-writes
-- cancel_requests.lua: which of the named runs Cancel has asked to stop
-- (changes nothing). cancel.lua tells the broker holding a run by a message
-- on the queue's notify channel; a broker whose subscription to it was
-- (re)confirmed may have missed such messages (it had not subscribed yet,
-- or its pub/sub connection dropped), so it asks about the runs it holds
-- and passes a stop on for each one named here.
--
-- KEYS[1] {p}:{q}:jobs
-- ARGV    job id, lease token, job id, lease token, ... (runs held)
-- Returns the ids, in ARGV order, whose record is active under that lease
-- token with cancel_requested set.
--
-- Over Redis' maxmemory (noeviction): runs (no-writes: a read).
local ids = {}
for i = 1, #ARGV - 1, 2 do ids[#ids + 1] = ARGV[i] end
local records = jobs_read(KEYS[1], ids)
local asked = {}
for i = 1, #ARGV - 1, 2 do
  local job = records[ARGV[i]]
  if job and job[F.state] == 'active' and job[F.lease_token] == ARGV[i + 1] and
      job[F.cancel_requested] then
    asked[#asked + 1] = ARGV[i]
  end
end
return asked
