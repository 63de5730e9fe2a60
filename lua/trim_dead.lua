#!lua flags=allow-oom
-- trim_dead.lua: bounds one queue's dead jobs for an operator who asked for
-- it (--dead_retention_ms, --dead_max_per_queue): removes, up to a batch,
-- the dead jobs that died more than the retention ago, then the oldest ones
-- beyond the maximum count, each with its idempotency key when that still
-- names it (as purge_dead.lua does).
--
-- KEYS[1] {p}:{q}:dead
-- KEYS[2] {p}:{q}:jobs         KEYS[3] {p}:{q}:payloads
-- KEYS[4] {p}:{q}:results      KEYS[5] {p}:{q}:idem
-- KEYS[6] {p}:{q}:idem_expiry
-- ARGV[1] retention ms (0 = no age bound)
-- ARGV[2] max dead jobs kept (0 = no count bound)
-- ARGV[3] batch size
-- Returns the number removed (the batch size when more may be left).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
local retention, max_kept, batch = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local J = {jobs = KEYS[2], payloads = KEYS[3], results = KEYS[4], idem = KEYS[5],
           idem_expiry = KEYS[6]}
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
  delete_job(J, id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids
