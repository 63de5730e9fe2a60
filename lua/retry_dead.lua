-- retry_dead.lua: moves dead jobs back to pending, due now, with attempts
-- reset to 0 (the last error is kept), either the listed ids or the next
-- batch of the dead set. Jobs that are not dead, or not of the wanted type,
-- are skipped.
--
-- KEYS[1] {p}:{q}:dead
-- KEYS[2] {p}:{q}:ready
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] notify channel
-- ARGV[3] type filter ('' for every type)
-- ARGV[4] 'ids': ARGV[5..] are job ids
--         'scan': ARGV[5] offset in the dead set, ARGV[6] batch size
-- Returns {moved, next_offset} where next_offset (scan mode) is where the
-- next batch starts, -1 when the dead set is exhausted (always -1 for ids).
local prefix, channel, type_filter = ARGV[1], ARGV[2], ARGV[3]
local now = now_ms()

local ids, next_offset = {}, -1
if ARGV[4] == 'ids' then
  for i = 5, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  local offset, batch = tonumber(ARGV[5]), tonumber(ARGV[6])
  ids = redis.call('ZRANGE', KEYS[1], offset, offset + batch - 1)
  if #ids == batch then next_offset = offset end
end

local moved = 0
for _, id in ipairs(ids) do
  local key = prefix .. id
  local f = redis.call('HMGET', key, 'state', 'type', 'priority')
  if f[1] == 'dead' and (type_filter == '' or f[2] == type_filter) then
    redis.call('HSET', key, 'state', 'pending', 'attempts', 0, 'available_at', int(now),
               'finished_at', 0, 'lease_expires_at', 0, 'lease_token', '')
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZADD', KEYS[2], ready_score(tonumber(f[3]), now), id)
    moved = moved + 1
  elseif next_offset >= 0 then
    next_offset = next_offset + 1  -- stays in the dead set: skip over it
  end
end
if moved > 0 then redis.call('PUBLISH', channel, 0) end
return {moved, next_offset}
