#!lua flags=allow-oom
-- delete_job.lua: removes one job in any state, with its idempotency key
-- when that key still names this job.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:ready      KEYS[3] {p}:{q}:scheduled
-- KEYS[4] {p}:{q}:active     KEYS[5] {p}:{q}:completed
-- KEYS[6] {p}:{q}:dead
-- KEYS[7] {p}:{q}:payloads     KEYS[8] {p}:{q}:results
-- KEYS[9] {p}:{q}:idem         KEYS[10] {p}:{q}:idem_expiry
-- KEYS[11] {p}:{q}:ready_by_type
-- ARGV[1] job id
-- Returns {'OK'} | {'NOT_FOUND'}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return {'NOT_FOUND'} end
ready_remove({ready = KEYS[2], by_type = KEYS[11]}, job_read(KEYS[1], ARGV[1]), ARGV[1])
for i = 3, 6 do redis.call('ZREM', KEYS[i], ARGV[1]) end
delete_job({jobs = KEYS[1], payloads = KEYS[7], results = KEYS[8], idem = KEYS[9],
            idem_expiry = KEYS[10]}, ARGV[1])
events_open(KEYS[1])
event('deleted', ARGV[1], nil, now_ms())
events_publish()
return {'OK'}
