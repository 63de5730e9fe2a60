#!lua flags=no-writes
-- get_job.lua: one job, in any state, by id or by idempotency key (changes
-- nothing).
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:payloads
-- KEYS[3] {p}:{q}:results
-- KEYS[4] {p}:{q}:completed
-- KEYS[5] {p}:{q}:idem        idempotency key -> job id
-- KEYS[6] {p}:{q}:idem_expiry idempotency key -> expiry (Redis ms)
-- ARGV[1] job id, or '' to look the job up by ARGV[2]
-- ARGV[2] idempotency key (when ARGV[1] is ''): the job it maps to while
--         its dedup window lasts (idem_get)
-- Returns the job as {record, payload, result, id} (job_reply and the job's
-- id: the record as stored), or {} when the key maps to no job, or the job
-- has no record or is a completed job whose retention has ended (its
-- completed-index score is before now; the next trim deletes it), so that
-- it is gone on time whenever the trim runs.
--
-- Over Redis' maxmemory (noeviction): runs (no-writes: a read, also
-- allowed on a read-only replica).
-- Redis time is read only when needed (a lookup by key, a completed job):
-- a read by id of a job in any other state makes no TIME call.
local id = ARGV[1]
if id == '' then
  id = idem_get(KEYS[5], KEYS[6], ARGV[2], now_ms())
  if not id then return {} end
end
local packed = redis.call('HGET', KEYS[1], id)
if not packed then return {} end
if job_unpack(packed)[F.state] == 'completed' then
  local expiry = tonumber(redis.call('ZSCORE', KEYS[4], id))
  if expiry and expiry < now_ms() then return {} end
end
local reply = job_reply(packed, redis.call('HGET', KEYS[2], id), redis.call('HGET', KEYS[3], id))
reply[4] = id
return reply
