#!lua flags=no-writes
-- queue_stats.lua: one queue's counts and the age of its oldest due job, read
-- in one step (changes nothing).
--
-- KEYS[1] {p}:{q}:ready
-- KEYS[2] {p}:{q}:scheduled
-- KEYS[3] {p}:{q}:active
-- KEYS[4] {p}:{q}:completed
-- KEYS[5] {p}:{q}:dead
-- KEYS[6] {p}:{q}:paused
-- KEYS[7] {p}:{q}:key_limit    KEYS[8] {p}:{q}:key_waiting (jobs parked at
--         their concurrency key's limit or for want of its token: counted
--         due, read only while the queue has a per-key limit or a rate
--         limit per key (KEYS[10]), as only then are there any)
-- KEYS[9] {p}:{q}:deps_waiting (pending jobs waiting for parents: counted
--         with pending_scheduled, not due yet)
-- KEYS[10] {p}:{q}:key_rate_limit
-- Returns {pending_due, pending_scheduled, active, completed, dead, paused
-- (0|1), oldest_due_age_ms}. completed counts the entries of the completed
-- index (scored by expiry) not yet expired: a job past its retention is not
-- counted even before ack.lua or reap.lua deletes it.
--
-- The oldest due job is the first of some priority band of `ready` (each band
-- is ordered by due time), or the first of `scheduled` when its time has
-- passed. Looking at the first job of at most 64 bands keeps this O(log n);
-- queues that use more than 64 distinct priorities get the oldest among the
-- 64 highest.
-- Jobs parked at their concurrency key's limit count as due, but not in the
-- oldest due age: they wait for their key, not for a worker.
--
-- Over Redis' maxmemory (noeviction): runs (no-writes: a read, also
-- allowed on a read-only replica).
local now = now_ms()
local flags = redis.call('MGET', KEYS[6], KEYS[7], KEYS[10])
local BAND = 4398046511104  -- 2^42, see ready_score
local overdue = redis.call('ZCOUNT', KEYS[2], '-inf', int(now))
local due = redis.call('ZCARD', KEYS[1]) + overdue
if flags[2] or flags[3] then due = due + redis.call('ZCARD', KEYS[8]) end
local future = redis.call('ZCARD', KEYS[2]) - overdue + redis.call('ZCARD', KEYS[9])

local oldest = nil
local from = '-inf'
for _ = 1, 64 do
  local first = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #first == 0 then break end
  local score = tonumber(first[2])
  local band = math.floor(score / BAND)
  local available_at = score - band * BAND + READY_EPOCH_MS
  if oldest == nil or available_at < oldest then oldest = available_at end
  from = int((band + 1) * BAND)
end
if overdue > 0 then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local available_at = tonumber(first[2])
  if oldest == nil or available_at < oldest then oldest = available_at end
end
local age = 0
if oldest ~= nil and now > oldest then age = now - oldest end

return {due, future, redis.call('ZCARD', KEYS[3]), redis.call('ZCOUNT', KEYS[4], int(now), '+inf'),
        redis.call('ZCARD', KEYS[5]), flags[1] and 1 or 0, int(age)}
