#!lua flags=allow-oom
-- report_progress.lua: records the progress of an active job's run for the
-- holder of its current token: the percent (absent: none) and the opaque
-- data ('' : none) replace what the job held. A run that Cancel asked to
-- stop, or that reached its deadline, records nothing and is told why.
--
-- Publishes a 'progress' queue event (with the percent) while a broker
-- listens (events_open in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- ARGV[1] job id   ARGV[2] lease token
-- ARGV[3] percent ('' = none, else 0..100)   ARGV[4] data (bytes, '' = none)
-- Returns {'OK'} | {'NOT_FOUND'} | {'STALE'} | {'STATE', state} |
-- {'CANCEL_REQUESTED'} | {'TIMED_OUT'}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): a bounded value
-- (the broker allows 4 KiB) on a run in flight.
events_open(KEYS[1])
local job, refused = held_run(KEYS[1], ARGV[1], ARGV[2])
if not job then return refused end
local now = now_ms()
refused = run_stopped(job, now)
if refused then return refused end

local percent = tonumber(ARGV[3])
job[F.progress_percent] = percent
if ARGV[4] ~= '' then job[F.progress_data] = ARGV[4] else job[F.progress_data] = nil end
job_write(KEYS[1], ARGV[1], job)
event('progress', ARGV[1], job, now, percent)
events_publish()
return {'OK'}
