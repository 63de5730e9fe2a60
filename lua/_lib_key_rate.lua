-- _lib_key_rate.lua: rate limits per concurrency key (key_rate_limit):
-- each key's bucket and how a claim wakes the jobs it parked for want of a
-- token, for _lib_claim.lua. The broker puts it after _lib.lua, whose
-- helpers it uses, and before _lib_claim.lua (broker/store/script_runner.h).
-- It touches no key by itself. No shebang.

-- Rate limits per concurrency key (docs/semantics.md, "Rate limits per
-- key"): each key has a bucket of the queue's key_rate_limit ('<count>
-- <interval ms> <burst>', as rate_read's), kept as a theoretical arrival time
-- (GCRA): `tat` in the key_tat zset, in ms, fractional. A key may take a
-- token at `now` while tat - now <= (burst - 1) * E, E = interval / count
-- being the ms per token; taking one moves tat to max(tat, now) + E. A key
-- whose tat has passed has a full bucket, and its entry is dropped. Returns
-- {E = ms per token, burst = burst}, or nil for a malformed limit.
local function key_rate_parse(limit)
  local count, interval, burst = string.match(limit, '^(%d+) (%d+) (%d+)$')
  count, interval, burst = tonumber(count), tonumber(interval), tonumber(burst)
  if not count or count < 1 or interval < 1 or burst < 1 then return nil end
  return {E = interval / count, burst = burst}
end
-- Slack for the fractional arithmetic of key buckets (ms).
local KEY_RATE_SLACK = 1e-6
-- Whether a key whose bucket has `tat` (nil: full) may take a token at `now`.
local function key_rate_open(kr, tat, now)
  return tat == nil or tat - now <= (kr.burst - 1) * kr.E + KEY_RATE_SLACK
end
-- When a key whose bucket has `tat` gets its next token (whole ms).
local function key_rate_wake_at(kr, tat)
  return math.ceil(tat - (kr.burst - 1) * kr.E - KEY_RATE_SLACK)
end
-- A score for key_tat: ms with three decimals.
local function tat_score(tat)
  return string.format('%.3f', tat)
end

-- The keys of queue `K` whose next token has come (key_rate_wake; at most
-- 100 per call): each moves as many of its parked jobs (best first) back to
-- the ready set as its bucket holds tokens, at most 100, and when that
-- leaves some parked, is woken again when the token after those comes (a
-- claim that takes those tokens finds the key closed and sets its wake
-- again). Jobs parked for the key's concurrency limit may move too: a claim
-- parks them again.
local function key_rate_wakes(K, kr, now)
  local keys = redis.call('ZRANGEBYSCORE', K.key_rate_wake, '-inf', int(now), 'LIMIT', 0, 100)
  if #keys == 0 then return end
  redis.call('ZREM', K.key_rate_wake, unpack(keys))
  local tats = redis.call('ZMSCORE', K.key_tat, unpack(keys))
  local again = {}
  for i, key in ipairs(keys) do
    local tat = math.max(tonumber(tats[i]) or now, now)
    local n = math.min(100, math.floor((kr.burst * kr.E - (tat - now)) / kr.E + KEY_RATE_SLACK))
    if n < 1 then
      add_pair(again, key_rate_wake_at(kr, tat), key)
    else
      local prefix = type_prefix(key)
      -- One more than it moves, to know whether any stay parked.
      local parked = redis.call('ZRANGEBYLEX', K.key_waiting, '[' .. prefix, '(' .. prefix .. ':',
                                'LIMIT', 0, n + 1)
      local more = #parked > n
      parked[n + 1] = nil
      if #parked > 0 then redis.call('ZREM', K.key_waiting, unpack(parked)) end
      local ids, scores = {}, {}
      for _, member in ipairs(parked) do
        local _, score, id = type_member_parts(member)
        if id then
          ids[#ids + 1], scores[#ids + 1] = id, score
        end
      end
      local records = jobs_read(K.jobs, ids)
      for j, id in ipairs(ids) do
        local job = records[id] or nil
        if job and job[F.state] == 'pending' then ready_add(K, job, pad_score(scores[j]), id) end
      end
      if more then add_pair(again, key_rate_wake_at(kr, tat + n * kr.E), key) end
    end
  end
  call_pairs('ZADD', K.key_rate_wake, again)
end

-- Writes claim `b`'s changes to the buckets of a rate limit per key: the
-- tokens its leases took, and the wake of each key it parked jobs of for
-- want of a token.
local function write_key_rates(K, b)
  if not b.kr then return end
  local tats, wakes = {}, {}
  for key in pairs(b.tat_changed) do add_pair(tats, tat_score(b.key_tat[key]), key) end
  for key in pairs(b.rate_parked) do
    add_pair(wakes, key_rate_wake_at(b.kr, b.key_tat[key]), key)
  end
  call_pairs('ZADD', K.key_tat, tats)
  call_pairs('ZADD', K.key_rate_wake, wakes)
end
