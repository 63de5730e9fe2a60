#!lua flags=allow-oom
-- ack.lua: completes active jobs of one queue, each for the holder of its
-- current lease, and stores their results. A completed job hash expires
-- after its retention (its completed_retention field, else the broker's);
-- with retention 0 it is deleted at once and only a tombstone (the lease
-- token under {p}:{q}:acked:<id>) stays until the lease would have ended
-- plus a grace, so that a repeated Ack is still recognised. The completed
-- index is scored by each entry's expiry, so trimming it is one
-- ZREMRANGEBYSCORE up to now. Each job is settled on its own: one job's
-- error does not stop the others. Repeating a successful ack with the same
-- token changes nothing and answers OK marked as a repeat.
--
-- KEYS[1] {p}:{q}:active
-- KEYS[2] {p}:{q}:completed
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] completed retention ms of a job hash without completed_retention
--         (enqueued under layout 1)
-- ARGV[3] tombstone key prefix {p}:{q}:acked:
-- ARGV[4] tombstone grace ms (kept this long past the lease's end)
-- ARGV[5 + 3k], ARGV[6 + 3k], ARGV[7 + 3k]: job id, lease token, result of
-- the k-th job (k = 0, 1, ...; at least one job)
-- Returns one reply per job, in order: {'OK'} | {'OK', 'repeat'} (already
-- completed with this token) | {'NOT_FOUND'} | {'STALE'} (token is not the
-- current lease) | {'STATE', state} (the job is not active).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): finishing work
-- always succeeds.
local prefix, tombstones = ARGV[1], ARGV[3]
local default_retention, grace = tonumber(ARGV[2]), tonumber(ARGV[4])
local now = now_ms()
local out = {}
local done = {}
local index = {}
for i = 5, #ARGV, 3 do
  local id, token = ARGV[i], ARGV[i + 1]
  local key = prefix .. id
  local f = redis.call('HMGET', key, 'state', 'lease_token', 'completed_retention',
                       'lease_expires_at')
  if not f[1] then
    local acked = redis.call('GET', tombstones .. id)
    if not acked then
      out[#out + 1] = {'NOT_FOUND'}
    elseif acked == token then
      out[#out + 1] = {'OK', 'repeat'}
    else
      out[#out + 1] = {'STALE'}
    end
  elseif f[2] ~= token then
    out[#out + 1] = {'STALE'}
  elseif f[1] == 'completed' then
    out[#out + 1] = {'OK', 'repeat'}
  elseif f[1] ~= 'active' then
    out[#out + 1] = {'STATE', f[1]}
  else
    local retention = tonumber(f[3]) or default_retention
    if retention <= 0 then
      local lease_left = math.max(0, (tonumber(f[4]) or 0) - now)
      redis.call('DEL', key)
      redis.call('SET', tombstones .. id, token, 'PX', int(lease_left + grace))
    else
      redis.call('HSET', key, 'state', 'completed', 'result', ARGV[i + 2],
                 'finished_at', int(now), 'lease_expires_at', '0')
      redis.call('PEXPIRE', key, int(retention))
      index[#index + 1] = int(now + retention)
      index[#index + 1] = id
    end
    done[#done + 1] = id
    out[#out + 1] = {'OK'}
  end
end

if #done > 0 then
  redis.call('ZREM', KEYS[1], unpack(done))
  if #index > 0 then redis.call('ZADD', KEYS[2], unpack(index)) end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. int(now))
end
return out
