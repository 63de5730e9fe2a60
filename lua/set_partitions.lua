#!lua flags=allow-oom
-- set_partitions.lua: creates a queue with a partition count, or changes the
-- count of a queue (docs/redis-layout.md, "Partitioned queues"). The count
-- lives with partition 0; partition i > 0 is the queue "<q>#i". A count only
-- grows: the jobs of a partition dropped would be stranded. Announces the
-- new count on partition 0's notify channel ('partitions:<P>'), so that the
-- Claim streams of every broker replica start reading the new partitions.
--
-- KEYS[1] {p}:{q}:partitions  the count (partition 0)
-- KEYS[2] {p}:{q}:registered  exists once the queue is in the registry
-- ARGV[1] the partition count, 1..256
-- ARGV[2] 'create' (refused when the queue exists: registered or counted)
--         or 'update' (refused when it does not)
-- ARGV[3] notify channel {p}:{q}:notify
-- Returns {'OK', old count} (1 when none was set) | {'EXISTS', count} |
-- {'MISSING', 1} | {'SHRINK', count} (refused: the count is larger).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): an operator's
-- control; it stores one small string.
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local exists = current > 0 or redis.call('EXISTS', KEYS[2]) == 1
local old = current > 0 and current or 1
if ARGV[2] == 'create' and exists then return {'EXISTS', old} end
if ARGV[2] == 'update' and not exists then return {'MISSING', 1} end
local wanted = tonumber(ARGV[1])
if wanted < old then return {'SHRINK', old} end
redis.call('SET', KEYS[1], wanted)
if wanted ~= old then redis.call('SPUBLISH', ARGV[3], 'partitions:' .. wanted) end
return {'OK', old}
