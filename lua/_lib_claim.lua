-- _lib_claim.lua: how a claim picks and leases due jobs (claim_ready and
-- its parts: candidates, promotion of scheduled jobs, the queue's limits),
-- for claim.lua, enqueue.lua (the hand-off) and set_queue.lua. The broker
-- puts it after _lib.lua, whose helpers it uses, before each script's body
-- (broker/store/script_runner.h). It touches no key by itself. No shebang.

-- The best ready jobs for a claim of up to `want` jobs: every type's when
-- `types` is empty (the ready set's first `want`, popped from it: the caller
-- puts back what it does not take), else only the listed types' (the first
-- `want` of each type's range of the index, merged; nothing is removed).
-- Each is {id = id, score = ready score, member = its index member
-- (filtered claims only)}, best first (by score, then id, as the ready set
-- orders).
local function ready_candidates(K, types, want)
  local out = {}
  if #types == 0 then
    local r = redis.call('ZPOPMIN', K.ready, want)
    for i = 1, #r, 2 do out[#out + 1] = {id = r[i], score = r[i + 1]} end
    return out
  end
  local seen = {}  -- a type named twice would yield its jobs twice
  for _, t in ipairs(types) do
    local prefix = type_prefix(t)
    local r = seen[t] and {} or redis.call('ZRANGEBYLEX', K.by_type, '[' .. prefix,
                                           '(' .. prefix .. ':', 'LIMIT', 0, want)
    seen[t] = true
    for _, member in ipairs(r) do
      local _, score, id = type_member_parts(member)
      if score then out[#out + 1] = {id = id, score = score, member = member} end
    end
  end
  if #types > 1 then
    table.sort(out, function(a, b)
      if a.score ~= b.score then return a.score < b.score end
      return a.id < b.id
    end)
  end
  return out
end

-- Whether a claim filtered to `types` (empty: every type) would find a due
-- job now, and (filtered claims only) the other types that have due jobs:
-- what claim.lua reports so that the broker wakes a stream that can take
-- them. Walks the index one type at a time (a ZRANGEBYLEX per type).
local function ready_left(K, types)
  if #types == 0 then return redis.call('ZCARD', K.ready) > 0, {} end
  if redis.call('ZCARD', K.ready) == 0 then return false, {} end
  local mine, more, others = {}, false, {}
  for _, t in ipairs(types) do mine[t] = true end
  local from = '-'
  while true do
    local r = redis.call('ZRANGEBYLEX', K.by_type, from, '+', 'LIMIT', 0, 1)
    if #r == 0 then break end
    local t = type_member_parts(r[1])
    if not t then break end
    if mine[t] then more = true else others[#others + 1] = t end
    from = '[' .. type_prefix(t) .. ':'
  end
  return more, others
end

-- Ms until the earliest scheduled job of queue `K` is due (0 when it is
-- due now), -1 when none is scheduled; under a rate limit per key
-- (K.key_rate set by claim_ready), also until the first key whose jobs
-- are parked for want of a token gets one.
local function next_due_in_ms(K, now)
  local first = redis.call('ZRANGE', K.scheduled, 0, 0, 'WITHSCORES')
  local at = first[2] and tonumber(first[2])
  if K.key_rate then
    local wake = redis.call('ZRANGE', K.key_rate_wake, 0, 0, 'WITHSCORES')
    if wake[2] and (not at or tonumber(wake[2]) < at) then at = tonumber(wake[2]) end
  end
  if not at then return -1 end
  return math.max(0, at - now)
end

-- Moves the scheduled jobs of queue `K` (claim_ready's keys) that are due
-- at `now` into the ready set and its index, at most 1000 per call. A job
-- whose record lacks priority or available_at is made dead with an error
-- naming them; its id, and that of a job without a record, are appended to
-- `skipped`.
local function promote_due(K, now, skipped)
  local due = redis.call('ZRANGEBYSCORE', K.scheduled, '-inf', int(now), 'LIMIT', 0, 1000)
  local ready, by_type = {}, {}
  local records = jobs_read(K.jobs, due)
  for _, id in ipairs(due) do
    local job = records[id] or nil
    local priority, available_at = tonumber(job and job[F.priority]), tonumber(job and job[F.available_at])
    if priority and available_at then
      local score = ready_score(priority, available_at)
      add_pair(ready, score, id)
      add_pair(by_type, 0, type_member(job_type_of(job), score, id))
    else
      skipped[#skipped + 1] = id
      if job then
        job[F.state], job[F.finished_at] = 'dead', now
        job[F.error] = 'job record lacks priority or available_at'
        job_write(K.jobs, id, job)
        redis.call('ZADD', K.dead, int(now), id)
        event('dead', id, job, now)
      end
    end
  end
  if #due > 0 then
    call_pairs('ZADD', K.ready, ready)
    call_pairs('ZADD', K.by_type, by_type)
    redis.call('ZREM', K.scheduled, unpack(due))
  end
end

-- A queue's rate limit (docs/semantics.md, "Rate limits"): a token bucket.
-- `limit` is the rate_limit key's value, '<count> <interval ms> <burst>'
-- (set_queue.lua); the bucket key holds '<units> <at ms>', where a token is
-- `interval` units and the bucket gains `count` units a ms up to `burst`
-- tokens (integers throughout: burst * interval stays below 2^53). A
-- missing bucket is full. Returns {count, interval, burst, units} at `now`,
-- or nil for a malformed limit (then nothing is limited).
local function rate_read(bucket_key, limit, now)
  local count, interval, burst = string.match(limit, '^(%d+) (%d+) (%d+)$')
  count, interval, burst = tonumber(count), tonumber(interval), tonumber(burst)
  if not count or count < 1 or interval < 1 or burst < 1 then return nil end
  local full = burst * interval
  local units = full
  local b = redis.call('GET', bucket_key)
  if b then
    local u, at = string.match(b, '^(%d+) (%d+)$')
    if u then units = math.min(full, tonumber(u) + math.max(0, now - tonumber(at)) * count) end
  end
  return {count = count, interval = interval, burst = burst, units = units}
end
-- Ms until the bucket holds a whole token again.
local function rate_wait(rate)
  return math.max(1, math.ceil((rate.interval - rate.units) / rate.count))
end
-- Takes `n` tokens (n >= 1) at `now`; the key expires once the bucket
-- would be full again (a missing bucket is full).
local function rate_take(bucket_key, rate, n, now)
  rate.units = rate.units - n * rate.interval
  local to_full = math.ceil((rate.burst * rate.interval - rate.units) / rate.count)
  redis.call('SET', bucket_key, int(rate.units) .. ' ' .. int(now), 'PX', int(to_full + 1000))
end

local MAX_ACTIVE_RECHECK_MS = 1000
-- The most jobs one claim parks for their concurrency key's limit.
local KEY_PARK_PER_CLAIM = 1000

-- The queue's limits (claim_ready's MGET: the rate_limit and max_active
-- values, nil when unset) applied to a claim of `want` jobs at `now`:
-- returns the jobs it may hand out, the ms until a limit may let one out
-- when that is none (else nil), the rate state (rate_read; nil without a
-- rate limit) and max_active (nil without one).
local function claim_limits(K, rate_text, max_text, want, now)
  local rate = rate_text and rate_read(K.rate_bucket, rate_text, now)
  local max_active = tonumber(max_text)
  local blocked_wait = nil
  if rate then
    want = math.min(want, math.floor(rate.units / rate.interval))
    if want == 0 then blocked_wait = rate_wait(rate) end
  end
  if max_active and want > 0 then
    want = math.min(want, math.max(0, max_active - redis.call('ZCARD', K.active)))
    if want == 0 then blocked_wait = MAX_ACTIVE_RECHECK_MS end
  end
  return want, blocked_wait, rate, max_active
end

-- After a claim that left due jobs: the ms until a limit lets them out
-- again (no token: the next one; every active slot taken: a settle wakes a
-- stream, else the recheck), or nil when no limit holds them back.
local function limits_wait(K, rate, max_active)
  if rate and rate.units < rate.interval then return rate_wait(rate) end
  if max_active and redis.call('ZCARD', K.active) >= max_active then
    return MAX_ACTIVE_RECHECK_MS
  end
  return nil
end

-- What a round of claim `b` needs to know of `candidates` (claim_ready's),
-- read with one command each instead of one per candidate: their records
-- (one HMGET: jobs_read), whether the index entries of a filtered claim's
-- candidates are still in the ready set (one ZMSCORE: `c.stale` is set on
-- those that are not), and, for the concurrency keys the claim has not met
-- yet, under a per-key limit their active counts (one HMGET, into
-- b.key_held) and under a rate limit per key their buckets (one ZMSCORE,
-- into b.key_tat). Returns the records by id (false: none).
local function candidate_records(K, candidates, b)
  local ids = {}
  for i, c in ipairs(candidates) do ids[i] = c.id end
  local jobs_of = jobs_read(K.jobs, ids)
  if #candidates > 0 and candidates[1].member then
    for i = 1, #ids, 2000 do
      local last = math.min(i + 1999, #ids)
      local scores = redis.call('ZMSCORE', K.ready, unpack(ids, i, last))
      for k = i, last do candidates[k].stale = not scores[k - i + 1] end
    end
  end
  if not (b.key_limit or b.kr) then return jobs_of end
  local unseen = {}
  for _, c in ipairs(candidates) do
    local key = job_key_of(jobs_of[c.id] or nil)
    if key and not b.key_seen[key] then
      b.key_seen[key] = true
      b.key_held[key] = 0
      unseen[#unseen + 1] = key
    end
  end
  if #unseen > 0 and b.key_limit then
    local counts = redis.call('HMGET', K.key_active, unpack(unseen))
    for i, key in ipairs(unseen) do b.key_held[key] = tonumber(counts[i]) or 0 end
  end
  if #unseen > 0 and b.kr then
    local tats = redis.call('ZMSCORE', K.key_tat, unpack(unseen))
    for i, key in ipairs(unseen) do b.key_tat[key] = tonumber(tats[i]) end
  end
  return jobs_of
end

-- Makes `job` (record of a pending job) the run leased under `token` to
-- `worker_id` at `now` until `expires`, or until its run deadline when it
-- has a timeout and that comes first (extend_lease.lua caps renewals the
-- same way). Returns when the lease expires.
local function lease_job(job, token, worker_id, now, expires)
  job[F.attempts] = (tonumber(job[F.attempts]) or 0) + 1
  job[F.state], job[F.lease_token] = 'active', token
  job[F.worker_id], job[F.cancel_requested] = worker_id, nil
  local timeout = tonumber(job[F.timeout]) or 0
  if timeout > 0 then
    job[F.run_deadline] = now + timeout
    expires = math.min(expires, now + timeout)
  else
    job[F.run_deadline] = nil
  end
  job[F.lease_expires_at] = expires
  return expires
end

-- One claim_ready call at `now`: what it asked for (want, max_bytes, the
-- lease's claim_id, worker_id and expiry `expires`, the per-key limit
-- key_limit, the rate limit per key kr: key_rate_parse's), what it took so
-- far (bytes, key_held: active runs per concurrency key met, this claim's
-- included; key_tat: the buckets of the keys met, this claim's tokens
-- taken, and tat_changed: the keys it took from; rate_parked: the keys it
-- parked jobs of for want of a token; parked_total; full once it stopped), and what it
-- changes, gathered to be written with one variadic command each: the leased
-- jobs' ids, records and active entries; what leaves the ready set (gone:
-- filtered claims remove their picks, the others popped them) and its index
-- (gone_members); popped candidates that go back (back); jobs parked for
-- their key (parked, key_waiting members); the runs taken per
-- concurrency key (key_claimed); and the replies whose payloads are still
-- to be read (unread_ids, unread_replies: read_payloads reads them).
local function claim_batch(now, want, max_bytes, claim_id, worker_id, expires, key_limit, kr)
  return {now = now, want = want, max_bytes = max_bytes, claim_id = claim_id,
          worker_id = worker_id, expires = expires, key_limit = key_limit, kr = kr, bytes = 0,
          key_seen = {}, key_held = {}, key_tat = {}, tat_changed = {}, rate_parked = {},
          parked_total = 0, full = false,
          ids = {}, records = {}, active = {}, gone = {}, gone_members = {}, back = {},
          parked = {}, key_claimed = {}, unread_ids = {}, unread_replies = {}}
end

-- Writes a round's changes to the ready set, its index and key_waiting.
local function flush_ready(K, b, types)
  if #b.back > 0 then redis.call('ZADD', K.ready, unpack(b.back)) end
  if #types > 0 and #b.gone > 0 then redis.call('ZREM', K.ready, unpack(b.gone)) end
  if #b.gone_members > 0 then redis.call('ZREM', K.by_type, unpack(b.gone_members)) end
  call_pairs('ZADD', K.key_waiting, b.parked)
  b.gone, b.gone_members, b.back, b.parked = {}, {}, {}, {}
end

-- Puts the payloads lease_candidate left unread into claim `b`'s replies,
-- read with one HMGET.
local function read_payloads(K, b)
  local payloads = hash_read(K.payloads, b.unread_ids)
  for n, id in ipairs(b.unread_ids) do b.unread_replies[n][2] = payloads[id] or '' end
end

-- Writes the leased jobs: records, active entries, the claim's record, the
-- rate limit's tokens and the keys' active counts.
local function write_leases(K, b, lease_ms, rate, now)
  if #b.ids == 0 then return end
  call_pairs('HSET', K.jobs, b.records)
  call_pairs('ZADD', K.active, b.active)
  redis.call('SET', K.claim, table.concat(b.ids, ' '), 'PX', int(lease_ms))
  if rate then rate_take(K.rate_bucket, rate, #b.ids, now) end
  for key, n in pairs(b.key_claimed) do redis.call('HINCRBY', K.key_active, key, n) end
end

-- What claim `b` does with ready candidate `c` (`job` its record, nil when
-- it has none; `key` its concurrency key): 'stale' (an index entry whose
-- job is no longer ready: none is left behind by these scripts; dropped),
-- 'missing' (no record: dropped and reported skipped), 'park' (its key is
-- at the limit: parked until a run of the key ends), 'park_rate' (its key
-- has no token: parked until its next one), 'stop' (its key is held back
-- and the call parked KEY_PARK_PER_CLAIM: the claim ends here) or 'lease'.
local function candidate_action(K, b, c, job, key)
  if c.stale then return 'stale' end
  if job == nil then return 'missing' end
  local held = nil
  if key and b.key_limit and b.key_held[key] >= b.key_limit then
    held = 'park'
  elseif key and b.kr and not key_rate_open(b.kr, b.key_tat[key], b.now) then
    held = 'park_rate'
  end
  if not held then return 'lease' end
  if b.parked_total < KEY_PARK_PER_CLAIM then return held end
  return 'stop'
end

-- Leases candidate `c` (record `job`, concurrency key `key`) to claim `b`
-- and adds it to the reply `out`, unless its payload and error text would
-- take the claim past its byte bound (and it is not the first job): false
-- then, and nothing changed. The bound takes the payload's size from the
-- record (payload_bytes, written by enqueue.lua), and the payload is read
-- later, with the call's others (read_payloads). A record without
-- payload_bytes (enqueued by a broker before it) has its payload read here,
-- once, for the bound and the reply.
local function lease_candidate(K, b, out, c, job, key, now)
  local id = c.id
  local payload, size = nil, tonumber(job[F.payload_bytes])
  if not size then
    payload = redis.call('HGET', K.payloads, id) or ''
    size = #payload
  end
  size = size + record_text_bytes(job)
  if #b.ids > 0 and b.bytes + size > b.max_bytes then return false end
  b.gone[#b.gone + 1] = id
  b.gone_members[#b.gone_members + 1] = c.member or type_member(job_type_of(job), pad_score(c.score), id)
  b.bytes = b.bytes + size
  b.ids[#b.ids + 1] = id
  if key then
    b.key_held[key] = (b.key_held[key] or 0) + 1
    b.key_claimed[key] = (b.key_claimed[key] or 0) + 1
    if b.kr then
      b.key_tat[key] = math.max(b.key_tat[key] or now, now) + b.kr.E
      b.tat_changed[key] = true
    end
  end
  local job_expires = lease_job(job, b.claim_id .. '.' .. #b.ids, b.worker_id, now, b.expires)
  local packed = cmsgpack.pack(job)
  add_pair(b.records, id, packed)
  add_pair(b.active, int(job_expires), id)
  out[#out + 1] = id
  local reply = job_reply(packed, payload)
  out[#out + 1] = reply
  if not payload then
    b.unread_ids[#b.unread_ids + 1] = id
    b.unread_replies[#b.unread_replies + 1] = reply
  end
  event('active', id, job, now)
  return true
end

-- One round of claim `b` over `candidates` (ready_candidates'; `jobs_of`
-- their records, as candidate_records read them): each is dropped,
-- parked or leased (candidate_action) until the claim has `want` jobs or
-- stops; a stop puts the candidate and the rest back where they were
-- (popped ones; a filtered claim popped nothing). Skipped ids go to
-- out[3]. Returns how many jobs the round parked.
local function claim_round(K, b, out, candidates, jobs_of, types, now)
  local parked = 0
  for n, c in ipairs(candidates) do
    if #b.ids >= b.want then break end  -- a filtered claim's merged candidates
    local job = jobs_of[c.id] or nil
    local key = job_key_of(job)
    local action = candidate_action(K, b, c, job, key)
    if action == 'stale' then
      b.gone_members[#b.gone_members + 1] = c.member
    elseif action == 'missing' then
      out[3][#out[3] + 1] = c.id
      b.gone[#b.gone + 1] = c.id
      if c.member then b.gone_members[#b.gone_members + 1] = c.member end
    elseif action == 'park' or action == 'park_rate' then
      if action == 'park_rate' then b.rate_parked[key] = true end
      local score = pad_score(c.score)
      b.gone[#b.gone + 1] = c.id
      b.gone_members[#b.gone_members + 1] = c.member or type_member(job_type_of(job), score, c.id)
      add_pair(b.parked, 0, key_member(key, score, c.id))
      parked, b.parked_total = parked + 1, b.parked_total + 1
    elseif action == 'stop' or not lease_candidate(K, b, out, c, job, key, now) then
      if #types == 0 then
        for j = n, #candidates do add_pair(b.back, candidates[j].score, candidates[j].id) end
      end
      b.full = true
      break
    end
  end
  return parked
end

-- Leases up to `want` due jobs of one queue to one claimer (claim.lua's
-- contract, which see), of the types in `types` only unless it is empty;
-- `K` names the queue's keys: ready, by_type, scheduled, active, paused,
-- dead, claim (the record of this call), jobs, payloads, rate_limit,
-- rate_bucket, max_active, key_limit, key_active, key_waiting,
-- key_rate_limit, key_tat, key_rate_wake. `now` is
-- now_ms(). A claimed job with a concurrency key counts in key_active; with
-- a per-key limit (key_limit), a job whose key has that many active jobs is
-- parked (key_release in _lib.lua) and the claim reads on past it. With a
-- rate limit per key (key_rate_limit), so is a job whose key's bucket has no
-- token, until the key's next token (key_rate_wakes; next_due_in_ms tells
-- the broker when). A
-- rate-limited queue hands out at most the bucket's whole tokens; when it
-- has none left and due jobs wait, the reply says no more is due (more 0,
-- no other types) and next_due_in_ms is the ms until the next token, so
-- that the broker's queue timer, not a stream, wakes up then. A queue with
-- max_active hands out at most max_active minus its active jobs; when that
-- is none and due jobs wait, the reply says no more is due and
-- next_due_in_ms is MAX_ACTIVE_RECHECK_MS: the brokers wake a stream when
-- one of its jobs is settled, and that timer is the safety net for the
-- settles they do not see (a lease the reaper ended, a broker that had not
-- read the limit yet). Returns claim.lua's reply. Called by claim.lua, and
-- by enqueue.lua for the claim that rides along an enqueue (the broker's
-- hand-off to a waiting stream).
local function claim_ready(K, now, want, lease_ms, claim_id, worker_id, max_bytes, types)
  -- One read for the paused flag and the limits, so that a queue without
  -- a limit pays no command for their existence.
  local control = redis.call('MGET', K.paused, K.rate_limit, K.max_active, K.key_limit,
                              K.key_rate_limit)
  if control[1] then return {-1, 0, {}, {}} end
  local skipped = {}

  promote_due(K, now, skipped)
  local kr = control[5] and key_rate_parse(control[5])
  if kr then
    K.key_rate = kr
    redis.call('ZREMRANGEBYSCORE', K.key_tat, '-inf', int(now))  -- full buckets
    key_rate_wakes(K, kr, now)
  end
  local rate, max_active, blocked_wait
  want, blocked_wait, rate, max_active = claim_limits(K, control[2], control[3], want, now)
  if blocked_wait then
    if redis.call('ZCARD', K.ready) > 0 then return {blocked_wait, 0, skipped, {}} end
    return {next_due_in_ms(K, now), 0, skipped, {}}
  end

  local out = {0, 0, skipped, {}}
  local b = claim_batch(now, want, max_bytes, claim_id, worker_id, now + lease_ms,
                        tonumber(control[4]), kr)
  -- Rounds: a round that parked jobs (their keys at their limit) reads the
  -- next candidates, so parked jobs never take the place of claimable ones;
  -- at most KEY_PARK_PER_CLAIM are parked per call.
  local round_want = want
  while round_want > 0 and not b.full do
    local candidates = ready_candidates(K, types, round_want)
    local jobs_of = candidate_records(K, candidates, b)
    local parked = claim_round(K, b, out, candidates, jobs_of, types, now)
    flush_ready(K, b, types)
    -- Another round only when this one parked jobs and read a full range.
    if parked == 0 or #candidates < round_want then break end
    round_want = want - #b.ids
  end
  write_leases(K, b, lease_ms, rate, now)
  write_key_rates(K, b)
  read_payloads(K, b)

  local more, others = ready_left(K, types)
  local wait = more and limits_wait(K, rate, max_active)
  if wait then
    out[1] = wait  -- due jobs left, held back by a limit: more stays 0
    return out
  end
  out[4] = others
  if more then out[2] = 1 else out[1] = next_due_in_ms(K, now) end
  return out
end
