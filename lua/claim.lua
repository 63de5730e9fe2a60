-- claim.lua: leases up to ARGV[2] due jobs of one queue to one claimer.
-- First moves scheduled jobs that are now due into the ready set (at most
-- 1000 per call), then pops the best ready jobs: highest priority, then the
-- one due first. Each claimed job gets attempts + 1, a new lease token and a
-- lease expiry, and enters the active set.
--
-- KEYS[1] {p}:{q}:ready
-- KEYS[2] {p}:{q}:scheduled
-- KEYS[3] {p}:{q}:active
-- KEYS[4] {p}:{q}:paused (when it exists, nothing is claimed)
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] max jobs to claim (>= 1)
-- ARGV[3] lease ms
-- ARGV[4] lease token prefix (random, unique per call; job i gets prefix.i)
-- ARGV[5] worker id
-- Returns {next_due_in_ms, id1, fields1, id2, fields2, ...} where fieldsN is
-- the job hash (HGETALL) after the claim. next_due_in_ms is 0 when all
-- ARGV[2] jobs were claimed (more may be waiting); otherwise the ms until the
-- earliest scheduled job is due (0 if due now), or -1 if none is scheduled
-- or the queue is paused (resuming publishes a wake-up).
if redis.call('EXISTS', KEYS[4]) == 1 then return {-1} end
local now = now_ms()
local prefix = ARGV[1]
local want = tonumber(ARGV[2])

local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', int(now), 'LIMIT', 0, 1000)
for _, id in ipairs(due) do
  local f = redis.call('HMGET', prefix .. id, 'priority', 'available_at')
  if f[1] then
    redis.call('ZADD', KEYS[1], ready_score(tonumber(f[1]), tonumber(f[2])), id)
  end
end
if #due > 0 then redis.call('ZREM', KEYS[2], unpack(due)) end

local out = {0}
local popped = redis.call('ZPOPMIN', KEYS[1], want)
local expires = int(now + tonumber(ARGV[3]))
for i = 1, #popped, 2 do
  local id = popped[i]
  local key = prefix .. id
  redis.call('HINCRBY', key, 'attempts', 1)
  redis.call('HSET', key, 'state', 'active', 'lease_token', ARGV[4] .. '.' .. ((i + 1) / 2),
             'lease_expires_at', expires, 'worker_id', ARGV[5])
  redis.call('ZADD', KEYS[3], expires, id)
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGETALL', key)
end

if #popped / 2 < want then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if #first == 0 then
    out[1] = -1
  else
    out[1] = math.max(0, tonumber(first[2]) - now)
  end
end
return out
