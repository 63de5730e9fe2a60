#!lua flags=allow-oom
-- trim_dead.lua: bounds one queue's dead jobs for an operator who asked for
-- it (--dead_retention_ms, --dead_max_per_queue): removes, up to a batch,
-- the dead jobs that died more than the retention ago, then the oldest ones
-- beyond the maximum count, each with its idempotency key when that still
-- names it (as purge_dead.lua does).
--
-- KEYS[1] {p}:{q}:dead
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] idempotency key prefix {p}:{q}:idem:
-- ARGV[3] retention ms (0 = no age bound)
-- ARGV[4] max dead jobs kept (0 = no count bound)
-- ARGV[5] batch size
-- Returns the number removed (the batch size when more may be left).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
local retention, max_kept, batch = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ids = {}
if retention > 0 then
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(now_ms() - retention), 'LIMIT', 0, batch)
end
if max_kept > 0 and #ids < batch then
  local over = redis.call('ZCARD', KEYS[1]) - #ids - max_kept
  if over > 0 then
    local oldest = redis.call('ZRANGE', KEYS[1], #ids, #ids + math.min(over, batch - #ids) - 1)
    for _, id in ipairs(oldest) do ids[#ids + 1] = id end
  end
end
for _, id in ipairs(ids) do
  delete_job_hash(ARGV[1] .. id, ARGV[2], id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids
