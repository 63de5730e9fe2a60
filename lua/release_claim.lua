#!lua flags=allow-oom
-- release_claim.lua: undoes a whole claim.lua call whose reply never reached
-- the broker (its Redis connection dropped after the script ran), from the
-- call's record. Each job still active under a lease of that call is pending
-- and due again at once, with its attempt given back and its token cleared,
-- as release.lua does for one job; jobs that moved on (acked, reaped,
-- claimed again) are left alone. The record is deleted.
--
-- KEYS[1] {p}:{q}:claim:<claim id>
-- KEYS[2] {p}:{q}:active
-- KEYS[3] {p}:{q}:ready
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] claim id (the lease token prefix of the call)
-- ARGV[3] notify channel
-- Returns the number of jobs given back (0 when the record is gone: the
-- call never ran, or its leases expired).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): gives back jobs that were never
-- delivered.
local record = redis.call('GET', KEYS[1])
if not record then return 0 end
local prefix = ARGV[2] .. '.'
local released = 0
for id in string.gmatch(record, '%S+') do
  local key = ARGV[1] .. id
  local f = redis.call('HMGET', key, 'state', 'lease_token', 'priority', 'available_at',
                       'attempts')
  local priority, available_at = tonumber(f[3]), tonumber(f[4])
  if f[1] == 'active' and f[2] and string.sub(f[2], 1, #prefix) == prefix and priority and
      available_at and tonumber(f[5]) then
    redis.call('HINCRBY', key, 'attempts', -1)
    redis.call('HSET', key, 'state', 'pending', 'lease_token', '', 'lease_expires_at', '0')
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZADD', KEYS[3], ready_score(priority, available_at), id)
    released = released + 1
  end
end
redis.call('DEL', KEYS[1])
if released > 0 then redis.call('SPUBLISH', ARGV[3], 0) end
return released
