#!lua flags=allow-oom
-- reap.lua: treats every active job of one queue whose lease has expired (by
-- the Redis clock) as a failed run with error "lease expired": the old token
-- is revoked, the attempt counts, and the job is retried after its backoff or
-- made dead. Each expiry is handled once, however many brokers run it. Also
-- trims the completed index (scored by each entry's expiry) up to now, so
-- that a quiet queue (no Ack to trim it) does not keep entries of expired
-- job hashes. An active entry
-- whose hash is missing is dropped and reported; one whose hash lacks the
-- fields a retry needs is made dead (settle_failure) and reported; neither
-- stops the rest of the batch.
--
-- KEYS[1] {p}:{q}:active
-- KEYS[2] {p}:{q}:scheduled
-- KEYS[3] {p}:{q}:dead
-- KEYS[4] {p}:{q}:completed
-- KEYS[5] {p}:{q}:ready
-- KEYS[6] {p}:{q}:paused
-- KEYS[7] {p}:{q}:registered (its value: '1', or the Redis ms since which
--         the queue has been found empty)
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] max jobs per call
-- ARGV[3] jitter seed
-- ARGV[4] notify channel {p}:{q}:notify
-- ARGV[5] idle ms: how long a queue may stay empty (no job in any state, not
--         paused) before it is reported idle; 0 = never
-- Returns {reaped, next_expiry_in_ms, dead, skipped, idle}: idle is 1 when
-- the queue has been empty for ARGV[5] ms (the broker then drops it from the
-- registry, delete_queue.lua 'if empty'); next_expiry_in_ms is
-- the ms until the earliest remaining lease expires (0 when more expired
-- leases remain), or -1 when no job is active; dead is how many of the
-- reaped jobs ran out of attempts (the others were scheduled for a retry);
-- skipped lists the ids with a missing or partial hash.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): expired runs are
-- settled (retried or dead) whatever the memory.
local now = now_ms()
math.randomseed(tonumber(ARGV[3]))
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(now), 'LIMIT', 0, tonumber(ARGV[2]))
local dead, skipped = 0, {}
for _, id in ipairs(expired) do
  local key = ARGV[1] .. id
  local state = redis.call('HGET', key, 'state')
  if state == 'active' then
    local outcome = settle_failure(key, KEYS[1], KEYS[2], KEYS[3], ARGV[4], id, '',
                                   'lease expired', false, 0, now)
    if outcome ~= 'retry' then dead = dead + 1 end
    if outcome == 'corrupt' then skipped[#skipped + 1] = id end
  else
    if not state then skipped[#skipped + 1] = id end
    redis.call('ZREM', KEYS[1], id)
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. int(now))

local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local next_in = -1
if #first > 0 then next_in = math.max(0, tonumber(first[2]) - now) end

local idle = 0
local idle_ms = tonumber(ARGV[5])
local mark = redis.call('GET', KEYS[7])
if idle_ms > 0 and mark then
  local empty = #first == 0 and redis.call('ZCARD', KEYS[5]) == 0 and
                redis.call('ZCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 and
                redis.call('ZCARD', KEYS[4]) == 0 and redis.call('EXISTS', KEYS[6]) == 0
  if not empty then
    if mark ~= '1' then redis.call('SET', KEYS[7], '1') end
  elseif mark == '1' then
    redis.call('SET', KEYS[7], int(now))  -- found empty for the first time
  elseif now - (tonumber(mark) or now) >= idle_ms then
    idle = 1
  end
end
return {#expired, next_in, dead, skipped, idle}
