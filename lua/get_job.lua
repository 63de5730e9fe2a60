#!lua flags=no-writes
-- get_job.lua: one job, in any state (changes nothing).
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:payloads
-- KEYS[3] {p}:{q}:results
-- KEYS[4] {p}:{q}:completed
-- ARGV[1] job id
-- Returns the job as {record, payload, result} (job_reply: the record as
-- stored), or {} when it has no record or is a completed job
-- whose retention has ended (its completed-index score is before now; the
-- next trim deletes it), so that it is gone on time whenever the trim runs.
--
-- Over Redis' maxmemory (noeviction): runs (no-writes: a read, also
-- allowed on a read-only replica).
local packed = redis.call('HGET', KEYS[1], ARGV[1])
if not packed then return {} end
if job_unpack(packed)[F.state] == 'completed' then
  local expiry = tonumber(redis.call('ZSCORE', KEYS[4], ARGV[1]))
  if expiry and expiry < now_ms() then return {} end
end
return job_reply(packed, redis.call('HGET', KEYS[2], ARGV[1]), redis.call('HGET', KEYS[3], ARGV[1]))
