#!lua flags=allow-oom
-- release.lua: undoes a claim whose job never reached its worker (the Claim
-- stream ended before the job was written). The job is pending and due
-- again at once, with its attempt given back; the lease token is cleared so
-- the undelivered lease can never Ack, Fail or extend. Every field it needs
-- is read before the first write.
--
-- KEYS[1] {p}:{q}:job:<id>
-- KEYS[2] {p}:{q}:active
-- KEYS[3] {p}:{q}:ready
-- ARGV[1] job id   ARGV[2] lease token of the undelivered claim
-- ARGV[3] notify channel
-- Returns {'OK'} | {'NOT_FOUND'} | {'STALE'} (the token is not the current
-- lease: the job moved on, nothing to undo) | {'STATE', state} (not active)
-- | {'CORRUPT', missing field} (nothing written; the lease expires instead).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): gives back a job
-- that was never delivered.
local f = redis.call('HMGET', KEYS[1], 'state', 'lease_token', 'priority', 'available_at',
                     'attempts')
if not f[1] then return {'NOT_FOUND'} end
if f[2] ~= ARGV[2] then return {'STALE'} end
if f[1] ~= 'active' then return {'STATE', f[1]} end
local priority, available_at = tonumber(f[3]), tonumber(f[4])
if not priority then return {'CORRUPT', 'priority'} end
if not available_at then return {'CORRUPT', 'available_at'} end
if not tonumber(f[5]) then return {'CORRUPT', 'attempts'} end

redis.call('HINCRBY', KEYS[1], 'attempts', -1)
redis.call('HSET', KEYS[1], 'state', 'pending', 'lease_token', '', 'lease_expires_at', '0')
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ready_score(priority, available_at), ARGV[1])
redis.call('SPUBLISH', ARGV[3], 0)
return {'OK'}
