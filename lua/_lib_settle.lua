-- _lib_settle.lua: how a failed run ends (settle_failure), for fail.lua
-- and reap.lua. The broker puts it after _lib.lua and _lib_deps.lua, whose
-- helpers it uses (broker/store/script_runner.h). It touches no key by
-- itself. No shebang.

-- Settles a failed run of active job `id` (record `job`, as job_read gave
-- it): schedules a retry (state pending, due after the backoff or
-- retry_after_ms when > 0) or, when the attempts are used up or
-- non_retryable is true, makes it dead, and its waiting dependents with it
-- (deps_parent_ended). `S` names the queue's keys (jobs, active, scheduled,
-- dead, key_release's and deps_parent_ended's) and S.channel its notify
-- channel, on which the retry's delay is published so that claimers arm a
-- timer; the caller runs key_wake(S) once after its settles. `token` (the failed run's lease
-- token, '' for none) is recorded with the outcome, so that a repeated Fail
-- with it answers the same outcome whatever happened to the job since; the
-- job's lease token is cleared. Reads every field it needs before the first
-- write: a record missing one of them (partial; a bug or a hand edit) is made
-- dead with an error naming what is missing, so that it stays visible in a
-- set. A run that Cancel asked to stop is made dead with error "cancelled"
-- (event 'cancelled'), and a run past its deadline fails with error
-- "timeout" (event 'timed_out', then 'retry' or 'dead'), whatever `err`.
-- Otherwise, with `keep_attempt` (and retry_after > 0), the run's attempt is
-- given back (attempts - 1) and the job retried after retry_after.
-- Returns outcome ('retry', 'dead' or 'corrupt', which is dead too) and
-- the retry's due time (0 when dead).
local function settle_failure(S, job, id, token, err, non_retryable, retry_after, now,
                              keep_attempt)
  local jobs_key = S.jobs
  local attempts, max_attempts = tonumber(job[F.attempts]), tonumber(job[F.max_attempts])
  local run = attempts or 0  -- the run that failed, before keep_attempt gives it back
  local base, cap = tonumber(job[F.backoff_base]), tonumber(job[F.backoff_max])
  redis.call('ZREM', S.active, id)
  key_release(S, job)
  local corrupt = not (attempts and max_attempts and base and cap)
  local dead_kind = 'dead'
  if cancel_asked(job) then
    err, non_retryable, dead_kind = 'cancelled', true, 'cancelled'
  elseif run_timed_out(job, now) then
    err = 'timeout'
    event('timed_out', id, job, now)
  elseif keep_attempt and attempts and attempts > 0 and retry_after > 0 then
    -- Not an attempt (FailRequest.keep_attempt): given back before the
    -- attempts are compared, so it never makes the job dead.
    attempts = attempts - 1
    job[F.attempts] = attempts
  end
  job[F.lease_expires_at], job[F.lease_token], job[F.failed_token] = 0, '', token
  job[F.run_deadline] = nil
  if corrupt or non_retryable or attempts >= max_attempts then
    if corrupt then
      err = 'job record lacks attempts, max_attempts or backoff fields; last error: ' .. err
    end
    job[F.state], job[F.finished_at] = 'dead', now
    error_note(job, run, err, now)
    job[F.fail_outcome], job[F.fail_next_at] = 'dead', 0
    job_write(jobs_key, id, job)
    redis.call('ZADD', S.dead, int(now), id)
    event(dead_kind, id, job, now)
    deps_parent_ended(S, id, job, false, nil, now)
    if corrupt then return 'corrupt', 0 end
    return 'dead', 0
  end
  local delay = retry_after
  if delay <= 0 then
    delay = backoff_ms(base, cap, attempts)
  end
  local at = now + delay
  job[F.state], job[F.available_at] = 'pending', at
  error_note(job, run, err, now)
  job[F.fail_outcome], job[F.fail_next_at] = 'retry', at
  job_write(jobs_key, id, job)
  redis.call('ZADD', S.scheduled, int(at), id)
  redis.call('SPUBLISH', S.channel, int(delay))
  event('retry', id, job, now)
  return 'retry', at
end
