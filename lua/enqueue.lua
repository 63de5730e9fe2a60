-- enqueue.lua: stores one new pending job, or finds the job that already
-- holds the idempotency key. The key and the job are written together.
--
-- KEYS[1]  {p}:{q}:seq         job id counter
-- KEYS[2]  {p}:{q}:ready       due jobs
-- KEYS[3]  {p}:{q}:scheduled   jobs due later
-- KEYS[4]  {p}:{q}:idem:<key>  idempotency key (unused when ARGV[7] is '')
-- ARGV[1]  job key prefix {p}:{q}:job:
-- ARGV[2]  type             ARGV[3]  payload
-- ARGV[4]  priority         ARGV[5]  delay_ms (>= 0)
-- ARGV[6]  run_at_ms (0 = not set; a past time means now)
-- ARGV[7]  idempotency key ('' = none)
-- ARGV[8]  dedup window ms  ARGV[9]  max_attempts
-- ARGV[10] backoff base ms  ARGV[11] backoff max ms
-- ARGV[12] notify channel {p}:{q}:notify
-- Returns {job_id, duplicate}: duplicate is 1 when the idempotency key was
-- known (nothing written), else 0. Publishes the delay until the job is due.
local idem = ARGV[7]
if idem ~= '' then
  local existing = redis.call('GET', KEYS[4])
  if existing then return {existing, 1} end
end

local now = now_ms()
local id = string.format('%012d', redis.call('INCR', KEYS[1]))
local priority = tonumber(ARGV[4])
local available_at = now + tonumber(ARGV[5])
local run_at = tonumber(ARGV[6])
if run_at > available_at then available_at = run_at end

redis.call('HSET', ARGV[1] .. id,
  'type', ARGV[2], 'payload', ARGV[3], 'priority', ARGV[4], 'state', 'pending',
  'attempts', '0', 'max_attempts', ARGV[9], 'available_at', int(available_at),
  'created_at', int(now), 'idempotency_key', idem,
  'backoff_base', ARGV[10], 'backoff_max', ARGV[11])
if available_at <= now then
  redis.call('ZADD', KEYS[2], ready_score(priority, available_at), id)
else
  redis.call('ZADD', KEYS[3], int(available_at), id)
end
if idem ~= '' then
  redis.call('SET', KEYS[4], id, 'PX', ARGV[8])
end
redis.call('PUBLISH', ARGV[12], int(available_at - now))
return {id, 0}
