#!lua flags=allow-oom
-- cancel.lua: makes a pending job dead with error "cancelled".
--
-- KEYS[1] {p}:{q}:job:<id>
-- KEYS[2] {p}:{q}:ready
-- KEYS[3] {p}:{q}:scheduled
-- KEYS[4] {p}:{q}:dead
-- ARGV[1] job id
-- Returns {'OK'} | {'NOT_FOUND'} | {'STATE', state} (not pending).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): settles a pending
-- job, creates no work.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'NOT_FOUND'} end
if state ~= 'pending' then return {'STATE', state} end

local now = int(now_ms())
redis.call('HSET', KEYS[1], 'state', 'dead', 'error', 'cancelled', 'finished_at', now)
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], now, ARGV[1])
return {'OK'}
