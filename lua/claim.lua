#!lua
-- claim.lua: leases up to ARGV[2] due jobs of one queue to one claimer, and
-- at most about ARGV[6] bytes of them (at least one job, whatever its size),
-- so that a reply stays bounded in Redis' Lua heap, its output buffer and the
-- broker. First moves scheduled jobs that are now due into the ready set (at
-- most 1000 per call), then takes the best ready jobs: highest priority, then
-- the one due first. Each claimed job gets attempts + 1, a new lease token
-- and a lease expiry, and enters the active set. Every field a job needs is
-- read before anything is written: an id whose hash is missing is dropped
-- from the ready / scheduled set and never claimed (no hash is created for
-- it); a scheduled job whose hash lacks priority or available_at is made
-- dead with an error naming them (so it stays visible); both are reported.
--
-- KEYS[1] {p}:{q}:ready
-- KEYS[2] {p}:{q}:scheduled
-- KEYS[3] {p}:{q}:active
-- KEYS[4] {p}:{q}:paused (when it exists, nothing is claimed)
-- KEYS[5] {p}:{q}:dead
-- KEYS[6] {p}:{q}:claim:<ARGV[4]> (the record of this call: the ids it
--         leased, space-separated, expiring with the lease)
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] max jobs to claim (>= 1)
-- ARGV[3] lease ms
-- ARGV[4] claim id: lease token prefix (random, unique per call; job i gets
--         claim_id.i)
-- ARGV[5] worker id
-- ARGV[6] max bytes of payload and error text in all (>= 1)
-- Returns {next_due_in_ms, more, skipped, id1, fields1, id2, fields2, ...}
-- where fieldsN is the job hash (HGETALL) after the claim. more is 1 when
-- due jobs are left (the call stopped at ARGV[2] jobs or ARGV[6] bytes;
-- next_due_in_ms is then 0), else 0 and next_due_in_ms is the ms until the
-- earliest scheduled job is due (0 if due now), or -1 if none is scheduled
-- or the queue is paused (resuming publishes a wake-up). skipped is the list
-- of ids dropped for a missing or partial hash.
--
-- Over Redis' maxmemory (noeviction): refused before it runs (nothing
-- written): a claim starts runs whose Acks would store results past the limit;
-- the Claim streams stay open and the broker tries again every second.
if redis.call('EXISTS', KEYS[4]) == 1 then return {-1, 0, {}} end
local now = now_ms()
local prefix = ARGV[1]
local want = tonumber(ARGV[2])
local max_bytes = tonumber(ARGV[6])
local skipped = {}

local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', int(now), 'LIMIT', 0, 1000)
for _, id in ipairs(due) do
  local f = redis.call('HMGET', prefix .. id, 'state', 'priority', 'available_at')
  local priority, available_at = tonumber(f[2]), tonumber(f[3])
  if priority and available_at then
    redis.call('ZADD', KEYS[1], ready_score(priority, available_at), id)
  else
    skipped[#skipped + 1] = id
    if f[1] then
      redis.call('HSET', prefix .. id, 'state', 'dead', 'finished_at', int(now),
                 'error', 'job hash lacks priority or available_at')
      redis.call('ZADD', KEYS[5], int(now), id)
    end
  end
end
if #due > 0 then redis.call('ZREM', KEYS[2], unpack(due)) end

local out = {0, 0, skipped}
local popped = redis.call('ZPOPMIN', KEYS[1], want)
local claimed, bytes = 0, 0
local expires = int(now + tonumber(ARGV[3]))
local ids = {}
for i = 1, #popped, 2 do
  local id = popped[i]
  local key = prefix .. id
  local size = redis.call('HSTRLEN', key, 'payload') + redis.call('HSTRLEN', key, 'error')
  if claimed > 0 and bytes + size > max_bytes then
    -- Over the byte bound: this job and the rest go back where they were.
    local back = {}
    for j = i, #popped, 2 do
      back[#back + 1] = popped[j + 1]
      back[#back + 1] = popped[j]
    end
    redis.call('ZADD', KEYS[1], unpack(back))
    break
  end
  if redis.call('HLEN', key) == 0 then
    skipped[#skipped + 1] = id
  else
    bytes = bytes + size
    claimed = claimed + 1
    redis.call('HINCRBY', key, 'attempts', 1)
    redis.call('HSET', key, 'state', 'active', 'lease_token', ARGV[4] .. '.' .. claimed,
               'lease_expires_at', expires, 'worker_id', ARGV[5])
    redis.call('ZADD', KEYS[3], expires, id)
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGETALL', key)
    ids[#ids + 1] = id
  end
end
if claimed > 0 then
  redis.call('SET', KEYS[6], table.concat(ids, ' '), 'PX', ARGV[3])
end

if redis.call('ZCARD', KEYS[1]) > 0 then
  out[2] = 1
else
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if #first == 0 then
    out[1] = -1
  else
    out[1] = math.max(0, tonumber(first[2]) - now)
  end
end
return out
