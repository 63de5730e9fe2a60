#!lua flags=allow-oom
-- deps_unlinked.lua: the children of this queue partition whose links to
-- parents elsewhere were not confirmed within a grace time (a broker that
-- stored them stopped before it linked them; docs/semantics.md, "Parents
-- in other queues"), for the recovery pass to link again (deps_link.lua is
-- idempotent). Entries of children no longer waiting, or without refs left
-- to link, are dropped.
--
-- KEYS[1] {p}:{q}:deps_unlinked KEYS[2] {p}:{q}:jobs
-- KEYS[3] {p}:{q}:deps_waiting
-- ARGV[1] grace ms: only children stored longer ago than this
-- ARGV[2] the most children to return
-- Returns {child id, its refs (space-separated), ...}.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
local now = now_ms()
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', int(now - tonumber(ARGV[1])),
                       'LIMIT', 0, tonumber(ARGV[2]))
local out, gone = {}, {}
for _, cid in ipairs(ids) do
  local child = redis.call('ZSCORE', KEYS[3], cid) and job_read(KEYS[2], cid)
  local refs = child and child[F.deps_remote]
  if type(refs) == 'string' and refs ~= '' then
    out[#out + 1] = cid
    out[#out + 1] = refs
  else
    gone[#gone + 1] = cid
  end
end
if #gone > 0 then redis.call('ZREM', KEYS[1], unpack(gone)) end
return out
