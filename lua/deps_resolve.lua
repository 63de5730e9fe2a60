#!lua flags=allow-oom
-- deps_resolve.lua: tells children of this queue partition what became of
-- their parents elsewhere (docs/semantics.md, "Parents in other queues";
-- _lib_deps.lua): the news a parent's slot pushed to its `deps_outbox`, and
-- what deps_link.lua answered when the broker linked a new child. Each news
-- applies once: the ref leaves the child's deps_remote, so news told twice
-- (two brokers draining one outbox, a recovery pass) changes nothing the
-- second time; a child no longer waiting (cancelled, deleted, dead for
-- another parent) is skipped. A child told 'ok' has one parent fewer (the
-- result copied into dep_results) and is due at the last; told 'dead' or
-- 'missing' it ends dead ("dependency failed: <ref>") unless its policy
-- runs it, and its own dependents are settled in turn.
--
-- KEYS[1] {p}:{q}:jobs         KEYS[2] {p}:{q}:ready
-- KEYS[3] {p}:{q}:ready_by_type KEYS[4] {p}:{q}:scheduled
-- KEYS[5] {p}:{q}:dead         KEYS[6] {p}:{q}:deps_waiting
-- KEYS[7] {p}:{q}:dependents   KEYS[8] {p}:{q}:remote_dependents
-- KEYS[9] {p}:{q}:deps_outbox  KEYS[10] {p}:{q}:deps_unlinked
-- ARGV[1] notify channel {p}:{q}:notify
-- ARGV[2..] news, each "<child store queue> <child id> <ref> <kind>
--           <result>", kind 'ok', 'dead', 'missing', 'linked' (nothing to
--           apply) or 'confirm' (ref '-': every link of the child is made;
--           it leaves deps_unlinked)
-- Returns how many news changed a child.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): it settles jobs, as
-- ack.lua does.
events_open(KEYS[1])
local now = now_ms()
local D = {jobs = KEYS[1], ready = KEYS[2], by_type = KEYS[3], scheduled = KEYS[4],
           dead = KEYS[5], deps_waiting = KEYS[6], dependents = KEYS[7],
           remote_dependents = KEYS[8], outbox = KEYS[9], channel = ARGV[1]}
-- Removes `ref` from `child`'s pending refs; whether it was there.
local function take_ref(child, ref)
  local refs = child[F.deps_remote]
  if type(refs) ~= 'string' then return false end
  local left, found = {}, false
  for r in string.gmatch(refs, '%S+') do
    if r == ref and not found then found = true else left[#left + 1] = r end
  end
  if found then child[F.deps_remote] = #left > 0 and table.concat(left, ' ') or nil end
  return found
end
local applied = 0
local next_delay = nil
for i = 2, #ARGV do
  local _, cid, ref, kind, result = string.match(ARGV[i], '^(%S+) (%S+) (%S+) (%S+) ?(.*)$')
  if kind == 'confirm' then
    redis.call('ZREM', KEYS[10], cid)
  elseif kind == 'ok' or kind == 'dead' or kind == 'missing' then
    local child = redis.call('ZSCORE', KEYS[6], cid) and job_read(KEYS[1], cid)
    if child and take_ref(child, ref) then
      applied = applied + 1
      local why = kind == 'missing' and (ref .. ' (no such job)') or nil
      local delay, dead = deps_child_learns(D, cid, child, ref, kind == 'ok', result, now, why)
      if delay and (not next_delay or delay < next_delay) then next_delay = delay end
      if dead then
        redis.call('ZREM', KEYS[10], cid)
        deps_parent_ended(D, cid, child, false, nil, now)
      end
    end
  end
end
if next_delay then redis.call('SPUBLISH', ARGV[1], int(next_delay)) end
events_publish()
return applied
