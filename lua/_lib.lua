-- _lib.lua: helpers shared by every script in lua/. The broker puts this file
-- before each script's body (after the script's shebang line, which Redis
-- reads only on the first line; broker/store/script_runner.h), so a script
-- body may call these functions. It touches no key by itself. No shebang here.

-- Redis server time in epoch milliseconds: the one clock that decides
-- due-ness and lease expiry, whatever the brokers' clocks say.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- An integer as a decimal string. Lua's default number-to-string conversion
-- keeps 14 significant digits, too few for ready scores.
local function int(n)
  return string.format('%d', n)
end

-- Score of a due job in the ready set: higher priority first, then the job
-- that became due first. (1000 - priority) needs 11 bits and milliseconds
-- since 2020-01-01 need 42 bits (until year 2159): 53 bits, exact in a double.
local READY_EPOCH_MS = 1577836800000
local function ready_score(priority, available_at)
  return int((1000 - priority) * 4398046511104 + (available_at - READY_EPOCH_MS))
end

-- Delay before the next attempt after `attempts` runs:
-- min(base * 2^(attempts-1), cap) plus up to 10% random jitter.
-- REQUIRES: math.randomseed called with a per-call seed from the broker.
local function backoff_ms(base, cap, attempts)
  local d = base * 2 ^ (attempts - 1)
  if d > cap then d = cap end
  return math.floor(d + d * 0.1 * math.random())
end

-- Deletes the hash of job `id` (key `job_key`) and its idempotency key when
-- that still names the job (a later job may hold the key by now). Returns 1
-- when the hash existed, else 0. The caller removes the id from its sets.
local function delete_job_hash(job_key, idem_prefix, id)
  local idem = redis.call('HGET', job_key, 'idempotency_key')
  if idem and idem ~= '' and redis.call('GET', idem_prefix .. idem) == id then
    redis.call('DEL', idem_prefix .. idem)
  end
  return redis.call('DEL', job_key)
end

-- Settles a failed run of an active job: schedules a retry (state pending,
-- due after the backoff or retry_after_ms when > 0) or, when the attempts are
-- used up or non_retryable is true, makes it dead. Publishes the retry's delay
-- on `channel` so that claimers arm a timer. `token` (the failed run's lease
-- token, '' for none) is recorded with the outcome, so that a repeated Fail
-- with it answers the same outcome whatever happened to the job since; the
-- job's lease token is cleared. Reads every field it needs before the first
-- write: a hash missing one of them (partial; a bug or a hand edit) is made
-- dead with an error naming what is missing, so that it stays visible in a
-- set. Returns outcome ('retry', 'dead' or 'corrupt', which is dead too) and
-- the retry's due time (0 when dead).
local function settle_failure(job_key, active_key, scheduled_key, dead_key, channel,
                              id, token, err, non_retryable, retry_after, now)
  local f = redis.call('HMGET', job_key, 'attempts', 'max_attempts', 'backoff_base', 'backoff_max')
  local attempts, max_attempts = tonumber(f[1]), tonumber(f[2])
  local base, cap = tonumber(f[3]), tonumber(f[4])
  redis.call('ZREM', active_key, id)
  local corrupt = not (attempts and max_attempts and base and cap)
  if corrupt or non_retryable or attempts >= max_attempts then
    if corrupt then
      err = 'job hash lacks attempts, max_attempts or backoff fields; last error: ' .. err
    end
    redis.call('HSET', job_key, 'state', 'dead', 'error', err, 'finished_at', int(now),
               'lease_expires_at', '0', 'lease_token', '', 'failed_token', token,
               'fail_outcome', 'dead', 'fail_next_at', '0')
    redis.call('ZADD', dead_key, int(now), id)
    if corrupt then return 'corrupt', 0 end
    return 'dead', 0
  end
  local delay = retry_after
  if delay <= 0 then
    delay = backoff_ms(base, cap, attempts)
  end
  local at = now + delay
  redis.call('HSET', job_key, 'state', 'pending', 'error', err, 'available_at', int(at),
             'lease_expires_at', '0', 'lease_token', '', 'failed_token', token,
             'fail_outcome', 'retry', 'fail_next_at', int(at))
  redis.call('ZADD', scheduled_key, int(at), id)
  redis.call('SPUBLISH', channel, int(delay))
  return 'retry', at
end
