-- fail.lua: settles a failed run reported by the holder of the current lease:
-- a retry after the backoff (or retry_after_ms), or dead when the attempts
-- are used up or the failure is non-retryable. Repeating a successful fail
-- with the same token returns the same outcome and changes nothing.
--
-- KEYS[1] {p}:{q}:job:<id>
-- KEYS[2] {p}:{q}:active
-- KEYS[3] {p}:{q}:scheduled
-- KEYS[4] {p}:{q}:dead
-- ARGV[1] job id   ARGV[2] lease token   ARGV[3] error text
-- ARGV[4] non_retryable ('1' or '0')   ARGV[5] retry_after_ms (0 = backoff)
-- ARGV[6] jitter seed   ARGV[7] notify channel {p}:{q}:notify
-- Returns {'OK', 'retry'|'dead', next_attempt_at_ms} | {'NOT_FOUND'} |
-- {'STALE'} | {'STATE', state}.
local f = redis.call('HMGET', KEYS[1], 'state', 'lease_token', 'available_at')
if not f[1] then return {'NOT_FOUND'} end
if f[2] ~= ARGV[2] then return {'STALE'} end
if f[1] == 'pending' then return {'OK', 'retry', tonumber(f[3])} end
if f[1] == 'dead' then return {'OK', 'dead', 0} end
if f[1] ~= 'active' then return {'STATE', f[1]} end

math.randomseed(tonumber(ARGV[6]))
local outcome, at = settle_failure(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[7], ARGV[1],
                                   ARGV[3], ARGV[4] == '1', tonumber(ARGV[5]), now_ms())
return {'OK', outcome, at}
