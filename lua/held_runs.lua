#!lua flags=no-writes
-- held_runs.lua: where the named runs stand (changes nothing). A broker
-- learns what happens to the runs it granted elsewhere from messages on the
-- queue's notify channel: cancel.lua's stop requests, and another replica's
-- 'settled:' and 'extended:' announcements. Whenever its subscription to
-- the channel is (re)confirmed (it had not subscribed yet, or its pub/sub
-- connection dropped) it may have missed some, so it asks here about the
-- runs it holds in the queue.
--
-- KEYS[1] {p}:{q}:jobs
-- ARGV    job id, lease token, job id, lease token, ... (runs held)
-- Returns {what, ms} for each run, in ARGV order: what is 'ended' (the
-- record is not active under that token: the run was settled, reaped or
-- released; ms 0), 'cancel' (active, and Cancel asked it to stop) or 'held'
-- (active); ms is how long its lease has left by the Redis clock (at least
-- 0).
--
-- Over Redis' maxmemory (noeviction): runs (no-writes: a read).
local ids = {}
for i = 1, #ARGV - 1, 2 do ids[#ids + 1] = ARGV[i] end
local records = jobs_read(KEYS[1], ids)
local now = now_ms()
local out = {}
for i = 1, #ARGV - 1, 2 do
  local job = records[ARGV[i]]
  if job and job[F.state] == 'active' and job[F.lease_token] == ARGV[i + 1] then
    local left = math.max(0, (tonumber(job[F.lease_expires_at]) or 0) - now)
    out[#out + 1] = {job[F.cancel_requested] and 'cancel' or 'held', left}
  else
    out[#out + 1] = {'ended', 0}
  end
end
return out
