#!lua flags=allow-oom
-- purge_dead.lua: removes up to a batch of dead jobs that died at or before
-- now - ARGV[3], with their idempotency keys when those still name them.
--
-- KEYS[1] {p}:{q}:dead
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] idempotency key prefix {p}:{q}:idem:
-- ARGV[3] older_than ms (>= 0)
-- ARGV[4] batch size
-- Returns the number removed (fewer than the batch: nothing older is left).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
local cutoff = now_ms() - tonumber(ARGV[3])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(cutoff), 'LIMIT', 0,
                       tonumber(ARGV[4]))
for _, id in ipairs(ids) do
  delete_job_hash(ARGV[1] .. id, ARGV[2], id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids
