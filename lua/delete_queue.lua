#!lua flags=allow-oom
-- delete_queue.lua: removes a queue, a batch of jobs per call: every job of
-- its sets (each with its idempotency key when that still names it), then,
-- once they are empty, the paused flag, the queue's registry entry and its
-- registered marker (so the next enqueue registers the queue again, through
-- whichever broker). The
-- id counter (seq) is kept, so that a queue created again under the name
-- never reuses an id that an old idempotency key (one whose job hash had
-- already expired) might still name. Refused while jobs are active, unless
-- forced (a worker holding one then gets NOT_FOUND on Ack / Fail).
--
-- KEYS[1..5] {p}:{q}:ready, scheduled, active, completed, dead
-- KEYS[6] {p}:{q}:paused
-- KEYS[7] {p}:queues (the registry; not hash-tagged, see docs/redis-layout.md)
-- KEYS[8] {p}:{q}:registered
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] idempotency key prefix {p}:{q}:idem:
-- ARGV[3] queue name (its registry member)
-- ARGV[4] '1' to delete active jobs too, '0' not, 'empty' to remove the
--         queue only if it holds no job at all and is not paused (the
--         reaper dropping an idle queue)
-- ARGV[5] batch size (jobs per call)
-- Returns {'ACTIVE', n} (refused: n jobs active, nothing removed) |
-- {'BUSY', 0} ('empty' mode: the queue holds jobs or is paused) |
-- {'MORE', removed} (call again) | {'DONE', removed}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
if ARGV[4] == 'empty' then
  for i = 1, 6 do
    if redis.call('EXISTS', KEYS[i]) == 1 then return {'BUSY', 0} end
  end
elseif ARGV[4] ~= '1' then
  local active = redis.call('ZCARD', KEYS[3])
  if active > 0 then return {'ACTIVE', active} end
end
local left = tonumber(ARGV[5])
local removed = 0
for i = 1, 5 do
  if left <= 0 then break end
  local ids = redis.call('ZRANGE', KEYS[i], 0, left - 1)
  for _, id in ipairs(ids) do
    removed = removed + delete_job_hash(ARGV[1] .. id, ARGV[2], id)
  end
  if #ids > 0 then redis.call('ZREM', KEYS[i], unpack(ids)) end
  left = left - #ids
end
for i = 1, 5 do
  if redis.call('ZCARD', KEYS[i]) > 0 then return {'MORE', removed} end
end
redis.call('DEL', KEYS[6], KEYS[8])
redis.call('SREM', KEYS[7], ARGV[3])
return {'DONE', removed}
