#!lua flags=allow-oom
-- extend_lease.lua: renews the lease of an active job for the holder of its
-- current token: the lease now expires lease_ms after the Redis time.
--
-- KEYS[1] {p}:{q}:job:<id>
-- KEYS[2] {p}:{q}:active
-- ARGV[1] job id   ARGV[2] lease token   ARGV[3] lease ms
-- Returns {'OK', lease_expires_at_ms} | {'NOT_FOUND'} | {'STALE'} |
-- {'STATE', state}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): a run in flight
-- keeps its lease.
local f = redis.call('HMGET', KEYS[1], 'state', 'lease_token')
if not f[1] then return {'NOT_FOUND'} end
if f[2] ~= ARGV[2] then return {'STALE'} end
if f[1] ~= 'active' then return {'STATE', f[1]} end

local expires = int(now_ms() + tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'lease_expires_at', expires)
redis.call('ZADD', KEYS[2], expires, ARGV[1])
return {'OK', tonumber(expires)}
