#!lua flags=allow-oom
-- delete_schedule.lua: removes a schedule (Admin.DeleteSchedule): its
-- definition, next run and last run. Jobs it enqueued stay.
--
-- KEYS[1] {p}:{schedules}:defs   hash
-- KEYS[2] {p}:{schedules}:next   zset
-- KEYS[3] {p}:{schedules}:last   hash  name -> "<instant ms> <job id>"
-- ARGV[1] name
-- Returns 1 when the schedule existed, 0 when not.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): it frees memory.
local existed = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return existed
