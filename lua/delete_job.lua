#!lua flags=allow-oom
-- delete_job.lua: removes one job in any state, with its idempotency key
-- when that key still names this job. Deleting a job before it ended fails
-- its waiting dependents as a dead one would (_lib_deps.lua).
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
-- KEYS[12] {p}:{q}:key_active  KEYS[13] {p}:{q}:key_waiting (concurrency keys:
--          key_release in _lib.lua)
-- KEYS[14] {p}:{q}:deps_waiting KEYS[15] {p}:{q}:dependents (dependencies)
-- KEYS[16] {p}:{q}:key_limit  (max_active_per_key: only under it does a
--          settle move a parked job back; key_release in _lib.lua)
-- KEYS[17] {p}:{q}:remote_dependents KEYS[18] {p}:{q}:deps_outbox (dependents in
--          other slots: deps_parent_ended in _lib_deps.lua)
-- ARGV[1] job id
-- ARGV[2] notify channel {p}:{q}:notify (a deleted run of a concurrency key
--         lets one of the key's parked jobs go)
-- Returns {'OK'} | {'NOT_FOUND'}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return {'NOT_FOUND'} end
events_open(KEYS[1])
local job = job_read(KEYS[1], ARGV[1])
local now = now_ms()
local C = {ready = KEYS[2], by_type = KEYS[11], jobs = KEYS[1], key_active = KEYS[12],
           key_waiting = KEYS[13], key_limit = KEYS[16], channel = ARGV[2], scheduled = KEYS[3],
           dead = KEYS[6], deps_waiting = KEYS[14], dependents = KEYS[15],
           remote_dependents = KEYS[17], outbox = KEYS[18]}
ready_remove(C, job, ARGV[1])
if redis.call('ZREM', KEYS[4], ARGV[1]) == 1 then key_release(C, job) end
for _, i in ipairs({3, 5, 6, 14}) do redis.call('ZREM', KEYS[i], ARGV[1]) end
delete_job({jobs = KEYS[1], payloads = KEYS[7], results = KEYS[8], idem = KEYS[9],
            idem_expiry = KEYS[10]}, ARGV[1])
event('deleted', ARGV[1], nil, now)
-- A job that had ended settled its dependents then (none are listed now).
deps_parent_ended(C, ARGV[1], job, false, nil, now)
key_wake(C)
events_publish()
return {'OK'}
