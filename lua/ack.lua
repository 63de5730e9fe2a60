#!lua flags=allow-oom
-- ack.lua: completes active jobs of one queue, each for the holder of its
-- current lease, and stores their results. A completed job is kept for its
-- retention (its completed_retention field, else the broker's): the
-- completed index is scored by each entry's expiry, and the jobs whose
-- expiry has passed are deleted (record, payload, result) by every ack and
-- reaper pass, at most 100 per ack call (TRIM_PER_WRITE). With retention 0
-- the job is deleted at once and only a tombstone (id -> lease token in
-- {p}:{q}:acked, its expiry in {p}:{q}:acked_expiry) stays until the lease
-- would have ended plus a grace, so that a repeated Ack is still
-- recognised; expired tombstones are trimmed the same way. Each job is settled on its own: one job's
-- error does not stop the others. Repeating a successful ack with the same
-- token changes nothing and answers OK marked as a repeat.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:active
-- KEYS[2] {p}:{q}:completed
-- KEYS[3] {p}:{q}:jobs (job records)
-- KEYS[4] {p}:{q}:payloads
-- KEYS[5] {p}:{q}:results
-- KEYS[6] {p}:{q}:acked (tombstones: job id -> lease token)
-- KEYS[7] {p}:{q}:acked_expiry (tombstones: job id -> expiry, Redis ms)
-- KEYS[8] {p}:{q}:ready        KEYS[9] {p}:{q}:ready_by_type
-- KEYS[10] {p}:{q}:key_active  KEYS[11] {p}:{q}:key_waiting (concurrency keys:
--          key_release in _lib.lua)
-- KEYS[12] {p}:{q}:scheduled  KEYS[13] {p}:{q}:dead
-- KEYS[14] {p}:{q}:deps_waiting KEYS[15] {p}:{q}:dependents (a completed
--          job's dependents get its result and may become due:
--          deps_parent_ended in _lib_deps.lua)
-- KEYS[16] {p}:{q}:key_limit  (max_active_per_key: only under it does a
--          settle move a parked job back; key_release in _lib.lua)
-- KEYS[17] {p}:{q}:remote_dependents KEYS[18] {p}:{q}:deps_outbox (dependents in
--          other slots: deps_parent_ended in _lib_deps.lua)
-- ARGV[1] completed retention ms of a job record without completed_retention
-- ARGV[2] tombstone grace ms (kept this long past the lease's end)
-- ARGV[3] notify channel {p}:{q}:notify
-- ARGV[4 + 3k], ARGV[5 + 3k], ARGV[6 + 3k]: job id, lease token, result of
-- the k-th job (k = 0, 1, ...; at least one job)
-- Returns one reply per job, in order: {'OK'} | {'OK', 'repeat'} (already
-- completed with this token) | {'NOT_FOUND'} | {'STALE'} (token is not the
-- current lease) | {'STATE', state} (the job is not active) | {'TIMED_OUT'}
-- (the run passed its deadline: the reaper, or a Fail, fails it with
-- "timeout"). A run that Cancel asked to stop is completed: it finished.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): finishing work
-- always succeeds.
local default_retention, grace = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local C = {ready = KEYS[8], by_type = KEYS[9], jobs = KEYS[3], key_active = KEYS[10],
           key_waiting = KEYS[11], key_limit = KEYS[16], channel = ARGV[3], results = KEYS[5],
           scheduled = KEYS[12], dead = KEYS[13], deps_waiting = KEYS[14], dependents = KEYS[15],
           remote_dependents = KEYS[17], outbox = KEYS[18]}
events_open(KEYS[3])
local out = {}
local done = {}
local index = {}
-- Every record read with one HMGET and the completed ones written with one
-- HSET: `records` is what the call has seen and changed, so an id named
-- twice meets its first ack's outcome (a repeat), as if written between.
local ids = {}
for i = 4, #ARGV, 3 do ids[#ids + 1] = ARGV[i] end
local records = jobs_read(KEYS[3], ids)
local written = {}
for i = 4, #ARGV, 3 do
  local id, token = ARGV[i], ARGV[i + 1]
  local job = records[id] or nil
  if not job then
    local acked = idem_get(KEYS[6], KEYS[7], id, now)
    if not acked then
      out[#out + 1] = {'NOT_FOUND'}
    elseif acked == token then
      out[#out + 1] = {'OK', 'repeat'}
    else
      out[#out + 1] = {'STALE'}
    end
  elseif job[F.lease_token] ~= token then
    out[#out + 1] = {'STALE'}
  elseif job[F.state] == 'completed' then
    out[#out + 1] = {'OK', 'repeat'}
  elseif job[F.state] ~= 'active' then
    out[#out + 1] = {'STATE', tostring(job[F.state])}
  elseif run_timed_out(job, now) then
    out[#out + 1] = {'TIMED_OUT'}
  else
    local retention = tonumber(job[F.completed_retention]) or default_retention
    if retention <= 0 then
      local lease_left = math.max(0, (tonumber(job[F.lease_expires_at]) or 0) - now)
      redis.call('HDEL', KEYS[3], id)
      records[id] = false
      redis.call('HDEL', KEYS[4], id)
      redis.call('HDEL', KEYS[5], id)
      redis.call('HSET', KEYS[6], id, token)
      redis.call('ZADD', KEYS[7], int(now + lease_left + grace), id)
    else
      job[F.state], job[F.finished_at], job[F.lease_expires_at] = 'completed', now, 0
      -- payload_bytes serves claims only, and a completed job is never
      -- claimed again: without it the record keeps its size class.
      job[F.run_deadline], job[F.payload_bytes] = nil, nil
      add_pair(written, id, cmsgpack.pack(job))
      if ARGV[i + 2] ~= '' then redis.call('HSET', KEYS[5], id, ARGV[i + 2]) end
      index[#index + 1] = int(now + retention)
      index[#index + 1] = id
    end
    done[#done + 1] = id
    key_release(C, job)
    event('completed', id, job, now)
    deps_parent_ended(C, id, job, true, ARGV[i + 2], now)
    out[#out + 1] = {'OK'}
  end
end

call_pairs('HSET', KEYS[3], written)
if #done > 0 then
  redis.call('ZREM', KEYS[1], unpack(done))
  if #index > 0 then redis.call('ZADD', KEYS[2], unpack(index)) end
  trim_completed(KEYS[2], KEYS[3], KEYS[4], KEYS[5], now, TRIM_PER_WRITE)
  trim_expired(KEYS[6], KEYS[7], now, TRIM_PER_WRITE)
  key_wake(C)
end
events_publish()
return out
