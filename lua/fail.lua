#!lua flags=allow-oom
-- fail.lua: settles a failed run reported by the holder of the current lease:
-- a retry after the backoff (or retry_after_ms), or dead when the attempts
-- are used up or the failure is non-retryable; a run the worker says not to
-- count (keep_attempt) is retried after retry_after_ms with its attempt
-- given back. Repeating a successful fail
-- with the same token changes nothing and answers the outcome it got then
-- (marked as a repeat), even after the retry was claimed again, the job was
-- cancelled or redriven: settle_failure records the token with the outcome.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:active
-- KEYS[3] {p}:{q}:scheduled
-- KEYS[4] {p}:{q}:dead
-- KEYS[5] {p}:{q}:ready        KEYS[6] {p}:{q}:ready_by_type
-- KEYS[7] {p}:{q}:key_active  KEYS[8] {p}:{q}:key_waiting (concurrency keys:
--          key_release in _lib.lua)
-- KEYS[9] {p}:{q}:deps_waiting KEYS[10] {p}:{q}:dependents (a dead job's
--          dependents: deps_parent_ended in _lib_deps.lua)
-- KEYS[11] {p}:{q}:key_limit  (max_active_per_key: only under it does a
--          settle move a parked job back; key_release in _lib.lua)
-- KEYS[12] {p}:{q}:remote_dependents KEYS[13] {p}:{q}:deps_outbox (dependents in
--          other slots: deps_parent_ended in _lib_deps.lua)
-- ARGV[1] job id   ARGV[2] lease token   ARGV[3] error text
-- ARGV[4] non_retryable ('1' or '0')   ARGV[5] retry_after_ms (0 = backoff)
-- ARGV[6] jitter seed   ARGV[7] notify channel {p}:{q}:notify
-- ARGV[8] keep_attempt ('1': this run does not count as an attempt; the
--         broker sends it only with retry_after_ms > 0 and retryable)
-- Returns {'OK', 'retry'|'dead', next_attempt_at_ms, repeat (1 when this
-- token's fail was settled before, else 0), trace id (of the job's
-- traceparent header when this call made it dead, else ''; trace_id in
-- _lib.lua)} | {'NOT_FOUND'} | {'STALE'} |
-- {'STATE', state}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): finishing work
-- always succeeds.
events_open(KEYS[1])
local job = job_read(KEYS[1], ARGV[1])
if not job then return {'NOT_FOUND'} end
if job[F.failed_token] == ARGV[2] and ARGV[2] ~= '' then
  return {'OK', tostring(job[F.fail_outcome]), tonumber(job[F.fail_next_at]) or 0, 1, ''}
end
if job[F.lease_token] ~= ARGV[2] then return {'STALE'} end
if job[F.state] ~= 'active' then return {'STATE', tostring(job[F.state])} end

math.randomseed(tonumber(ARGV[6]))
local S = {jobs = KEYS[1], active = KEYS[2], scheduled = KEYS[3], dead = KEYS[4], ready = KEYS[5],
           by_type = KEYS[6], key_active = KEYS[7], key_waiting = KEYS[8], key_limit = KEYS[11],
           deps_waiting = KEYS[9], dependents = KEYS[10], remote_dependents = KEYS[12],
           outbox = KEYS[13], channel = ARGV[7]}
local outcome, at = settle_failure(S, job, ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1',
                                   tonumber(ARGV[5]), now_ms(), ARGV[8] == '1')
key_wake(S)
if outcome == 'corrupt' then outcome = 'dead' end
events_publish()
return {'OK', outcome, at, 0, outcome == 'dead' and trace_id(job) or ''}
