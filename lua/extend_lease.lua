#!lua flags=allow-oom
-- extend_lease.lua: renews the lease of an active job for the holder of its
-- current token: the lease now expires lease_ms after the Redis time, but
-- never past the run's deadline (run_deadline, from the job's timeout). A
-- run that Cancel asked to stop, or that reached its deadline, is not
-- renewed: its worker is told why.
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:active
-- ARGV[1] job id   ARGV[2] lease token   ARGV[3] lease ms
-- Returns {'OK', lease_expires_at_ms, lease ms granted (ARGV[3], or less up
-- to the run's deadline)} | {'NOT_FOUND'} | {'STALE'} |
-- {'STATE', state} | {'CANCEL_REQUESTED'} | {'TIMED_OUT'}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): a run in flight
-- keeps its lease.
local job, refused = held_run(KEYS[1], ARGV[1], ARGV[2])
if not job then return refused end
local now = now_ms()
refused = run_stopped(job, now)
if refused then return refused end
local expires = now + tonumber(ARGV[3])
local deadline = tonumber(job[F.run_deadline]) or 0
if deadline > 0 and expires > deadline then expires = deadline end
job[F.lease_expires_at] = expires
job_write(KEYS[1], ARGV[1], job)
redis.call('ZADD', KEYS[2], int(expires), ARGV[1])
return {'OK', expires, expires - now}
