#!lua flags=allow-oom
-- cancel.lua: makes a pending job dead with error "cancelled".
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:ready
-- KEYS[3] {p}:{q}:scheduled
-- KEYS[4] {p}:{q}:dead
-- KEYS[5] {p}:{q}:ready_by_type
-- ARGV[1] job id
-- Returns {'OK'} | {'NOT_FOUND'} | {'STATE', state} (not pending).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): settles a pending
-- job, creates no work.
local job = job_read(KEYS[1], ARGV[1])
if not job then return {'NOT_FOUND'} end
if job[F.state] ~= 'pending' then return {'STATE', tostring(job[F.state])} end

local now = now_ms()
job[F.state], job[F.error], job[F.finished_at] = 'dead', 'cancelled', now
job_write(KEYS[1], ARGV[1], job)
ready_remove({ready = KEYS[2], by_type = KEYS[5]}, job, ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], int(now), ARGV[1])
events_open(KEYS[1])
event('cancelled', ARGV[1], job, now)
events_publish()
return {'OK'}
