#!lua
-- claim.lua: leases up to ARGV[1] due jobs of one queue to one claimer, and
-- at most about ARGV[5] bytes of them (at least one job, whatever its size),
-- so that a reply stays bounded in Redis' Lua heap, its output buffer and the
-- broker. First moves scheduled jobs that are now due into the ready set (at
-- most 1000 per call), then takes the best ready jobs: highest priority, then
-- the one due first. Each claimed job gets attempts + 1, a new lease token
-- and a lease expiry, and enters the active set. Every field a job needs is
-- read before anything is written: an id whose record is missing is dropped
-- from the ready / scheduled set and never claimed (no record is created for
-- it); a scheduled job whose record lacks priority or available_at is made
-- dead with an error naming them (so it stays visible); both are reported.
--
-- KEYS[1] {p}:{q}:ready
-- KEYS[2] {p}:{q}:scheduled
-- KEYS[3] {p}:{q}:active
-- KEYS[4] {p}:{q}:paused (when it exists, nothing is claimed)
-- KEYS[5] {p}:{q}:dead
-- KEYS[6] {p}:{q}:claim:<ARGV[4]> (the record of this call: the ids it
--         leased, space-separated, expiring with the lease)
-- KEYS[7] {p}:{q}:jobs (job records)
-- KEYS[8] {p}:{q}:payloads
-- ARGV[1] max jobs to claim (>= 1)
-- ARGV[2] lease ms
-- ARGV[3] claim id: lease token prefix (random, unique per call; job i gets
--         claim_id.i)
-- ARGV[4] worker id
-- ARGV[5] max bytes of payload and error text in all (>= 1)
-- Returns {next_due_in_ms, more, skipped, id1, fields1, id2, fields2, ...}
-- where fieldsN is the job after the claim as a flat field/value list (its
-- record's fields and its payload, job_flat). more is 1 when
-- due jobs are left (the call stopped at ARGV[1] jobs or ARGV[5] bytes;
-- next_due_in_ms is then 0), else 0 and next_due_in_ms is the ms until the
-- earliest scheduled job is due (0 if due now), or -1 if none is scheduled
-- or the queue is paused (resuming publishes a wake-up). skipped is the list
-- of ids dropped for a missing or partial record.
--
-- Over Redis' maxmemory (noeviction): refused before it runs (nothing
-- written): a claim starts runs whose Acks would store results past the limit;
-- the Claim streams stay open and the broker tries again every second.
if redis.call('EXISTS', KEYS[4]) == 1 then return {-1, 0, {}} end
local now = now_ms()
local want = tonumber(ARGV[1])
local max_bytes = tonumber(ARGV[5])
local skipped = {}

local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', int(now), 'LIMIT', 0, 1000)
for _, id in ipairs(due) do
  local job = job_read(KEYS[7], id)
  local priority, available_at = tonumber(job and job[F.priority]), tonumber(job and job[F.available_at])
  if priority and available_at then
    redis.call('ZADD', KEYS[1], ready_score(priority, available_at), id)
  else
    skipped[#skipped + 1] = id
    if job then
      job[F.state], job[F.finished_at] = 'dead', now
      job[F.error] = 'job record lacks priority or available_at'
      job_write(KEYS[7], id, job)
      redis.call('ZADD', KEYS[5], int(now), id)
    end
  end
end
if #due > 0 then redis.call('ZREM', KEYS[2], unpack(due)) end

local out = {0, 0, skipped}
local popped = redis.call('ZPOPMIN', KEYS[1], want)
local claimed, bytes = 0, 0
local expires = now + tonumber(ARGV[2])
local ids = {}
for i = 1, #popped, 2 do
  local id = popped[i]
  local job = job_read(KEYS[7], id)
  local size = job_text_bytes(KEYS[8], id, job)
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
  if job == nil then
    skipped[#skipped + 1] = id
  else
    bytes = bytes + size
    claimed = claimed + 1
    job[F.attempts] = (tonumber(job[F.attempts]) or 0) + 1
    job[F.state], job[F.lease_token] = 'active', ARGV[3] .. '.' .. claimed
    job[F.lease_expires_at], job[F.worker_id] = expires, ARGV[4]
    job_write(KEYS[7], id, job)
    redis.call('ZADD', KEYS[3], int(expires), id)
    out[#out + 1] = id
    out[#out + 1] = job_flat(job, redis.call('HGET', KEYS[8], id) or '')
    ids[#ids + 1] = id
  end
end
if claimed > 0 then
  redis.call('SET', KEYS[6], table.concat(ids, ' '), 'PX', ARGV[2])
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
