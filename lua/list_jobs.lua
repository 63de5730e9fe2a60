#!lua flags=no-writes
-- list_jobs.lua: one page of the jobs in one state (changes nothing). The
-- state's zsets are read as one sequence: KEYS in order (oldest first), or
-- reversed with each zset read from its end (newest first).
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- KEYS[2] {p}:{q}:payloads
-- KEYS[3] {p}:{q}:results
-- KEYS[4..n] the state's zsets, oldest first (pending: ready, key_waiting,
--            scheduled, deps_waiting; other states: their one zset);
--            key_waiting's members are key_member(key, score, id)
--            (ARGV[7])
-- ARGV[1] offset in the sequence (from the previous page)
-- ARGV[2] page size (jobs to return)
-- ARGV[3] '1' for newest first, '0' for oldest first
-- ARGV[4] type filter ('' for every type)
-- ARGV[5] scan limit: entries to look at, at most (>= page size)
-- ARGV[6] max bytes of payload, result and error text in the page (the page
--         ends before the job that would pass it; it holds at least one)
-- ARGV[7] the KEYS index of a zset of key_waiting's shape (its members
--         name the job id last), 0 for none
-- A completed job whose retention has ended (its score in the completed
-- index is before now) is left out, trimmed or not.
-- Returns {next_offset, id1, job1, id2, job2, ...} where jobN is
-- {record, payload, result} (job_reply: the record as stored) and
-- next_offset is -1 when the sequence is exhausted.
--
-- Over Redis' maxmemory (noeviction): runs (no-writes: a read, also
-- allowed on a read-only replica).
local offset, want = tonumber(ARGV[1]), tonumber(ARGV[2])
local newest_first, type_filter, limit = ARGV[3] == '1', ARGV[4], tonumber(ARGV[5])
local max_bytes, bytes, full = tonumber(ARGV[6]), 0, false
local now = now_ms()
local parked_key = KEYS[tonumber(ARGV[7])]

local sets = {}
for i = 4, #KEYS do
  if newest_first then sets[#sets + 1] = KEYS[#KEYS + 4 - i] else sets[#sets + 1] = KEYS[i] end
end

local out = {-1}
local found, scanned, pos, base, total = 0, 0, offset, 0, 0
for _, key in ipairs(sets) do
  local n = redis.call('ZCARD', key)
  total = total + n
  if pos < base + n and found < want and scanned < limit and not full then
    local start = pos - base
    local stop = math.min(n - 1, start + (limit - scanned) - 1)
    local ids
    if newest_first then
      ids = redis.call('ZRANGE', key, start, stop, 'REV')
    else
      ids = redis.call('ZRANGE', key, start, stop)
    end
    for _, id in ipairs(ids) do
      if found >= want then break end
      if key == parked_key then id = select(3, type_member_parts(id)) or id end
      local packed = redis.call('HGET', KEYS[1], id)
      local job = packed and job_unpack(packed)
      local size = job_text_bytes(KEYS[2], id, job) + redis.call('HSTRLEN', KEYS[3], id)
      if found > 0 and bytes + size > max_bytes then
        full = true
        break
      end
      scanned = scanned + 1
      pos = pos + 1
      if job and job[F.state] == 'completed' and
          (tonumber(redis.call('ZSCORE', key, id)) or now) < now then
        job = nil  -- retention ended: gone, whether or not trimmed yet
      end
      if job then
        if type_filter == '' or job[F.type] == type_filter then
          bytes = bytes + size
          out[#out + 1] = id
          out[#out + 1] = job_reply(packed, redis.call('HGET', KEYS[2], id),
                                    redis.call('HGET', KEYS[3], id))
          found = found + 1
        end
      end
    end
  end
  base = base + n
end
if pos < total then out[1] = pos end
return out
