#!lua flags=no-writes
-- get_job.lua: one job, in any state (changes nothing).
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:payloads
-- KEYS[3] {p}:{q}:results
-- KEYS[4] {p}:{q}:completed
-- ARGV[1] job id
-- Returns the job as a flat field/value list (its record's fields, payload
-- and result; job_flat), or {} when it has no record or is a completed job
-- whose retention has ended (its completed-index score is before now; the
-- next trim deletes it), so that it is gone on time whenever the trim runs.
--
-- Over Redis' maxmemory (noeviction): runs (no-writes: a read, also
-- allowed on a read-only replica).
local job = job_read(KEYS[1], ARGV[1])
if not job then return {} end
if job[F.state] == 'completed' then
  local expiry = tonumber(redis.call('ZSCORE', KEYS[4], ARGV[1]))
  if expiry and expiry < now_ms() then return {} end
end
return job_flat(job, redis.call('HGET', KEYS[2], ARGV[1]) or '',
                redis.call('HGET', KEYS[3], ARGV[1]) or nil)
