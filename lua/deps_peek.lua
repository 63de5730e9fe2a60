#!lua flags=no-writes
-- deps_peek.lua: which of the named jobs of one queue partition name no job
-- (changes nothing): the check an Enqueue with parents elsewhere makes
-- before it stores the child (docs/semantics.md, "Parents in other
-- queues"), so that a child of a parent that does not exist is refused
-- with nothing stored. A job deleted on ack (its tombstone in `acked`) still
-- names a job, as in deps_plan (_lib_deps.lua).
--
-- KEYS[1] {p}:{q}:jobs
-- KEYS[2] {p}:{q}:acked        KEYS[3] {p}:{q}:acked_expiry
-- ARGV[1..] job ids
-- Returns the ids that name no job, in ARGV order.
local now = now_ms()
local records = hash_read(KEYS[1], ARGV)
local missing = {}
for _, id in ipairs(ARGV) do
  if not records[id] and not idem_get(KEYS[2], KEYS[3], id, now) then
    missing[#missing + 1] = id
  end
end
return missing
