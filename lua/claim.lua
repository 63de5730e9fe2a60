#!lua
-- claim.lua: leases up to ARGV[1] due jobs of one queue to one claimer, and
-- at most about ARGV[5] bytes of them (at least one job, whatever its size),
-- so that a reply stays bounded in Redis' Lua heap, its output buffer and the
-- broker. First moves scheduled jobs that are now due into the ready set (at
-- most 1000 per call), then takes the best ready jobs of the wanted types
-- (ARGV[6..]; every type when none is given): highest priority, then the one
-- due first. A filtered claim reads the ready set's index by type, so jobs of
-- other types ahead of the wanted ones never hide them. Each claimed job gets attempts + 1, a new lease token
-- and a lease expiry, and enters the active set. Every field a job needs is
-- read before anything is written: an id whose record is missing is dropped
-- from the ready / scheduled set and never claimed (no record is created for
-- it); a scheduled job whose record lacks priority or available_at is made
-- dead with an error naming them (so it stays visible); both are reported.
--
-- Publishes its changes as queue events while a broker listens (events_open
-- in _lib.lua; docs/redis-layout.md, "Events").
--
-- KEYS[1] {p}:{q}:ready
-- KEYS[2] {p}:{q}:scheduled
-- KEYS[3] {p}:{q}:active
-- KEYS[4] {p}:{q}:paused (when it exists, nothing is claimed)
-- KEYS[5] {p}:{q}:dead
-- KEYS[6] {p}:{q}:claim:<ARGV[4]> (the record of this call: the ids it
--         leased, space-separated, expiring with the lease)
-- KEYS[7] {p}:{q}:jobs (job records)
-- KEYS[8] {p}:{q}:payloads
-- KEYS[9] {p}:{q}:ready_by_type (the ready set's index by type)
-- KEYS[10] {p}:{q}:rate_limit (the queue's rate limit, when it has one)
-- KEYS[11] {p}:{q}:rate_bucket (its token bucket)
-- KEYS[12] {p}:{q}:max_active (the most active jobs at once, when set)
-- KEYS[13] {p}:{q}:key_limit (the most active jobs per concurrency key,
--          when set)
-- KEYS[14] {p}:{q}:key_active (concurrency key -> its active jobs)
-- KEYS[15] {p}:{q}:key_waiting (jobs parked at their key's limit, or for
--          want of their key's token)
-- KEYS[16] {p}:{q}:key_rate_limit (the rate limit of each concurrency key,
--          when set)
-- KEYS[17] {p}:{q}:key_tat (the keys' buckets)
-- KEYS[18] {p}:{q}:key_rate_wake (keys parked for want of a token, by when
--          their next one comes)
-- ARGV[1] max jobs to claim (>= 1)
-- ARGV[2] lease ms
-- ARGV[3] claim id: lease token prefix (random, unique per call; job i gets
--         claim_id.i)
-- ARGV[4] worker id
-- ARGV[5] max bytes of payload and error text in all (>= 1)
-- ARGV[6..] job types to claim (none: every type)
-- Returns {next_due_in_ms, more, skipped, others, id1, job1, id2, job2, ...}
-- where jobN is {record, payload, ''} (job_reply): the job's record after the
-- claim, as stored, and its payload. more is 1 when
-- due jobs of the wanted types are left (the call stopped at ARGV[1] jobs or
-- ARGV[5] bytes; next_due_in_ms is then 0), else 0 and next_due_in_ms is the ms until the
-- earliest scheduled job is due (0 if due now), or -1 if none is scheduled
-- or the queue is paused (resuming publishes a wake-up). skipped is the list
-- of ids dropped for a missing or partial record. others (a filtered claim
-- only; else empty) lists the other types that have due jobs, so that the
-- broker wakes a stream that takes them.
--
-- A rate-limited queue (set_queue.lua) hands out at most its bucket's whole
-- tokens (ARGV[1] shrinks to them); with none left while due jobs wait,
-- next_due_in_ms is the ms until the next token and more is 0. A queue with
-- max_active hands out no more than keeps its active jobs within it; with
-- every slot taken while due jobs wait, next_due_in_ms is 1000 (a recheck:
-- the brokers wake a stream on a settle) and more is 0. A queue with a
-- per-key limit parks the ready jobs whose concurrency key is at it (they
-- stay pending; a settle of the key's run moves one back and publishes a
-- wake-up) and claims past them. A queue with a rate limit per key parks
-- the ready jobs whose key has no token the same way and claims past them;
-- the key's next token moves its parked jobs back (as many as it has
-- tokens), and next_due_in_ms counts the first such token when nothing is
-- due sooner.
--
-- Over Redis' maxmemory (noeviction): refused before it runs (nothing
-- written): a claim starts runs whose Acks would store results past the limit;
-- the Claim streams stay open and the broker tries again every second.
local types = {}
for i = 6, #ARGV do types[#types + 1] = ARGV[i] end
events_open(KEYS[7])
local out = claim_ready({ready = KEYS[1], scheduled = KEYS[2], active = KEYS[3],
                    paused = KEYS[4], dead = KEYS[5], claim = KEYS[6], jobs = KEYS[7],
                    payloads = KEYS[8], by_type = KEYS[9], rate_limit = KEYS[10],
                    rate_bucket = KEYS[11], max_active = KEYS[12], key_limit = KEYS[13],
                    key_active = KEYS[14], key_waiting = KEYS[15], key_rate_limit = KEYS[16],
                    key_tat = KEYS[17], key_rate_wake = KEYS[18]},
                   now_ms(), tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4],
                   tonumber(ARGV[5]), types)
events_publish()
return out
