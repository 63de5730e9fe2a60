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
local idem = redis.call('HGET', KEYS[1], 'idempotency_key')
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOT_FOUND'} end
if idem and idem ~= '' and redis.call('GET', ARGV[2] .. idem) == ARGV[1] then
  redis.call('DEL', ARGV[2] .. idem)
end
for i = 2, 6 do redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('DEL', KEYS[1])
return {'OK'}
