-- ack.lua: completes an active job for the holder of its current lease and
-- stores the result; the job hash then expires after the retention time.
-- Repeating a successful ack with the same token changes nothing.
--
-- KEYS[1] {p}:{q}:job:<id>
-- KEYS[2] {p}:{q}:active
-- KEYS[3] {p}:{q}:completed
-- ARGV[1] job id   ARGV[2] lease token   ARGV[3] result
-- ARGV[4] completed retention ms
-- Returns {'OK'} | {'NOT_FOUND'} | {'STALE'} (token is not the current
-- lease) | {'STATE', state} (the job is not active).
local f = redis.call('HMGET', KEYS[1], 'state', 'lease_token')
if not f[1] then return {'NOT_FOUND'} end
if f[2] ~= ARGV[2] then return {'STALE'} end
if f[1] == 'completed' then return {'OK'} end
if f[1] ~= 'active' then return {'STATE', f[1]} end

local now = now_ms()
local retention = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'state', 'completed', 'result', ARGV[3],
           'finished_at', int(now), 'lease_expires_at', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], int(now), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. int(now - retention))
return {'OK'}
