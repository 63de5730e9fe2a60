#!lua flags=allow-oom
-- advance_schedule.lua: moves a schedule past the run a broker just
-- handled (enqueued, or skipped as missed), unless the schedule moved on
-- meanwhile: another replica advanced it, or PutSchedule / DeleteSchedule
-- changed it. The run's job was enqueued before with the run's idempotency
-- key, so a replica that loses this race enqueued a duplicate, not a
-- second job.
--
-- KEYS[1] {p}:{schedules}:next   zset  name -> next scheduled instant (ms)
-- KEYS[2] {p}:{schedules}:last   hash  name -> "<instant ms> <job id>"
-- ARGV[1] name
-- ARGV[2] the next instant the broker read (the run it handled is due then)
-- ARGV[3] the new next instant in ms, '' when the schedule has no more runs
-- ARGV[4] the run's scheduled instant in ms, '' when no job was enqueued
--         (missed runs skipped)
-- ARGV[5] the run's job id (with ARGV[4])
-- Returns 1 when advanced, 0 when the schedule had moved on.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): the job is stored
-- already; not advancing would enqueue nothing new, only retry.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
if ARGV[4] ~= '' then
  local last = ARGV[4] .. ' ' .. ARGV[5]
  redis.call('HSET', KEYS[2], ARGV[1], last)
end
return 1
