#!lua flags=allow-oom
-- deps_link.lua: links children stored in other slots to their parents of
-- this queue partition (docs/semantics.md, "Parents in other queues";
-- _lib_deps.lua). A parent that has not ended lists the child in
-- `remote_dependents` (once: linking again changes nothing) and carries
-- has_dependents, so that its end pushes news to `deps_outbox`; one that has
-- ended answers how, for the broker to tell the child (deps_resolve.lua).
--
-- KEYS[1] {p}:{q}:jobs          KEYS[2] {p}:{q}:results
-- KEYS[3] {p}:{q}:acked         KEYS[4] {p}:{q}:acked_expiry
-- KEYS[5] {p}:{q}:remote_dependents
-- ARGV[1..] links, each "<child store queue> <child id> <ref>", the ref
--           "<queue>/<parent id>" as the child named its parent
-- Returns, per link in order, "<child store queue> <child id> <ref> <kind>
-- <result>": kind 'linked' (the parent has not ended; result ''), 'ok'
-- (completed, with its result if still kept, or deleted on ack), 'dead' or
-- 'missing' (no such job).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): it finishes what an
-- Enqueue that was accepted started, with a few bytes per link.
local now = now_ms()
local out = {}
for i = 1, #ARGV do
  local queue, cid, ref = string.match(ARGV[i], '^(%S+) (%S+) (%S+)$')
  local pid = ref and string.match(ref, '/(.+)$')
  if not pid then return redis.error_reply('ERR deps_link: malformed link ' .. ARGV[i]) end
  local parent = job_read(KEYS[1], pid)
  local state = parent and parent[F.state]
  local kind, result = 'linked', ''
  if not parent then
    kind = idem_get(KEYS[3], KEYS[4], pid, now) and 'ok' or 'missing'
  elseif state == 'completed' then
    kind, result = 'ok', redis.call('HGET', KEYS[2], pid) or ''
  elseif state == 'dead' then
    kind = 'dead'
  else
    local entry = queue .. ',' .. cid .. ',' .. ref
    local list = redis.call('HGET', KEYS[5], pid)
    if not list then
      redis.call('HSET', KEYS[5], pid, entry)
    elseif not string.find(' ' .. list .. ' ', ' ' .. entry .. ' ', 1, true) then
      redis.call('HSET', KEYS[5], pid, list .. ' ' .. entry)
    end
    if not parent[F.has_dependents] then
      parent[F.has_dependents] = 1
      job_write(KEYS[1], pid, parent)
    end
  end
  out[#out + 1] = table.concat({queue, cid, ref, kind, result}, ' ')
end
return out
