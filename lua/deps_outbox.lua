#!lua flags=allow-oom
-- deps_outbox.lua: removes news the broker delivered from this queue
-- partition's `deps_outbox` (docs/semantics.md, "Parents in other queues";
-- _lib_deps.lua). The broker reads the outbox (LRANGE), tells each child's
-- slot (deps_resolve.lua), then calls this; news pushed meanwhile stays.
--
-- KEYS[1] {p}:{q}:deps_outbox
-- ARGV[1..] the news delivered, as read
-- Returns how many were removed (news another broker removed first is not).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): frees memory.
local removed = 0
for i = 1, #ARGV do removed = removed + redis.call('LREM', KEYS[1], 1, ARGV[i]) end
return removed
