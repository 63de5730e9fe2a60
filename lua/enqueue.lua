#!lua
-- enqueue.lua: stores new pending jobs of one queue, in order. A job whose
-- idempotency key is already held stores nothing and answers the holder's
-- id (so does a later job of the same call repeating an earlier one's key).
-- Each job's record, payload, set entry and key are written together.
-- Trims up to 100 expired idempotency keys (TRIM_PER_WRITE) first.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1]  {p}:{q}:seq         job id counter
-- KEYS[2]  {p}:{q}:ready       due jobs
-- KEYS[3]  {p}:{q}:scheduled   jobs due later
-- KEYS[4]  {p}:{q}:registered  exists once the queue is in the registry
-- KEYS[5]  {p}:{q}:jobs        job records
-- KEYS[6]  {p}:{q}:payloads    job payloads
-- KEYS[7]  {p}:{q}:idem        idempotency key -> job id
-- KEYS[8]  {p}:{q}:idem_expiry idempotency key -> expiry (Redis ms)
-- KEYS[9]  {p}:{q}:active      (the hand-off claim: KEYS[9..12] as claim.lua's
-- KEYS[10] {p}:{q}:paused       KEYS[3..6]; unused when ARGV[4] is 0)
-- KEYS[11] {p}:{q}:dead
-- KEYS[12] {p}:{q}:claim:<ARGV[6]>
-- KEYS[13] {p}:{q}:ready_by_type (the ready set's index by type)
-- KEYS[14] {p}:{q}:rate_limit  (the hand-off claim: claim.lua's KEYS[10..11])
-- KEYS[15] {p}:{q}:rate_bucket
-- KEYS[16] {p}:{q}:max_active
-- KEYS[17] {p}:{q}:key_limit    (the hand-off claim: claim.lua's KEYS[13..15])
-- KEYS[18] {p}:{q}:key_active
-- KEYS[19] {p}:{q}:key_waiting
-- KEYS[20] {p}:{q}:acked       KEYS[21] {p}:{q}:acked_expiry (dependencies:
-- KEYS[22] {p}:{q}:deps_waiting KEYS[23] {p}:{q}:dependents  _lib_deps.lua)
-- KEYS[24] {p}:{q}:results
-- KEYS[25] {p}:{q}:key_rate_limit (the hand-off claim: claim.lua's
-- KEYS[26] {p}:{q}:key_tat         KEYS[16..18])
-- KEYS[27] {p}:{q}:key_rate_wake
-- KEYS[28] {p}:{q}:deps_unlinked (jobs with parents elsewhere, until the
--          broker confirms their links: _lib_deps.lua)
-- ARGV[1]  dedup window ms
-- ARGV[2]  notify channel {p}:{q}:notify
-- ARGV[3]  id suffix: '' for a queue's partition 0, '.p<i>' for partition i
--          (docs/redis-layout.md, "Partitioned queues")
-- ARGV[4]  hand-off: max jobs to claim for a waiting stream right after the
--          jobs are stored (0 = no claim); ARGV[5..8] are then claim.lua's
--          ARGV[2..5]: lease ms, claim id, worker id, max bytes
-- ARGV[9]  n: the number of job types the hand-off claim takes (0 = every
--          type), then ARGV[10 .. 9 + n] those types
-- ARGV[J + 15k .. J + 14 + 15k], J = 10 + n: the k-th job (k = 0, 1, ...; at
--   least one):
--   type, payload, priority, delay_ms (>= 0),
--   run_at_ms (0 = not set; a past time means now),
--   idempotency key ('' = none), max_attempts, backoff base ms, backoff max ms,
--   completed retention ms (0 = delete on ack; read by ack.lua),
--   timeout ms (0 = none; claim_ready sets each run's deadline from it),
--   headers (a msgpack map of strings, stored as is; '' = none),
--   concurrency key ('' = none; claim_ready counts and limits by it),
--   depends_on (parent ids of this queue partition, space-separated; '' =
--   none; '#<n>' names the n-th job of this call, n = k' + 1 for an earlier
--   k', by the id it got, or the job it duplicates; '<queue>/<id>' a
--   parent elsewhere, which the broker links after the call; '!<ref>' such
--   a parent that the broker found names no job: the job is refused),
--   run after a failed dependency ('1' or '0')
-- Returns {id1, duplicate1, id2, duplicate2, ..., registered, claimed}:
-- duplicate is 1 when the idempotency key was known (nothing written), else
-- 0, or, with id '', the id of a parent that names no job, or '#<n>' for a
-- job of this call that was refused (the job is refused too: nothing
-- written, no id used); registered is 0 when the queue's registered marker is missing (a new
-- queue, or one deleted since): the broker then registers it; claimed is
-- claim.lua's reply for the hand-off claim (absent when ARGV[4] is 0).
-- Publishes 0 when a new job is due now, unless the hand-off claim left no
-- due job in the queue (nobody else has anything to claim: neither of its
-- types nor of others), and the delay of
-- the earliest new job due later, if any.
--
-- Over Redis' maxmemory (noeviction): refused before it runs (nothing
-- written): it creates work; the broker answers RESOURCE_EXHAUSTED.
local now = now_ms()
events_open(KEYS[5])
trim_expired(KEYS[7], KEYS[8], now, TRIM_PER_WRITE)
local window = tonumber(ARGV[1])
local out = {}
local due_now = false
local next_delay = nil
-- Field/value and score/member lists, each written with one variadic
-- command after the loop (a job's idempotency key is written at once, so
-- that a later job of the call with the same key finds it).
local records, payloads, ready, by_type, scheduled = {}, {}, {}, {}, {}
local hand_off_types = {}
local first_job = 10 + tonumber(ARGV[9])
for i = 10, first_job - 1 do hand_off_types[#hand_off_types + 1] = ARGV[i] end
-- Ids: the call reserves one per job of the call with one INCRBY, and gives
-- back what duplicates left unused at the end (nothing runs in between), so
-- ids follow each other as with one INCR per stored job.
local reserved = (#ARGV - first_job + 1) / 15
local last_id = redis.call('INCRBY', KEYS[1], reserved) - reserved
local stored = 0
local D = {jobs = KEYS[5], results = KEYS[24], acked = KEYS[20], acked_expiry = KEYS[21],
           dependents = KEYS[23], unlinked = KEYS[28]}
local waiting, dead = {}, {}
-- The jobs this call stored, by id: {job = record, at = its packed value's
-- index in `records`, dirty = a later child changed the record}; and the
-- id each job of the call stands for, by position (nil: refused).
D.fresh = {}
local by_position = {}
for i = first_job, #ARGV, 15 do
  local idem = ARGV[i + 5]
  local existing = idem ~= '' and idem_get(KEYS[7], KEYS[8], idem, now)
  -- given: depends_on with batch positions resolved; parents: those of
  -- this slot; remote: refs to parents elsewhere.
  local given, parents, remote, plan, missing = nil, nil, nil, nil, nil
  if not existing and ARGV[i + 13] ~= '' then
    given, parents, remote = {}, {}, {}
    for pid in string.gmatch(ARGV[i + 13], '%S+') do
      local first = string.byte(pid, 1)
      if first == 35 then  -- '#<n>': a job of this call
        local id = by_position[tonumber(string.sub(pid, 2))]
        if not id then
          missing = pid
          break
        end
        pid = id
      elseif first == 33 then  -- '!<ref>': a parent elsewhere not found
        missing = string.sub(pid, 2)
        break
      end
      given[#given + 1] = pid
      if is_remote_ref(pid) then remote[#remote + 1] = pid else parents[#parents + 1] = pid end
    end
    if not missing then plan, missing = deps_plan(D, parents, now) end
  end
  if existing then
    out[#out + 1] = existing
    out[#out + 1] = 1
  elseif missing then
    out[#out + 1] = ''
    out[#out + 1] = missing
  else
    last_id, stored = last_id + 1, stored + 1
    local id = string.format('%012d', last_id) .. ARGV[3]
    local priority = tonumber(ARGV[i + 2])
    local available_at = now + tonumber(ARGV[i + 3])
    local run_at = tonumber(ARGV[i + 4])
    if run_at > available_at then available_at = run_at end

    local job = {}
    job[F.state], job[F.type], job[F.priority], job[F.attempts] = 'pending', ARGV[i], priority, 0
    job[F.max_attempts], job[F.available_at] = tonumber(ARGV[i + 6]), available_at
    job[F.idempotency_key], job[F.created_at] = idem, now
    job[F.backoff_base], job[F.backoff_max] = tonumber(ARGV[i + 7]), tonumber(ARGV[i + 8])
    job[F.completed_retention] = tonumber(ARGV[i + 9])
    local timeout = tonumber(ARGV[i + 10])
    if timeout > 0 then job[F.timeout] = timeout end
    if ARGV[i + 11] ~= '' then job[F.headers] = ARGV[i + 11] end
    if ARGV[i + 12] ~= '' then job[F.concurrency_key] = ARGV[i + 12] end
    job[F.payload_bytes] = #ARGV[i + 1]
    local placed = plan and deps_register(D, job, id, given, plan, remote, ARGV[i + 14] == '1',
                                          now)
    add_pair(records, id, cmsgpack.pack(job))
    D.fresh[id] = {job = job, at = #records}
    event('enqueued', id, job, now)
    if ARGV[i + 1] ~= '' then add_pair(payloads, id, ARGV[i + 1]) end
    if placed == 'wait' then
      add_pair(waiting, int(now), id)
    elseif placed == 'failed' then
      add_pair(dead, int(now), id)
      event('dead', id, job, now)
    elseif available_at <= now then
      local score = ready_score(priority, available_at)
      add_pair(ready, score, id)
      add_pair(by_type, 0, type_member(ARGV[i], score, id))
      due_now = true
    else
      add_pair(scheduled, int(available_at), id)
      local delay = available_at - now
      if not next_delay or delay < next_delay then next_delay = delay end
    end
    if idem ~= '' then
      redis.call('HSET', KEYS[7], idem, id)
      redis.call('ZADD', KEYS[8], int(now + window), idem)
    end
    out[#out + 1] = id
    out[#out + 1] = 0
  end
  by_position[#by_position + 1] = out[#out - 1] ~= '' and out[#out - 1] or false
end
for _, f in pairs(D.fresh) do
  if f.dirty then records[f.at] = cmsgpack.pack(f.job) end
end
if stored < reserved then redis.call('SET', KEYS[1], int(last_id)) end
call_pairs('HSET', KEYS[5], records)
call_pairs('HSET', KEYS[6], payloads)
call_pairs('ZADD', KEYS[2], ready)
call_pairs('ZADD', KEYS[13], by_type)
call_pairs('ZADD', KEYS[3], scheduled)
call_pairs('ZADD', KEYS[22], waiting)
call_pairs('ZADD', KEYS[11], dead)
local claimed = nil
if tonumber(ARGV[4]) > 0 then
  claimed = claim_ready({ready = KEYS[2], scheduled = KEYS[3], active = KEYS[9],
                         paused = KEYS[10], dead = KEYS[11], claim = KEYS[12], jobs = KEYS[5],
                         payloads = KEYS[6], by_type = KEYS[13], rate_limit = KEYS[14],
                         rate_bucket = KEYS[15], max_active = KEYS[16],
                         key_limit = KEYS[17], key_active = KEYS[18], key_waiting = KEYS[19],
                         key_rate_limit = KEYS[25], key_tat = KEYS[26], key_rate_wake = KEYS[27]},
                        now, tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7],
                        tonumber(ARGV[8]), hand_off_types)
  if claimed[2] == 0 and #claimed[4] == 0 then due_now = false end
end
if due_now then redis.call('SPUBLISH', ARGV[2], '0') end
if next_delay then redis.call('SPUBLISH', ARGV[2], int(next_delay)) end
out[#out + 1] = redis.call('EXISTS', KEYS[4])
out[#out + 1] = claimed
events_publish()
return out
