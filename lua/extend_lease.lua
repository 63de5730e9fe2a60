#!lua flags=allow-oom
-- extend_lease.lua: renews the lease of an active job for the holder of its
-- current token: the lease now expires lease_ms after the Redis time.
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:active
-- ARGV[1] job id   ARGV[2] lease token   ARGV[3] lease ms
-- Returns {'OK', lease_expires_at_ms} | {'NOT_FOUND'} | {'STALE'} |
-- {'STATE', state}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): a run in flight
-- keeps its lease.
local job = job_read(KEYS[1], ARGV[1])
if not job then return {'NOT_FOUND'} end
if job[F.lease_token] ~= ARGV[2] then return {'STALE'} end
if job[F.state] ~= 'active' then return {'STATE', tostring(job[F.state])} end

local expires = now_ms() + tonumber(ARGV[3])
job[F.lease_expires_at] = expires
job_write(KEYS[1], ARGV[1], job)
redis.call('ZADD', KEYS[2], int(expires), ARGV[1])
return {'OK', expires}
