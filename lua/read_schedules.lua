#!lua flags=no-writes
-- read_schedules.lua: the schedules that are due (the broker's schedule
-- runner) or all of them (Admin.ListSchedules), with Redis time, the one
-- clock schedules follow. Changes nothing.
--
-- KEYS[1] {p}:{schedules}:defs   hash  name -> definition (jobwire.v1.Schedule bytes)
-- KEYS[2] {p}:{schedules}:next   zset  name -> next scheduled instant (ms)
-- KEYS[3] {p}:{schedules}:last   hash  name -> "<instant ms> <job id>"
-- ARGV[1] 'due': the schedules whose next instant is at or before now,
--         earliest first; 'all': every schedule
-- ARGV[2] at most this many schedules
-- Returns {now ms, the earliest next instant of any schedule ('' when none),
-- then per schedule: name, definition, next instant ('' when none), last run
-- ('' before the first)}. A due name whose definition is
-- gone (a race with DeleteSchedule) is left out.
local now = now_ms()
local names
if ARGV[1] == 'due' then
  names = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
else
  names = redis.call('HKEYS', KEYS[1])
end
local earliest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local out = {now, earliest[2] and int(tonumber(earliest[2])) or ''}
for i = 1, math.min(#names, tonumber(ARGV[2])) do
  local name = names[i]
  local def = redis.call('HGET', KEYS[1], name)
  if def then
    local next_at = redis.call('ZSCORE', KEYS[2], name)
    out[#out + 1] = name
    out[#out + 1] = def
    out[#out + 1] = next_at and int(tonumber(next_at)) or ''
    out[#out + 1] = redis.call('HGET', KEYS[3], name) or ''
  end
end
return out
