#!lua flags=allow-oom
-- register_queue.lua: adds a queue name to the registry of queues that have
-- or had jobs (read by the lease reaper and, later, the admin API).
--
-- KEYS[1] {p}:queues
-- ARGV[1] queue name
-- Returns 1 when the queue was new, 0 otherwise.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): it completes an enqueue
-- that Redis already admitted (its jobs are stored).
return redis.call('SADD', KEYS[1], ARGV[1])
