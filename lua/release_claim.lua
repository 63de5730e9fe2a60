#!lua flags=allow-oom
-- release_claim.lua: undoes a whole claim.lua call whose reply never reached
-- the broker (its Redis connection dropped after the script ran), from the
-- call's record. Each job still active under a lease of that call is pending
-- and due again at once, with its attempt given back and its token cleared,
-- as release.lua does for one job; jobs that moved on (acked, reaped,
-- claimed again) are left alone, and so are runs that Cancel asked to stop
-- (their leases expire: the reaper makes them dead "cancelled"). The record
-- is deleted.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:claim:<claim id>
-- KEYS[2] {p}:{q}:active
-- KEYS[3] {p}:{q}:ready
-- KEYS[4] {p}:{q}:jobs (job records)
-- KEYS[5] {p}:{q}:ready_by_type
-- KEYS[6] {p}:{q}:key_active  KEYS[7] {p}:{q}:key_waiting (concurrency keys:
--          key_release in _lib.lua)
-- KEYS[8] {p}:{q}:key_limit  (max_active_per_key: only under it does a
--          settle move a parked job back; key_release in _lib.lua)
-- ARGV[1] claim id (the lease token prefix of the call)
-- ARGV[2] notify channel
-- Returns the number of jobs given back (0 when the record is gone: the
-- call never ran, or its leases expired).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): gives back jobs that were never
-- delivered.
local record = redis.call('GET', KEYS[1])
if not record then return 0 end
local prefix = ARGV[1] .. '.'
local released = 0
local now = nil
local C = {ready = KEYS[3], by_type = KEYS[5], jobs = KEYS[4], key_active = KEYS[6],
           key_waiting = KEYS[7], key_limit = KEYS[8], channel = ARGV[2]}
events_open(KEYS[4])
for id in string.gmatch(record, '%S+') do
  local job = job_read(KEYS[4], id)
  local priority = tonumber(job and job[F.priority])
  local available_at = tonumber(job and job[F.available_at])
  local token = job and job[F.lease_token]
  if job and job[F.state] == 'active' and type(token) == 'string' and
      string.sub(token, 1, #prefix) == prefix and priority and available_at and
      tonumber(job[F.attempts]) and not cancel_asked(job) then
    job[F.attempts] = tonumber(job[F.attempts]) - 1
    job[F.state], job[F.lease_token], job[F.lease_expires_at] = 'pending', '', 0
    job[F.run_deadline] = nil
    job_write(KEYS[4], id, job)
    redis.call('ZREM', KEYS[2], id)
    ready_add(C, job, ready_score(priority, available_at), id)
    key_release(C, job)
    released = released + 1
    if released == 1 then now = now_ms() end
    event('released', id, job, now)
  end
end
redis.call('DEL', KEYS[1])
if released > 0 then redis.call('SPUBLISH', ARGV[2], 0) end
events_publish()
return released
