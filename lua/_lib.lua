-- _lib.lua: helpers shared by every script in lua/. The broker loads the
-- scripts as one Redis function library: these helpers first, then each
-- script's body as a function (broker/store/script_runner.h), so a script
-- body may call these functions. It touches no key by itself. No shebang
-- here. The top level of a library runs without Lua's functions (ipairs,
-- string, math ...): it only defines constants and functions.

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
-- As text of 16 digits (zero-padded), which serves both as the ZADD score
-- and in the members of the index by type (type_member); pad_score gives a
-- score read back from Redis the same form.
local READY_EPOCH_MS = 1577836800000
local function ready_score(priority, available_at)
  return string.format('%016d', (1000 - priority) * 4398046511104 + (available_at - READY_EPOCH_MS))
end
local function pad_score(score)
  return string.format('%016d', tonumber(score))
end

-- Delay before the next attempt after `attempts` runs:
-- min(base * 2^(attempts-1), cap) plus up to 10% random jitter.
-- REQUIRES: math.randomseed called with a per-call seed from the broker.
local function backoff_ms(base, cap, attempts)
  local d = base * 2 ^ (attempts - 1)
  if d > cap then d = cap end
  return math.floor(d + d * 0.1 * math.random())
end

-- A job's record: a field of the queue's `jobs` hash (id -> record), packed
-- with cmsgpack as a table indexed by the field numbers below, so that no
-- field name is stored per job (docs/redis-layout.md, "Job records"). The
-- numbers are the stored format: append new fields, never renumber. The
-- payload and the result live in the `payloads` and `results` hashes (id ->
-- bytes), so that changing a field does not copy them through Lua. Scripts
-- work on the unpacked table itself: job[F.state] is field 1. Numeric fields
-- hold Lua numbers (msgpack integers), the others strings.
local JOB_FIELDS = {'state', 'type', 'priority', 'attempts', 'max_attempts', 'available_at',
                    'lease_token', 'lease_expires_at', 'worker_id', 'error', 'idempotency_key',
                    'created_at', 'finished_at', 'backoff_base', 'backoff_max',
                    'completed_retention', 'failed_token', 'fail_outcome', 'fail_next_at',
                    'timeout', 'run_deadline', 'cancel_requested', 'progress_percent',
                    'progress_data', 'headers', 'concurrency_key', 'errors', 'depends_on',
                    'deps_left', 'dep_policy', 'dep_results', 'has_dependents',
                    'payload_bytes', 'deps_remote'}
-- Field numbers by name: filled by begin_call (a library's top level runs
-- without Lua's functions, ipairs among them).
local F = {}

-- The ready set's index by job type (`ready_by_type`, a zset whose scores
-- are all 0, read by ZRANGEBYLEX): one member per ready job, the job's type
-- (its byte length in 3 digits, then the type), its ready score in 16 digits
-- and its id, so that the members of one type sort like the ready set does
-- (by score, then id) and a Claim that filters by type finds its best jobs
-- at the front of its types' ranges, never behind other types' jobs. The
-- length prefix keeps every type's range apart from the others' whatever
-- bytes a type holds. Every script that adds to or removes from a ready set
-- does it through ready_add / ready_remove (or writes the same members).
local function type_prefix(job_type)
  return string.format('%03d', #job_type) .. job_type
end
-- REQUIRES: `score` is 16 digits (ready_score, pad_score).
local function type_member(job_type, score, id)
  return type_prefix(job_type) .. score .. id
end
-- The type of a record (as job_read gives it), '' when it has none.
local function job_type_of(job)
  local t = job and job[F.type]
  if type(t) ~= 'string' then return '' end
  return t
end
-- The type, ready score and id a member of ready_by_type holds; nil for a
-- member of another shape (none is written).
local function type_member_parts(member)
  local len = tonumber(string.sub(member, 1, 3))
  if not len or #member < 3 + len + 16 then return nil end
  local score = tonumber(string.sub(member, 4 + len, 19 + len))
  if not score then return nil end
  return string.sub(member, 4, 3 + len), score, string.sub(member, 20 + len)
end

-- add_pair appends a field/value or score/member pair to `list`; call_pairs
-- runs `command` (HSET, ZADD) on `key` with `list`'s field/value or
-- score/member pairs as arguments, 1000 pairs per call at most (Lua's
-- unpack stops at 8000 values): one call instead of one per pair.
local function add_pair(list, a, b)
  list[#list + 1] = a
  list[#list + 1] = b
end
local function call_pairs(command, key, list)
  for i = 1, #list, 2000 do
    redis.call(command, key, unpack(list, i, math.min(i + 1999, #list)))
  end
end

-- Job `id` (record `job`) becomes ready with `score` (ready_score): in the
-- ready set `R.ready` and its type index `R.by_type`.
local function ready_add(R, job, score, id)
  redis.call('ZADD', R.ready, score, id)
  redis.call('ZADD', R.by_type, 0, type_member(job_type_of(job), score, id))
end

-- Concurrency keys (docs/semantics.md, "Concurrency per key"). While a job
-- enqueued with a concurrency key (field concurrency_key) is active, it
-- counts in the queue's `key_active` hash (key -> active jobs of the key),
-- whether or not the queue has a per-key limit, so that a limit set later
-- finds the counts right. With a limit (the `key_limit` key), a claim that
-- meets a ready job whose key has that many active jobs parks it: the job
-- leaves the ready set and its index for `key_waiting`, a zset of scores 0
-- read by ZRANGEBYLEX whose members have type_member's shape with the key in
-- place of the type (key_member), so the jobs of other keys behind it are
-- claimed; it stays pending. A run of a keyed job that leaves the active set
-- gives its key's slot back and, under a per-key limit, moves the key's best
-- parked job back to the ready set (key_release). `C` names the keys: ready,
-- by_type, jobs, key_active, key_waiting, key_limit, and `C.channel` the
-- queue's notify channel.
local function job_key_of(job)
  local key = job and job[F.concurrency_key]
  if type(key) ~= 'string' or key == '' then return nil end
  return key
end
-- REQUIRES: `score` is 16 digits (ready_score, pad_score).
local function key_member(key, score, id)
  return type_member(key, score, id)
end

-- Job `id` (record `job`, nil when it has none) leaves the ready set `R.ready`
-- and its type index `R.by_type`, if it was in the set, or `R.key_waiting`
-- if its key's limit had parked it. Returns 1 when it was in either.
local function ready_remove(R, job, id)
  local score = redis.call('ZSCORE', R.ready, id)
  if not score then
    local key = job_key_of(job)
    local priority, available_at = tonumber(job and job[F.priority]), tonumber(job and job[F.available_at])
    if not (key and priority and available_at) then return 0 end
    return redis.call('ZREM', R.key_waiting, key_member(key, ready_score(priority, available_at), id))
  end
  redis.call('ZREM', R.ready, id)
  redis.call('ZREM', R.by_type, type_member(job_type_of(job), pad_score(score), id))
  return 1
end

-- Queue events (docs/redis-layout.md, "Events"): what happens to a queue's
-- jobs, published on the sharded channel <p>:{<q>}:events (SPUBLISH) for the
-- brokers that follow jobs there (WaitJob, Subscribe), as one message per
-- script call: a cmsgpack array of events, each {kind, id, type, attempts,
-- at_ms}. Only while a broker listens: a broker that follows the queue keeps
-- the listen mark, field EVENTS_MARK of the queue's jobs hash, at a Redis
-- time in the future (listen_events.lua renews it), and a call whose first
-- event finds the mark absent or past builds and publishes nothing. The mark
-- rides on the call's first read of job records (job_read / jobs_read of
-- the events' jobs hash ask for it in the same HMGET), so a queue nobody
-- follows pays no command for its events; a call that reads no record
-- before its first event (enqueue) asks HGET once. A script calls
-- events_open(jobs key) before its first read of records, event(...) for
-- each change and events_publish() once at the end. Kinds:
-- enqueued, active, completed, retry, dead, cancelled, lease_expired,
-- released (back to pending, attempt undone), redriven (dead to pending),
-- deleted, progress (a 6th element: the percent reported, or nil),
-- cancel_requested, timed_out; the queue-wide 'deleted' of delete_queue.lua
-- has id ''.
local EVENTS_MARK = '#listened'  -- never a job id ([A-Za-z0-9._:-])
-- {jobs =, channel =, list =, mark = nil until read, then the mark or false,
-- listened = nil until the first event, then true | false}
local EVENTS = nil

-- Every script's function runs this first (broker/store/script_runner.h).
-- The library's locals live from one call to the next, so a call starts
-- from the same state as the last: no events gathered. The top-level
-- locals are constants but for EVENTS and F.
local function begin_call()
  EVENTS = nil
  if F.state == nil then
    for i, name in ipairs(JOB_FIELDS) do F[name] = i end
  end
end
local function events_open(jobs_key)
  if string.sub(jobs_key, -5) ~= ':jobs' then error('events_open: not a jobs key: ' .. jobs_key) end
  EVENTS = {jobs = jobs_key, channel = string.sub(jobs_key, 1, -5) .. 'events', list = {}}
end

-- A packed record as a table indexed by field number (absent fields nil);
-- a record that does not unpack to a table reads as {} (a record lacking
-- every field).
local function job_unpack(packed)
  local ok, rec = pcall(cmsgpack.unpack, packed)
  if not ok or type(rec) ~= 'table' then return {} end
  return rec
end

-- The values of fields `ids` of hash `key`, by id (false: none): one HMGET
-- per 2000 ids instead of one HGET each. The first read of the events' jobs
-- hash (events_open) asks for the listen mark too.
local function hash_read(key, ids)
  local out = {}
  local E = EVENTS
  for i = 1, #ids, 2000 do
    local last = math.min(i + 1999, #ids)
    local values, skip
    if E and E.mark == nil and E.jobs == key then
      values, skip = redis.call('HMGET', key, EVENTS_MARK, unpack(ids, i, last)), 1
      E.mark = values[1] or false
    else
      values, skip = redis.call('HMGET', key, unpack(ids, i, last)), 0
    end
    for k = i, last do out[ids[k]] = values[k - i + 1 + skip] or false end
  end
  return out
end
-- Job `id`'s record from hash `jobs_key`, unpacked (job_unpack); nil when
-- there is no record.
local function job_read(jobs_key, id)
  local packed = hash_read(jobs_key, {id})[id]
  if not packed then return nil end
  return job_unpack(packed)
end

-- The records of `ids` from hash `jobs_key`, as job_read reads them, by id
-- (false: no record), read by hash_read.
local function jobs_read(jobs_key, ids)
  local out = hash_read(jobs_key, ids)
  for id, packed in pairs(out) do
    if packed then out[id] = job_unpack(packed) end
  end
  return out
end

-- Writes `job` (a table as job_read returns) as job `id`'s record in hash
-- `jobs_key`.
local function job_write(jobs_key, id, job)
  redis.call('HSET', jobs_key, id, cmsgpack.pack(job))
end

-- A run of job `job` (its record) left the active set: when the job has a
-- concurrency key, the key's count drops and, when the queue has a per-key
-- limit (max_active_per_key), the key's best parked job (if any) moves back
-- to the ready set. Without that limit a parked job waits for a token of
-- the rate limit per key, which a settle does not give (key_rate_wakes
-- moves it). Sets C.woken when one moved: the caller then publishes a
-- wake-up ('0') on C.channel once (key_wake).
local function key_release(C, job)
  local key = job_key_of(job)
  if not key then return end
  if redis.call('HINCRBY', C.key_active, key, -1) <= 0 then redis.call('HDEL', C.key_active, key) end
  -- Whether the queue has a per-key limit and parked jobs, asked once per
  -- script call (one EXISTS of both keys).
  if C.may_release == nil then
    C.may_release = redis.call('EXISTS', C.key_limit, C.key_waiting) == 2
  end
  if not C.may_release then return end
  local prefix = type_prefix(key)
  local first = redis.call('ZRANGEBYLEX', C.key_waiting, '[' .. prefix, '(' .. prefix .. ':',
                           'LIMIT', 0, 1)
  if #first == 0 then return end
  redis.call('ZREM', C.key_waiting, first[1])
  local _, score, id = type_member_parts(first[1])
  local parked = id and job_read(C.jobs, id)
  if parked and parked[F.state] == 'pending' then
    ready_add(C, parked, pad_score(score), id)
    C.woken = true
  end
end
local function key_wake(C)
  if C.woken then redis.call('SPUBLISH', C.channel, '0') end
  C.woken = false
end

-- A job as the scripts answer it: {record, payload, result}, the record as
-- stored (cmsgpack, "Job records" in docs/redis-layout.md; the broker
-- decodes it: broker/store/job_record.h), '' for an absent payload or result.
local function job_reply(packed, payload, result)
  return {packed, payload or '', result or ''}
end

-- Job `id` (record `job` after the change; nil when it has none) had event
-- `kind` at `now`.
local function event(kind, id, job, now, percent)
  local E = EVENTS
  if not E then return end
  if E.listened == nil then
    if E.mark == nil then E.mark = redis.call('HGET', E.jobs, EVENTS_MARK) or false end
    E.listened = (tonumber(E.mark) or 0) > now
  end
  if not E.listened then return end
  local list = E.list
  list[#list + 1] = {kind, id, job_type_of(job), tonumber(job and job[F.attempts]) or 0, now, percent}
end

-- Run control (a job's timeout and Cancel of a running job). `job` is an
-- active record. run_timed_out: its run has a deadline (run_deadline, set
-- at claim from the job's timeout) and `now` is at or past it. cancel_asked:
-- Cancel asked the run to stop (cancel_requested holds when).
local function run_timed_out(job, now)
  local deadline = tonumber(job[F.run_deadline]) or 0
  return deadline > 0 and now >= deadline
end
local function cancel_asked(job)
  return (tonumber(job[F.cancel_requested]) or 0) > 0
end

-- Job `id`'s record in hash `jobs_key` for the holder of lease `token`:
-- (record, nil) while the job is active under that token, else (nil, the
-- script's refusal: {'NOT_FOUND'} | {'STALE'} | {'STATE', state}).
local function held_run(jobs_key, id, token)
  local job = job_read(jobs_key, id)
  if not job then return nil, {'NOT_FOUND'} end
  if job[F.lease_token] ~= token then return nil, {'STALE'} end
  if job[F.state] ~= 'active' then return nil, {'STATE', tostring(job[F.state])} end
  return job, nil
end

-- The refusal of a call that continues a run (a renewal, a progress
-- report) once Cancel asked it to stop ({'CANCEL_REQUESTED'}) or at its
-- deadline ({'TIMED_OUT'}); nil while it may go on.
local function run_stopped(job, now)
  if cancel_asked(job) then return {'CANCEL_REQUESTED'} end
  if run_timed_out(job, now) then return {'TIMED_OUT'} end
  return nil
end
local function events_publish()
  if EVENTS and #EVENTS.list > 0 then
    redis.call('SPUBLISH', EVENTS.channel, cmsgpack.pack(EVENTS.list))
  end
end

-- Bytes of a record's texts that may be large: its error, error history and
-- dependency results (what the claim and listing byte bounds count with the
-- payload).
local function record_text_bytes(job)
  local n = 0
  for _, f in ipairs({F.error, F.errors, F.dep_results}) do
    local v = job and job[f]
    if type(v) == 'string' then n = n + #v end
  end
  return n
end

-- A job's error history (field errors; Job.errors): a cmsgpack array of
-- {attempt, at ms, error}, oldest first, the last ERRORS_KEPT, each error cut
-- to at most ERROR_KEPT_BYTES at a UTF-8 character boundary (the error is UTF-8, a
-- proto string). error_note sets the job's error (whole) and appends it to
-- the history as run `attempt`'s at `now`. A history that does not unpack
-- starts again.
local ERRORS_KEPT = 10
local ERROR_KEPT_BYTES = 512
local function utf8_cut(s, n)
  if #s <= n then return s end
  local i = n + 1  -- the first byte left out; back to its character's start
  while i > 1 and string.byte(s, i) >= 0x80 and string.byte(s, i) < 0xC0 do i = i - 1 end
  return string.sub(s, 1, i - 1)
end
local function error_note(job, attempt, err, now)
  local list = {}
  local packed = job[F.errors]
  if type(packed) == 'string' then
    local ok, old = pcall(cmsgpack.unpack, packed)
    if ok and type(old) == 'table' then list = old end
  end
  list[#list + 1] = {attempt, now, utf8_cut(err, ERROR_KEPT_BYTES)}
  while #list > ERRORS_KEPT do table.remove(list, 1) end
  job[F.error], job[F.errors] = err, cmsgpack.pack(list)
end
-- Bytes of job `id`'s payload in hash `payloads_key` and of its record's
-- texts (record_text_bytes).
local function job_text_bytes(payloads_key, id, job)
  return redis.call('HSTRLEN', payloads_key, id) + record_text_bytes(job)
end

-- Idempotency key `key` of a queue: the id in hash `idem_key` when its
-- expiry (score in zset `expiry_key`) has not passed, else nil. An entry
-- without a score is treated as live.
local function idem_get(idem_key, expiry_key, key, now)
  local id = redis.call('HGET', idem_key, key)
  if not id then return nil end
  local expiry = tonumber(redis.call('ZSCORE', expiry_key, key))
  if expiry and expiry < now then return nil end
  return id
end

-- Removes the entries of hash `hash_key` whose expiry (score in zset
-- `expiry_key`) is before `now`, at most `limit` of them, from both. Returns
-- how many. The idempotency and tombstone indexes are trimmed this way.
local function trim_expired(hash_key, expiry_key, now, limit)
  local gone = redis.call('ZRANGEBYSCORE', expiry_key, '-inf', '(' .. int(now), 'LIMIT', 0, limit)
  if #gone > 0 then
    redis.call('HDEL', hash_key, unpack(gone))
    redis.call('ZREM', expiry_key, unpack(gone))
  end
  return #gone
end

-- Most entries one index trim removes in a script that creates or settles
-- jobs (enqueue.lua, ack.lua), and in a reaper pass (reap.lua).
local TRIM_PER_WRITE = 100
local TRIM_PER_REAP = 1000

-- Deletes the completed jobs whose retention has ended (an entry of zset
-- `completed_key` scored before `now`), at most `limit`: their records,
-- payloads and results, and their index entries. A record found in another
-- state (a bug, a hand edit) is only dropped from the index. Idempotency
-- keys stay until their dedup window ends. Returns how many entries went.
local function trim_completed(completed_key, jobs_key, payloads_key, results_key, now, limit)
  local gone = redis.call('ZRANGEBYSCORE', completed_key, '-inf', '(' .. int(now), 'LIMIT', 0, limit)
  for _, id in ipairs(gone) do
    local job = job_read(jobs_key, id)
    if job == nil or job[F.state] == 'completed' then
      redis.call('HDEL', jobs_key, id)
      redis.call('HDEL', payloads_key, id)
      redis.call('HDEL', results_key, id)
    end
  end
  if #gone < limit then
    -- The whole expired range was read: one range removal (also when it is
    -- empty; every call runs it once, which tests count).
    redis.call('ZREMRANGEBYSCORE', completed_key, '-inf', '(' .. int(now))
  else
    redis.call('ZREM', completed_key, unpack(gone))
  end
  return #gone
end

-- Deletes job `id`: its record, payload and result, and its idempotency key
-- when that still names the job (a later job may hold the key by now). `J`
-- holds the keys: jobs, payloads, results, idem, idem_expiry. Returns 1 when
-- the record existed, else 0. The caller removes the id from its sets.
local function delete_job(J, id)
  local job = job_read(J.jobs, id)
  local idem = job and job[F.idempotency_key]
  if type(idem) == 'string' and idem ~= '' and redis.call('HGET', J.idem, idem) == id then
    redis.call('HDEL', J.idem, idem)
    redis.call('ZREM', J.idem_expiry, idem)
  end
  redis.call('HDEL', J.payloads, id)
  redis.call('HDEL', J.results, id)
  return redis.call('HDEL', J.jobs, id)
end

-- The trace id of the job's W3C `traceparent` header
-- (https://www.w3.org/TR/trace-context/; the headers are a packed msgpack
-- map, field 'headers'): its 32 lowercase hex digits, or '' when the job has
-- no traceparent or one of another form (version 00: exactly
-- "00-<32 hex>-<16 hex>-<2 hex>"; a later version, not "ff", may append
-- "-..."; neither id all zeros). The broker logs it with the lines it writes
-- about the job.
local function trace_id(job)
  local packed = job[F.headers]
  if not packed then return '' end
  local ok, headers = pcall(cmsgpack.unpack, packed)
  if not ok or type(headers) ~= 'table' or type(headers['traceparent']) ~= 'string' then
    return ''
  end
  local value = headers['traceparent']
  local version, trace, parent, rest = string.match(
      value, '^([0-9a-f][0-9a-f])%-(' .. string.rep('[0-9a-f]', 32) .. ')%-(' ..
      string.rep('[0-9a-f]', 16) .. ')%-[0-9a-f][0-9a-f](.*)$')
  if not version or version == 'ff' then return '' end
  if (version == '00' and rest ~= '') or (rest ~= '' and string.sub(rest, 1, 1) ~= '-') then
    return ''
  end
  if not string.find(trace, '[^0]') or not string.find(parent, '[^0]') then return '' end
  return trace
end
