-- _check_keys.lua: for tests only (ScriptRunner's check_declared_keys). Put
-- before lua/_lib.lua, it shadows `redis` with a table whose call and pcall
-- raise an error when a command names a key that the script did not declare
-- in KEYS: the rule of docs/redis-layout.md ("Declared keys") that Redis
-- Cluster relies on to route a script and to redirect it during a slot
-- migration, and that Redis 7 itself does not enforce. A command missing
-- from KEY_ARGS is an error too, so that a new command gets a rule here.
-- Not a script (the runner skips files whose name starts with "_").
local redis = (function(real)
  local declared = {}
  for _, k in ipairs(KEYS) do declared[k] = true end
  -- Which arguments of each command lua/ uses are keys: its first, all, or none.
  local KEY_ARGS = {
    GET = 'first', SET = 'first', INCR = 'first', INCRBY = 'first', PEXPIRE = 'first', PTTL = 'first',
    TYPE = 'first', EXISTS = 'all', DEL = 'all', MGET = 'all',
    HGET = 'first', HSET = 'first', HDEL = 'first', HMGET = 'first', HGETALL = 'first',
    HLEN = 'first', HSTRLEN = 'first', HINCRBY = 'first', HEXISTS = 'first', HSCAN = 'first',
    ZADD = 'first', ZREM = 'first', ZRANGE = 'first', ZRANGEBYSCORE = 'first',
    ZPOPMIN = 'first', ZCARD = 'first', ZCOUNT = 'first', ZSCORE = 'first', ZMSCORE = 'first',
    ZRANGEBYLEX = 'first',
    ZREMRANGEBYSCORE = 'first', SADD = 'first', SREM = 'first', SMEMBERS = 'first',
    SISMEMBER = 'first', HKEYS = 'first', TIME = 'none', SPUBLISH = 'none'}
  local function check(cmd, ...)
    local kind = KEY_ARGS[string.upper(tostring(cmd))]
    if kind == nil then error('declared-keys check: no rule for command ' .. tostring(cmd)) end
    local args = {...}
    local n = 0
    if kind == 'first' then n = 1 elseif kind == 'all' then n = #args end
    for i = 1, n do
      if not declared[args[i]] then
        error('undeclared key ' .. tostring(args[i]) .. ' in ' .. tostring(cmd))
      end
    end
  end
  return setmetatable({
    call = function(cmd, ...) check(cmd, ...) return real.call(cmd, ...) end,
    pcall = function(cmd, ...) check(cmd, ...) return real.pcall(cmd, ...) end,
  }, {__index = real})
end)(redis)
