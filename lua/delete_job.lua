#!lua flags=allow-oom
-- delete_job.lua: removes one job in any state, with its idempotency key
-- when that key still names this job.
--
-- KEYS[1] {p}:{q}:job:<id>
-- KEYS[2] {p}:{q}:ready      KEYS[3] {p}:{q}:scheduled
-- KEYS[4] {p}:{q}:active     KEYS[5] {p}:{q}:completed
-- KEYS[6] {p}:{q}:dead
-- ARGV[1] job id
-- ARGV[2] idempotency key prefix {p}:{q}:idem:
-- Returns {'OK'} | {'NOT_FOUND'}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOT_FOUND'} end
for i = 2, 6 do redis.call('ZREM', KEYS[i], ARGV[1]) end
delete_job_hash(KEYS[1], ARGV[2], ARGV[1])
return {'OK'}
