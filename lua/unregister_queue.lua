#!lua flags=allow-oom
-- unregister_queue.lua: removes a queue name from the registry, once
-- delete_queue.lua has removed the queue (DONE). A script of its own because
-- the registry is in another Redis Cluster slot than the queue's keys.
--
-- KEYS[1] {p}:queues
-- ARGV[1] queue name
-- Returns 1 when the name was there, 0 otherwise.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): it frees memory.
return redis.call('SREM', KEYS[1], ARGV[1])
