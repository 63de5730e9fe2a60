#!lua
-- put_schedule.lua: creates or replaces a schedule (Admin.PutSchedule). The
-- broker parsed and validated the definition and computed its next run
-- from Redis time (read_schedules.lua's clock); its last run is kept.
--
-- KEYS[1] {p}:{schedules}:defs   hash  name -> definition (jobwire.v1.Schedule bytes)
-- KEYS[2] {p}:{schedules}:next   zset  name -> next scheduled instant (ms)
-- ARGV[1] name
-- ARGV[2] definition
-- ARGV[3] next scheduled instant in ms, '' when the schedule has none
-- ARGV[4] the schedules' channel: every broker's schedule runner wakes up
-- Returns 1 when a schedule of that name was replaced, 0 when it is new.
local created = redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
end
redis.call('SPUBLISH', ARGV[4], ARGV[1])
return created == 1 and 0 or 1
