#!lua flags=no-writes
-- list_jobs.lua: one page of the jobs in one state (changes nothing). The
-- state's zsets are read as one sequence: KEYS in order (oldest first), or
-- reversed with each zset read from its end (newest first).
--
-- KEYS[1..n] the state's zsets, oldest first (pending: ready, scheduled;
--            other states: their one zset)
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] offset in the sequence (from the previous page)
-- ARGV[3] page size (jobs to return)
-- ARGV[4] '1' for newest first, '0' for oldest first
-- ARGV[5] type filter ('' for every type)
-- ARGV[6] scan limit: entries to look at, at most (>= page size)
-- ARGV[7] max bytes of payload, result and error text in the page (the page
--         ends before the job that would pass it; it holds at least one)
-- Returns {next_offset, id1, fields1, id2, fields2, ...} where fieldsN is the
-- job hash (HGETALL) and next_offset is -1 when the sequence is exhausted.
--
-- Over Redis' maxmemory (noeviction): runs (no-writes: a read, also
-- allowed on a read-only replica).
local prefix, offset, want = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local newest_first, type_filter, limit = ARGV[4] == '1', ARGV[5], tonumber(ARGV[6])
local max_bytes, bytes, full = tonumber(ARGV[7]), 0, false

local sets = {}
for i = 1, #KEYS do
  if newest_first then sets[i] = KEYS[#KEYS + 1 - i] else sets[i] = KEYS[i] end
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
      local key = prefix .. id
      local size = redis.call('HSTRLEN', key, 'payload') + redis.call('HSTRLEN', key, 'result') +
                   redis.call('HSTRLEN', key, 'error')
      if found > 0 and bytes + size > max_bytes then
        full = true
        break
      end
      scanned = scanned + 1
      pos = pos + 1
      local fields = redis.call('HGETALL', key)
      if #fields > 0 then
        local matches = type_filter == ''
        if not matches then
          for i = 1, #fields, 2 do
            if fields[i] == 'type' then matches = fields[i + 1] == type_filter break end
          end
        end
        if matches then
          bytes = bytes + size
          out[#out + 1] = id
          out[#out + 1] = fields
          found = found + 1
        end
      end
    end
  end
  base = base + n
end
if pos < total then out[1] = pos end
return out
