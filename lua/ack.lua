#!lua flags=allow-oom
-- ack.lua: completes active jobs of one queue, each for the holder of its
-- current lease, and stores their results; a completed job hash then expires
-- after the retention time. Each job is settled on its own: one job's error
-- does not stop the others. Repeating a successful ack with the same token
-- changes nothing and answers OK marked as a repeat.
--
-- KEYS[1] {p}:{q}:active
-- KEYS[2] {p}:{q}:completed
-- ARGV[1] job key prefix {p}:{q}:job:
-- ARGV[2] completed retention ms
-- ARGV[3 + 3k], ARGV[4 + 3k], ARGV[5 + 3k]: job id, lease token, result of
-- the k-th job (k = 0, 1, ...; at least one job)
-- Returns one reply per job, in order: {'OK'} | {'OK', 'repeat'} (already
-- completed with this token) | {'NOT_FOUND'} | {'STALE'} (token is not the
-- current lease) | {'STATE', state} (the job is not active).
--
-- Over Redis' maxmemory (noeviction): runs (allow-oom): finishing work
-- always succeeds.
local prefix = ARGV[1]
local retention = tonumber(ARGV[2])
local now = now_ms()
local out = {}
local done = {}
for i = 3, #ARGV, 3 do
  local id, token = ARGV[i], ARGV[i + 1]
  local key = prefix .. id
  local f = redis.call('HMGET', key, 'state', 'lease_token')
  if not f[1] then
    out[#out + 1] = {'NOT_FOUND'}
  elseif f[2] ~= token then
    out[#out + 1] = {'STALE'}
  elseif f[1] == 'completed' then
    out[#out + 1] = {'OK', 'repeat'}
  elseif f[1] ~= 'active' then
    out[#out + 1] = {'STATE', f[1]}
  else
    redis.call('HSET', key, 'state', 'completed', 'result', ARGV[i + 2],
               'finished_at', int(now), 'lease_expires_at', '0')
    redis.call('PEXPIRE', key, ARGV[2])
    done[#done + 1] = id
    out[#out + 1] = {'OK'}
  end
end

if #done > 0 then
  redis.call('ZREM', KEYS[1], unpack(done))
  local args = {}
  for _, id in ipairs(done) do
    args[#args + 1] = int(now)
    args[#args + 1] = id
  end
  redis.call('ZADD', KEYS[2], unpack(args))
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. int(now - retention))
end
return out
