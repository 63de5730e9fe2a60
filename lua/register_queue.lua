#!lua flags=allow-oom
-- register_queue.lua: adds a queue name to the registry of queues that have
-- or had jobs (read by the lease reaper, the stats refresher and the admin
-- API). Run by JobStore::RegisterQueue before and after it sets the queue's
-- registered marker, and by AdminStore after a deletion that raced an
-- enqueue (docs/redis-layout.md, "The registry and Redis Cluster").
--
-- KEYS[1] {p}:queues
-- ARGV[1] queue name
-- Returns 1 when the queue was new, 0 otherwise.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): it completes an enqueue
-- that Redis already admitted (its jobs are stored).
return redis.call('SADD', KEYS[1], ARGV[1])
