#!lua flags=allow-oom
-- cancel.lua: cancels a job. A pending job becomes dead with error
-- "cancelled" at once. An active job is marked cancel-requested (its
-- cancel_requested field holds the Redis time) and a stop request
-- 'stop:<id> <lease token>' is published on the queue's notify channel, which
-- the brokers serving Claim streams of the queue follow: the one holding the
-- run tells its worker. The run then ends dead "cancelled" when it is failed
-- or its lease expires (settle_failure), or completed when it is acked.
-- A job that ends dead here fails its waiting dependents (_lib_deps.lua).
-- Cancelling a cancel-requested run again publishes the request again and
-- changes nothing.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:ready
-- KEYS[3] {p}:{q}:scheduled
-- KEYS[4] {p}:{q}:dead
-- KEYS[5] {p}:{q}:ready_by_type
-- KEYS[6] {p}:{q}:key_waiting (a pending job its concurrency key's limit
--         parked)
-- KEYS[7] {p}:{q}:deps_waiting KEYS[8] {p}:{q}:dependents (dependencies:
--         a pending job may wait for parents, or have dependents)
-- KEYS[9] {p}:{q}:remote_dependents KEYS[10] {p}:{q}:deps_outbox (dependents in
--          other slots: deps_parent_ended in _lib_deps.lua)
-- ARGV[1] job id
-- ARGV[2] notify channel {p}:{q}:notify
-- Returns {'OK', 0} (pending: now dead) | {'OK', 1} (active: stop requested)
-- | {'NOT_FOUND'} | {'STATE', state} (completed or dead).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): settles a pending
-- job, creates no work.
events_open(KEYS[1])
local job = job_read(KEYS[1], ARGV[1])
if not job then return {'NOT_FOUND'} end
local state = job[F.state]
if state ~= 'pending' and state ~= 'active' then return {'STATE', tostring(state)} end

local now = now_ms()
if state == 'active' then
  if not cancel_asked(job) then
    job[F.cancel_requested] = now
    job_write(KEYS[1], ARGV[1], job)
    event('cancel_requested', ARGV[1], job, now)
  end
  redis.call('SPUBLISH', ARGV[2], 'stop:' .. ARGV[1] .. ' ' .. tostring(job[F.lease_token]))
  events_publish()
  return {'OK', 1}
end
job[F.state], job[F.finished_at] = 'dead', now
error_note(job, tonumber(job[F.attempts]) or 0, 'cancelled', now)
job_write(KEYS[1], ARGV[1], job)
ready_remove({ready = KEYS[2], by_type = KEYS[5], key_waiting = KEYS[6]}, job, ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('ZADD', KEYS[4], int(now), ARGV[1])
event('cancelled', ARGV[1], job, now)
deps_parent_ended({jobs = KEYS[1], ready = KEYS[2], by_type = KEYS[5], scheduled = KEYS[3],
                   dead = KEYS[4], deps_waiting = KEYS[7], dependents = KEYS[8],
                   remote_dependents = KEYS[9], outbox = KEYS[10], channel = ARGV[2]},
                  ARGV[1], job, false, nil, now)
events_publish()
return {'OK', 0}
