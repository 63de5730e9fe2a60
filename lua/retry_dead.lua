#!lua
-- retry_dead.lua: moves dead jobs back to pending, due now, with attempts
-- reset to 0 (the last error is kept), either the listed ids or the next
-- batch of the dead set. Jobs that are not dead, or not of the wanted type,
-- are skipped; so is a job whose record lacks its priority (nothing is written
-- to it; it is reported).
--
-- A scan covers the dead set as it was when its first call ran: the first
-- call (ARGV[6] empty) takes every job that died at or before its Redis time
-- T and no later, and answers the bound "(T" that the next calls pass back,
-- so a job that dies again after being retried by this scan (its dead score
-- is its new death time, > T or == T in the same millisecond, which the
-- first call already covered) is not retried twice, and the scan ends.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:dead
-- KEYS[2] {p}:{q}:ready
-- KEYS[3] {p}:{q}:jobs (job records)
-- KEYS[4] {p}:{q}:ready_by_type
-- ARGV[1] notify channel
-- ARGV[2] type filter ('' for every type)
-- ARGV[3] 'ids': ARGV[4..] are job ids
--         'scan': ARGV[4] offset among the dead jobs within the bound,
--                 ARGV[5] batch size, ARGV[6] bound ('' on the first call)
-- Returns {moved, next_offset, bound, skipped}: next_offset (scan mode) is
-- where the next batch starts, -1 when the scan is done (always -1 for ids);
-- bound is what the next call passes as ARGV[6]; skipped lists ids whose
-- record lacks its priority.
--
-- Over Redis' maxmemory (noeviction): refused before it runs (nothing
-- written): it creates work; the broker answers RESOURCE_EXHAUSTED.
local channel, type_filter = ARGV[1], ARGV[2]
local now = now_ms()

local ids, next_offset, bound = {}, -1, ''
if ARGV[3] == 'ids' then
  for i = 4, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  local offset, batch = tonumber(ARGV[4]), tonumber(ARGV[5])
  bound = ARGV[6]
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
events_open(KEYS[3])
for _, id in ipairs(ids) do
  local job = job_read(KEYS[3], id)
  local priority = tonumber(job and job[F.priority])
  local wanted = job ~= nil and job[F.state] == 'dead' and
                 (type_filter == '' or job[F.type] == type_filter)
  if wanted and priority then
    job[F.state], job[F.attempts], job[F.available_at] = 'pending', 0, now
    job[F.finished_at], job[F.lease_expires_at], job[F.lease_token] = 0, 0, ''
    job_write(KEYS[3], id, job)
    redis.call('ZREM', KEYS[1], id)
    ready_add({ready = KEYS[2], by_type = KEYS[4]}, job, ready_score(priority, now), id)
    moved = moved + 1
    event('redriven', id, job, now)
  else
    if wanted then skipped[#skipped + 1] = id end
    if next_offset >= 0 and ARGV[6] ~= '' then
      next_offset = next_offset + 1  -- stays in the dead set: skip over it
    end
  end
end
if moved > 0 then redis.call('SPUBLISH', channel, 0) end
events_publish()
return {moved, next_offset, bound, skipped}
