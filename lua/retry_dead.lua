#!lua
-- retry_dead.lua: moves dead jobs back to pending, due now, with attempts
-- reset to 0 (the last error is kept), either the listed ids or the next
-- batch of the dead set. Jobs that are not dead, or not of the wanted type,
-- are skipped; so is a job whose hash lacks its priority (nothing is written
-- to it; it is reported).
--
-- A scan covers the dead set as it was when its first call ran: the first
-- call (ARGV[7] empty) takes every job that died at or before its Redis time
-- T and no later, and answers the bound "(T" that the next calls pass back,
-- so a job that dies again after being retried by this scan (its dead score
-- is its new death time, > T or == T in the same millisecond, which the
-- first call already covered) is not retried twice, and the scan ends.
--
-- KEYS[1] {p}:{q}:dead
-- KEYS[2] {p}:{q}:ready
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] notify channel
-- ARGV[3] type filter ('' for every type)
-- ARGV[4] 'ids': ARGV[5..] are job ids
--         'scan': ARGV[5] offset among the dead jobs within the bound,
--                 ARGV[6] batch size, ARGV[7] bound ('' on the first call)
-- Returns {moved, next_offset, bound, skipped}: next_offset (scan mode) is
-- where the next batch starts, -1 when the scan is done (always -1 for ids);
-- bound is what the next call passes as ARGV[7]; skipped lists ids whose
-- hash lacks its priority.
--
-- Over Redis' maxmemory (noeviction): refused before it runs (nothing
-- written): it creates work; the broker answers RESOURCE_EXHAUSTED.
local prefix, channel, type_filter = ARGV[1], ARGV[2], ARGV[3]
local now = now_ms()

local ids, next_offset, bound = {}, -1, ''
if ARGV[4] == 'ids' then
  for i = 5, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  local offset, batch = tonumber(ARGV[5]), tonumber(ARGV[6])
  bound = ARGV[7]
  if bound == '' then
    -- Every job that died in this very millisecond, however many, then the
    -- earlier ones batch by batch.
    ids = redis.call('ZRANGEBYSCORE', KEYS[1], int(now), int(now))
    bound = '(' .. int(now)
    next_offset = 0
  else
    ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', bound, 'LIMIT', offset, batch)
    if #ids == batch then next_offset = offset end
  end
end

local moved, skipped = 0, {}
for _, id in ipairs(ids) do
  local key = prefix .. id
  local f = redis.call('HMGET', key, 'state', 'type', 'priority')
  local priority = tonumber(f[3])
  local wanted = f[1] == 'dead' and (type_filter == '' or f[2] == type_filter)
  if wanted and priority then
    redis.call('HSET', key, 'state', 'pending', 'attempts', 0, 'available_at', int(now),
               'finished_at', 0, 'lease_expires_at', 0, 'lease_token', '')
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZADD', KEYS[2], ready_score(priority, now), id)
    moved = moved + 1
  else
    if wanted then skipped[#skipped + 1] = id end
    if next_offset >= 0 and ARGV[7] ~= '' then
      next_offset = next_offset + 1  -- stays in the dead set: skip over it
    end
  end
end
if moved > 0 then redis.call('SPUBLISH', channel, 0) end
return {moved, next_offset, bound, skipped}
