#!lua flags=allow-oom
-- purge_dead.lua: removes up to a batch of dead jobs that died at or before
-- now - ARGV[1], with their idempotency keys when those still name them.
--
-- KEYS[1] {p}:{q}:dead
-- KEYS[2] {p}:{q}:jobs         KEYS[3] {p}:{q}:payloads
-- KEYS[4] {p}:{q}:results      KEYS[5] {p}:{q}:idem
-- KEYS[6] {p}:{q}:idem_expiry
-- ARGV[1] older_than ms (>= 0)
-- ARGV[2] batch size
-- Returns the number removed (fewer than the batch: nothing older is left).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
local cutoff = now_ms() - tonumber(ARGV[1])
local J = {jobs = KEYS[2], payloads = KEYS[3], results = KEYS[4], idem = KEYS[5],
           idem_expiry = KEYS[6]}
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(cutoff), 'LIMIT', 0,
                       tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  delete_job(J, id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids
