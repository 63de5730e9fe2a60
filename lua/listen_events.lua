#!lua flags=allow-oom
-- listen_events.lua: a broker that follows a queue's events (WaitJob,
-- Subscribe) sets or renews the queue's listen mark: field '#listened' of
-- its jobs hash (EVENTS_MARK in _lib.lua), a Redis time until which the
-- scripts publish the queue's events. The mark only moves forward (another
-- broker's later mark stays). It stays in the hash once past: a past mark
-- reads as absent.
--
-- KEYS[1] {p}:{q}:jobs (job records)
-- ARGV[1] lease ms: the mark is set to at least now + lease
-- Returns 1 when the mark was absent or past before this call (the
-- queue's events since it passed were not published), else 0.
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): one small field,
-- so that a broker's followers keep their events.
local now = now_ms()
local until_ms = now + tonumber(ARGV[1])
local mark = tonumber(redis.call('HGET', KEYS[1], EVENTS_MARK)) or 0
if mark < until_ms then redis.call('HSET', KEYS[1], EVENTS_MARK, int(until_ms)) end
if mark > now then return 0 end
return 1
