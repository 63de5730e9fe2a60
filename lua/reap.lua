#!lua flags=allow-oom
-- reap.lua: treats every active job of one queue whose lease has expired (by
-- the Redis clock) as a failed run with error "lease expired" ("timeout" at
-- the run's deadline, "cancelled" for a run Cancel asked to stop:
-- settle_failure): the old token
-- is revoked, the attempt counts, and the job is retried after its backoff or
-- made dead. Each expiry is handled once, however many brokers run it. Also
-- deletes the completed jobs whose retention has ended (the completed index
-- is scored by each entry's expiry) and trims the expired entries of the
-- idempotency and ack-tombstone indexes, at most 1000 of each per call
-- (TRIM_PER_REAP), so that a quiet queue (no Enqueue or Ack to trim them)
-- does not keep them and a backlog is worked off over passes. An active entry
-- whose record is missing is dropped and reported; one whose record lacks the
-- fields a retry needs is made dead (settle_failure) and reported; neither
-- stops the rest of the batch.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:active
-- KEYS[2] {p}:{q}:scheduled
-- KEYS[3] {p}:{q}:dead
-- KEYS[4] {p}:{q}:completed
-- KEYS[5] {p}:{q}:ready
-- KEYS[6] {p}:{q}:paused
-- KEYS[7] {p}:{q}:registered (its value: '1', or the Redis ms since which
--         the queue has been found empty)
-- KEYS[8] {p}:{q}:jobs         KEYS[9] {p}:{q}:payloads
-- KEYS[10] {p}:{q}:results      KEYS[11] {p}:{q}:idem
-- KEYS[12] {p}:{q}:idem_expiry
-- KEYS[13] {p}:{q}:acked        KEYS[14] {p}:{q}:acked_expiry
-- KEYS[15] {p}:{q}:ready_by_type
-- KEYS[16] {p}:{q}:key_active  KEYS[17] {p}:{q}:key_waiting (concurrency keys:
--          key_release in _lib.lua)
-- KEYS[18] {p}:{q}:deps_waiting KEYS[19] {p}:{q}:dependents (a dead job's
--          dependents: deps_parent_ended in _lib_deps.lua; the idle check
--          counts deps_waiting, whose children may wait for parents in
--          other queues)
-- KEYS[20] {p}:{q}:key_limit  (max_active_per_key: only under it does a
--          settle move a parked job back; key_release in _lib.lua)
-- KEYS[21] {p}:{q}:remote_dependents KEYS[22] {p}:{q}:deps_outbox (a dead
--          job's dependents in other slots: _lib_deps.lua)
-- KEYS[23] {p}:{q}:deps_unlinked (read by the idle check only)
-- ARGV[1] max jobs per call
-- ARGV[2] jitter seed
-- ARGV[3] notify channel {p}:{q}:notify
-- ARGV[4] idle ms: how long a queue may stay empty (no job in any state, not
--         paused) before it is reported idle; 0 = no idle check this call
--         (the empty-since mark is neither read nor written)
-- ARGV[5] grace ms of a link: a child in deps_unlinked stored longer ago
--         than this is left behind; 0 = no check of the dependency work
--         this call (the broker checks with the idle check, even when
--         ARGV[4] is 0)
-- Returns {reaped, next_expiry_in_ms, dead, skipped, idle, settled,
-- deps_work}: deps_work is 1 (ARGV[5] > 0 only) when the queue's
-- deps_outbox holds news or a child in deps_unlinked is left behind, for
-- the broker's recovery pass (docs/semantics.md, "Parents in other
-- queues"); idle is 1 when
-- the queue has been empty for ARGV[4] ms (the broker then drops it from the
-- registry, delete_queue.lua 'if empty'); next_expiry_in_ms is
-- the ms until the earliest remaining lease expires (0 when more expired
-- leases remain), or -1 when no job is active; dead is how many of the
-- reaped jobs ran out of attempts (the others were scheduled for a retry);
-- skipped lists the ids with a missing or partial record; settled lists
-- each reaped job with a whole record as three strings: id, 'retry' or
-- 'dead', and the trace id of its traceparent header ('' for none;
-- trace_id in _lib.lua).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): expired runs are
-- settled (retried or dead) whatever the memory.
local now = now_ms()
math.randomseed(tonumber(ARGV[2]))
events_open(KEYS[8])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(now), 'LIMIT', 0, tonumber(ARGV[1]))
local dead, skipped, settled = 0, {}, {}
local S = {jobs = KEYS[8], active = KEYS[1], scheduled = KEYS[2], dead = KEYS[3], ready = KEYS[5],
           by_type = KEYS[15], key_active = KEYS[16], key_waiting = KEYS[17], key_limit = KEYS[20],
           deps_waiting = KEYS[18], dependents = KEYS[19], remote_dependents = KEYS[21],
           outbox = KEYS[22], channel = ARGV[3]}
for _, id in ipairs(expired) do
  local job = job_read(KEYS[8], id)
  if job and job[F.state] == 'active' then
    -- A run at its deadline gets 'timed_out' instead (settle_failure).
    if not run_timed_out(job, now) then event('lease_expired', id, job, now) end
    local outcome = settle_failure(S, job, id, '', 'lease expired', false, 0, now)
    if outcome ~= 'retry' then dead = dead + 1 end
    if outcome == 'corrupt' then
      skipped[#skipped + 1] = id
    else
      settled[#settled + 1] = id
      settled[#settled + 1] = outcome
      settled[#settled + 1] = trace_id(job)
    end
  else
    if not job or job[F.state] == nil then skipped[#skipped + 1] = id end
    redis.call('ZREM', KEYS[1], id)
  end
end
key_wake(S)
trim_completed(KEYS[4], KEYS[8], KEYS[9], KEYS[10], now, TRIM_PER_REAP)
trim_expired(KEYS[11], KEYS[12], now, TRIM_PER_REAP)
trim_expired(KEYS[13], KEYS[14], now, TRIM_PER_REAP)

local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local next_in = -1
if #first > 0 then next_in = math.max(0, tonumber(first[2]) - now) end

local idle = 0
local idle_ms = tonumber(ARGV[4])
local deps_work = 0
if tonumber(ARGV[5]) > 0 then
  local outbox = redis.call('EXISTS', KEYS[22]) == 1
  local behind = redis.call('ZRANGEBYSCORE', KEYS[23], '-inf', int(now - tonumber(ARGV[5])),
                            'LIMIT', 0, 1)
  if outbox or #behind > 0 then deps_work = 1 end
end
local mark = idle_ms > 0 and redis.call('GET', KEYS[7])
if mark then
  -- A child waiting for parents elsewhere may be the queue's only job.
  local empty = #first == 0 and deps_work == 0 and redis.call('ZCARD', KEYS[5]) == 0 and
                redis.call('ZCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 and
                redis.call('ZCARD', KEYS[4]) == 0 and redis.call('EXISTS', KEYS[6]) == 0 and
                redis.call('ZCARD', KEYS[18]) == 0
  if not empty then
    if mark ~= '1' then redis.call('SET', KEYS[7], '1') end
  elseif mark == '1' then
    redis.call('SET', KEYS[7], int(now))  -- found empty for the first time
  elseif now - (tonumber(mark) or now) >= idle_ms then
    idle = 1
  end
end
events_publish()
return {#expired, next_in, dead, skipped, idle, settled, deps_work}
