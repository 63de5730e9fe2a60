#!lua flags=allow-oom
-- index_by_type.lua: adds the ready_by_type entries (docs/redis-layout.md)
-- of one batch of a queue's ready jobs: the upgrade of data of layout 3,
-- whose ready sets have no index, run by the first layout 4 broker to
-- connect (JobStore::CheckRedisSettings) for every registered queue, batch
-- by batch. Entries already there are written again unchanged, so a repeated
-- or concurrent run does no harm.
--
-- KEYS[1] {p}:{q}:ready
-- KEYS[2] {p}:{q}:ready_by_type
-- KEYS[3] {p}:{q}:jobs (job records)
-- ARGV[1] offset in the ready set
-- ARGV[2] batch size
-- Returns the offset of the next batch, or -1 when the ready set is done.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): without the index
-- a Claim that filters by type would not see these jobs.
local offset, batch = tonumber(ARGV[1]), tonumber(ARGV[2])
local r = redis.call('ZRANGE', KEYS[1], offset, offset + batch - 1, 'WITHSCORES')
local members = {}
for i = 1, #r, 2 do
  add_pair(members, 0, type_member(job_type_of(job_read(KEYS[3], r[i])), pad_score(r[i + 1]), r[i]))
end
call_pairs('ZADD', KEYS[2], members)
if #r < 2 * batch then return -1 end
return offset + batch
