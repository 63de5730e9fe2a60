-- reap.lua: treats every active job of one queue whose lease has expired (by
-- the Redis clock) as a failed run with error "lease expired": the old token
-- is revoked, the attempt counts, and the job is retried after its backoff or
-- made dead. Each expiry is handled once, however many brokers run it.
--
-- KEYS[1] {p}:{q}:active
-- KEYS[2] {p}:{q}:scheduled
-- KEYS[3] {p}:{q}:dead
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] max jobs per call
-- ARGV[3] jitter seed
-- ARGV[4] notify channel {p}:{q}:notify
-- Returns {reaped, next_expiry_in_ms, dead}: next_expiry_in_ms is the ms
-- until the earliest remaining lease expires (0 when more expired leases
-- remain), or -1 when no job is active; dead is how many of the reaped jobs
-- ran out of attempts (the others were scheduled for a retry).
local now = now_ms()
math.randomseed(tonumber(ARGV[3]))
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(now), 'LIMIT', 0, tonumber(ARGV[2]))
local dead = 0
for _, id in ipairs(expired) do
  local key = ARGV[1] .. id
  if redis.call('HGET', key, 'state') == 'active' then
    redis.call('HDEL', key, 'lease_token')
    local outcome = settle_failure(key, KEYS[1], KEYS[2], KEYS[3], ARGV[4], id, 'lease expired',
                                   false, 0, now)
    if outcome == 'dead' then dead = dead + 1 end
  else
    redis.call('ZREM', KEYS[1], id)
  end
end

local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local next_in = -1
if #first > 0 then next_in = math.max(0, tonumber(first[2]) - now) end
return {#expired, next_in, dead}
