#!lua flags=allow-oom
-- release.lua: undoes a claim whose job never reached its worker (the Claim
-- stream ended before the job was written). The job is pending and due
-- again at once, with its attempt given back; the lease token is cleared so
-- the undelivered lease can never Ack, Fail or extend. Every field it needs
-- is read before the first write.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:active
-- KEYS[3] {p}:{q}:ready
-- KEYS[4] {p}:{q}:ready_by_type
-- KEYS[5] {p}:{q}:key_active  KEYS[6] {p}:{q}:key_waiting (concurrency keys:
--          key_release in _lib.lua)
-- KEYS[7] {p}:{q}:key_limit  (max_active_per_key: only under it does a
--          settle move a parked job back; key_release in _lib.lua)
-- ARGV[1] job id   ARGV[2] lease token of the undelivered claim
-- ARGV[3] notify channel
-- Returns {'OK'} | {'NOT_FOUND'} | {'STALE'} (the token is not the current
-- lease: the job moved on, nothing to undo) | {'STATE', state} (not active)
-- | {'CORRUPT', missing field} (nothing written; the lease expires instead)
-- | {'CANCEL_REQUESTED'} (Cancel asked the run to stop: nothing written; the
-- lease expires and the reaper makes the job dead "cancelled").
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): gives back a job
-- that was never delivered.
events_open(KEYS[1])
local job, refused = held_run(KEYS[1], ARGV[1], ARGV[2])
if not job then return refused end
if cancel_asked(job) then return {'CANCEL_REQUESTED'} end
local priority, available_at = tonumber(job[F.priority]), tonumber(job[F.available_at])
if not priority then return {'CORRUPT', 'priority'} end
if not available_at then return {'CORRUPT', 'available_at'} end
if not tonumber(job[F.attempts]) then return {'CORRUPT', 'attempts'} end

job[F.attempts] = tonumber(job[F.attempts]) - 1
job[F.state], job[F.lease_token], job[F.lease_expires_at] = 'pending', '', 0
job[F.run_deadline] = nil
job_write(KEYS[1], ARGV[1], job)
redis.call('ZREM', KEYS[2], ARGV[1])
local C = {ready = KEYS[3], by_type = KEYS[4], jobs = KEYS[1], key_active = KEYS[5],
           key_waiting = KEYS[6], key_limit = KEYS[7], channel = ARGV[3]}
ready_add(C, job, ready_score(priority, available_at), ARGV[1])
key_release(C, job)
redis.call('SPUBLISH', ARGV[3], 0)
event('released', ARGV[1], job, now_ms())
events_publish()
return {'OK'}
