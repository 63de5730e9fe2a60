#!lua flags=allow-oom
-- set_paused.lua: pauses or resumes a queue. claim.lua hands out nothing
-- while the paused key exists; resuming publishes a wake-up so that open
-- Claim streams start delivering again.
--
-- KEYS[1] {p}:{q}:paused
-- ARGV[1] '1' to pause, '0' to resume
-- ARGV[2] notify channel
-- Returns 1 when the flag changed, 0 when it already had that value.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): an operator's
-- control, creates no work.
if ARGV[1] == '1' then
  return redis.call('SET', KEYS[1], '1', 'NX') and 1 or 0
end
local changed = redis.call('DEL', KEYS[1])
if changed == 1 then redis.call('SPUBLISH', ARGV[2], 0) end
return changed
