#!lua flags=allow-oom
-- delete_queue.lua: removes a queue, a batch of jobs per call: every job of
-- its sets (each with its idempotency key when that still names it), then,
-- once they are empty, the paused flag, what is left of the job hashes
-- and the ack tombstones, and its registered marker (so the next enqueue
-- registers the queue again, through whichever broker). The registry entry
-- is in another Redis Cluster slot: after DONE the broker removes it
-- (unregister_queue.lua) and then adds it back if the marker exists again
-- by then (an enqueue registered the queue meanwhile; docs/redis-layout.md,
-- "The registry and Redis Cluster"). The idempotency index stays: each key lasts its dedup
-- window, as it would have for a job whose retention ended, and expired keys
-- are trimmed by the queue's next enqueue or reaper pass. The
-- id counter (seq) is kept, so that a queue created again under the name
-- never reuses an id that an old idempotency key (one whose job had
-- already expired) might still name. Refused while jobs are active, unless
-- forced (a worker holding one then gets NOT_FOUND on Ack / Fail).
--
-- Publishes a queue-wide "deleted" event (id '') while a broker listens
-- (events_open in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1..5] {p}:{q}:ready, scheduled, active, completed, dead
-- KEYS[6] {p}:{q}:paused
-- KEYS[7] {p}:{q}:registered
-- KEYS[8] {p}:{q}:jobs         KEYS[9] {p}:{q}:payloads
-- KEYS[10] {p}:{q}:results     KEYS[11] {p}:{q}:idem
-- KEYS[12] {p}:{q}:idem_expiry
-- KEYS[13] {p}:{q}:acked       KEYS[14] {p}:{q}:acked_expiry
-- KEYS[15] {p}:{q}:partitions  (a created queue's count; 'empty' keeps such
--          a queue, a deletion removes it)
-- KEYS[16] {p}:{q}:ready_by_type (emptied with the ready set)
-- KEYS[17] {p}:{q}:job_timeout (the queue's default job timeout: kept by
--          'empty' as the partition count is, removed by a deletion)
-- KEYS[18] {p}:{q}:rate_limit  (the queue's rate limit: as job_timeout)
-- KEYS[19] {p}:{q}:rate_bucket (its token bucket: removed by a deletion)
-- KEYS[20] {p}:{q}:max_active  (as job_timeout)
-- KEYS[21] {p}:{q}:key_limit   (as job_timeout)
-- KEYS[22] {p}:{q}:key_active  (removed with the active set)
-- KEYS[23] {p}:{q}:key_waiting (pending jobs parked at their concurrency
--          key's limit: deleted as the sets' jobs are)
-- KEYS[24] {p}:{q}:deps_waiting (pending jobs waiting for parents: deleted
--          as the sets' jobs are)   KEYS[25] {p}:{q}:dependents (removed)
-- KEYS[26] {p}:{q}:key_rate_limit (as job_timeout)
-- KEYS[27] {p}:{q}:key_tat   KEYS[28] {p}:{q}:key_rate_wake (removed)
-- KEYS[29] {p}:{q}:remote_dependents (removed once the jobs are: the
--          children elsewhere still waiting for a deleted job get news
--          'dead' in KEYS[30], as for DeleteJob)
-- KEYS[30] {p}:{q}:deps_outbox (kept for the broker to drain: it calls
--          deps_outbox.lua after DONE; 'empty' is BUSY while it has news)
-- KEYS[31] {p}:{q}:deps_unlinked (removed)
-- ARGV[1] '1' to delete active jobs too, '0' not, 'empty' to remove the
--         queue only if it holds no job at all, is not paused and was not
--         created with a partition count or given a default job timeout
--         or a limit (the reaper dropping an idle queue)
-- ARGV[2] batch size (jobs per call)
-- Returns {'ACTIVE', n} (refused: n jobs active, nothing removed) |
-- {'BUSY', 0} ('empty' mode: the queue holds jobs or is paused) |
-- {'MORE', removed} (call again) | {'DONE', removed}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
if ARGV[1] == 'empty' then
  for _, i in ipairs({1, 2, 3, 4, 5, 6, 15, 17, 18, 20, 21, 23, 24, 26, 30}) do
    if redis.call('EXISTS', KEYS[i]) == 1 then return {'BUSY', 0} end
  end
elseif ARGV[1] ~= '1' then
  local active = redis.call('ZCARD', KEYS[3])
  if active > 0 then return {'ACTIVE', active} end
end
local J = {jobs = KEYS[8], payloads = KEYS[9], results = KEYS[10], idem = KEYS[11],
           idem_expiry = KEYS[12]}
local left = tonumber(ARGV[2])
local removed = 0
events_open(KEYS[8])
event('deleted', '', nil, now_ms())
events_publish()
for _, i in ipairs({1, 2, 3, 4, 5, 24}) do
  if left <= 0 then break end
  local ids = redis.call('ZRANGE', KEYS[i], 0, left - 1)
  for _, id in ipairs(ids) do
    if i == 1 then
      ready_remove({ready = KEYS[1], by_type = KEYS[16], key_waiting = KEYS[23]}, job_read(J.jobs, id), id)
    end
    removed = removed + delete_job(J, id)
  end
  if #ids > 0 then redis.call('ZREM', KEYS[i], unpack(ids)) end
  left = left - #ids
end
if left > 0 then
  local parked = redis.call('ZRANGE', KEYS[23], 0, left - 1)
  for _, member in ipairs(parked) do
    local _, _, id = type_member_parts(member)
    if id then removed = removed + delete_job(J, id) end
  end
  if #parked > 0 then redis.call('ZREM', KEYS[23], unpack(parked)) end
end
for _, i in ipairs({1, 2, 3, 4, 5, 23, 24}) do
  if redis.call('ZCARD', KEYS[i]) > 0 then return {'MORE', removed} end
end
-- No job is left in a set: what remains of the job hashes (records no set
-- names; none in a consistent store) and the tombstones go. The idempotency
-- index stays (see the header).
local remote = redis.call('HGETALL', KEYS[29])
local news = {}
for i = 2, #remote, 2 do
  for entry in string.gmatch(remote[i], '%S+') do
    local queue, cid, ref = string.match(entry, '^([^,]+),([^,]+),(.+)$')
    if queue then news[#news + 1] = table.concat({queue, cid, ref, 'dead', ''}, ' ') end
  end
end
call_pairs('RPUSH', KEYS[30], news)
redis.call('DEL', KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[13], KEYS[14], KEYS[15],
           KEYS[16], KEYS[17], KEYS[18], KEYS[19], KEYS[20], KEYS[21], KEYS[22], KEYS[25],
           KEYS[26], KEYS[27], KEYS[28], KEYS[29], KEYS[31])
return {'DONE', removed}
