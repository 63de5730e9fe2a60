#!lua flags=allow-oom
-- set_queue.lua: creates a queue with its settings, or changes the settings
-- of a queue (docs/redis-layout.md, "Queue settings" and "Partitioned
-- queues"): its partition count, its default job timeout, its rate limit,
-- its max_active (the most active jobs at once), its max_active_per_key and
-- its rate limit per concurrency key. All live with
-- partition 0; partition i > 0 is the queue "<q>#i". A count only grows:
-- the jobs of a partition dropped would be stranded. A rate limit or a
-- max_active needs a queue of one partition (claim.lua enforces them with
-- that partition's keys). Announces a new
-- count on partition 0's notify channel ('partitions:<P>'), so that the
-- Claim streams of every broker replica start reading the new partitions,
-- and a changed limit with a wake-up ('0'), so that streams waiting under
-- the old limit claim again. The default timeout is read
-- by the brokers (with the count, within about a second of a change) and
-- applied at Enqueue to jobs that give none; the limits are read by every
-- claim (claim.lua), and max_active by the brokers too (with the count),
-- which wake a waiting stream when a job of such a queue is settled.
--
-- KEYS[1] {p}:{q}:partitions   the count (partition 0)
-- KEYS[2] {p}:{q}:registered   exists once the queue is in the registry
-- KEYS[3] {p}:{q}:job_timeout  the default job timeout in ms
-- KEYS[4] {p}:{q}:rate_limit   '<count> <interval ms> <burst>'
-- KEYS[5] {p}:{q}:rate_bucket  the limit's token bucket (claim.lua)
-- KEYS[6] {p}:{q}:max_active   the most active jobs at once
-- KEYS[7] {p}:{q}:key_limit    the most active jobs per concurrency key
-- KEYS[8] {p}:{q}:key_waiting  jobs parked at their key's limit (claim_ready)
-- KEYS[9] {p}:{q}:ready        KEYS[10] {p}:{q}:ready_by_type
-- KEYS[11] {p}:{q}:jobs
-- KEYS[12] {p}:{q}:key_rate_limit  the rate limit per concurrency key
-- KEYS[13] {p}:{q}:key_tat         its buckets (claim_ready)
-- KEYS[14] {p}:{q}:key_rate_wake   keys parked for want of a token
-- ARGV[1] the partition count, 1..256; 0: unchanged ('update' only)
-- ARGV[2] 'create' (refused when the queue exists: registered or counted)
--         or 'update' (refused when it does not)
-- ARGV[3] notify channel {p}:{q}:notify
-- ARGV[4] the default job timeout: '' unchanged, '-1' removed, else ms
--         (0..604800000, checked by the broker)
-- ARGV[5] the rate limit: '' unchanged, '-' removed, else '<count>
--         <interval ms> <burst>' (checked by the broker)
-- ARGV[6] max_active: '' unchanged, '0' removed, else 1..1000000 (checked
--         by the broker)
-- ARGV[7] max_active_per_key: as max_active. A change (or removal) moves
--         every parked job back to the ready set, so that claims park
--         again only what the new limit holds back.
-- ARGV[8] the rate limit per concurrency key: as ARGV[5]. A change (or
--         removal) empties every key's bucket state (each key starts full)
--         and moves every parked job back, as ARGV[7].
-- Returns {'OK', old count} (1 when none was set) | {'EXISTS', count} |
-- {'MISSING', 1} | {'SHRINK', count} (refused: the count is larger;
-- nothing changed) | {'LIMITED', count, 'rate_limit' | 'max_active' |
-- 'max_active_per_key' | 'key_rate_limit'}
-- (refused: that limit and more than one partition; nothing changed).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): an operator's
-- control; it stores a few small strings.
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local exists = current > 0 or redis.call('EXISTS', KEYS[2]) == 1
local old = current > 0 and current or 1
if ARGV[2] == 'create' and exists then return {'EXISTS', old} end
if ARGV[2] == 'update' and not exists then return {'MISSING', 1} end
local given = tonumber(ARGV[1])
local wanted = given > 0 and given or old
if wanted < old then return {'SHRINK', old} end
-- Whether the queue has the limit in `key` after this call, given its
-- argument (`removed`: the value that removes it).
local function kept(arg, removed, key)
  if arg == removed then return false end
  if arg ~= '' then return true end
  return redis.call('EXISTS', key) == 1
end
if wanted > 1 then
  if kept(ARGV[5], '-', KEYS[4]) then return {'LIMITED', old, 'rate_limit'} end
  if kept(ARGV[6], '0', KEYS[6]) then return {'LIMITED', old, 'max_active'} end
  if kept(ARGV[7], '0', KEYS[7]) then return {'LIMITED', old, 'max_active_per_key'} end
  if kept(ARGV[8], '-', KEYS[12]) then return {'LIMITED', old, 'key_rate_limit'} end
end
if ARGV[4] == '-1' then
  redis.call('DEL', KEYS[3])
elseif ARGV[4] ~= '' then
  redis.call('SET', KEYS[3], ARGV[4])
end
if ARGV[5] == '-' then
  if redis.call('DEL', KEYS[4], KEYS[5]) > 0 then redis.call('SPUBLISH', ARGV[3], '0') end
elseif ARGV[5] ~= '' then
  redis.call('SET', KEYS[4], ARGV[5])
  redis.call('SPUBLISH', ARGV[3], '0')
end
if ARGV[6] == '0' then
  if redis.call('DEL', KEYS[6]) > 0 then redis.call('SPUBLISH', ARGV[3], '0') end
elseif ARGV[6] ~= '' then
  redis.call('SET', KEYS[6], ARGV[6])
  redis.call('SPUBLISH', ARGV[3], '0')
end
if ARGV[8] ~= '' then
  if ARGV[8] == '-' then redis.call('DEL', KEYS[12]) else redis.call('SET', KEYS[12], ARGV[8]) end
  redis.call('DEL', KEYS[13], KEYS[14])
end
if ARGV[7] ~= '' or ARGV[8] ~= '' then
  if ARGV[7] == '0' then
    redis.call('DEL', KEYS[7])
  elseif ARGV[7] ~= '' then
    redis.call('SET', KEYS[7], ARGV[7])
  end
  local parked = redis.call('ZRANGE', KEYS[8], 0, -1)
  local R = {ready = KEYS[9], by_type = KEYS[10]}
  for _, member in ipairs(parked) do
    local _, score, id = type_member_parts(member)
    local job = id and job_read(KEYS[11], id)
    if job and job[F.state] == 'pending' then ready_add(R, job, pad_score(score), id) end
  end
  redis.call('DEL', KEYS[8])
  redis.call('SPUBLISH', ARGV[3], '0')
end
if given > 0 then redis.call('SET', KEYS[1], wanted) end
if wanted ~= old then redis.call('SPUBLISH', ARGV[3], 'partitions:' .. wanted) end
return {'OK', old}
