-- _check_keys.lua: for tests only (ScriptRunner's check_declared_keys). Put
-- before lua/_lib.lua, it shadows `redis` with a table whose call and pcall
-- raise an error when a command names a key that the script did not declare
-- in KEYS (each script's function declares them first, with
-- begin_checked_call(KEYS)): the rule of docs/redis-layout.md ("Declared
-- keys") that Redis Cluster relies on to route a script and to redirect it
-- during a slot migration, and that Redis 7 itself does not enforce. A
-- command missing from KEY_ARGS is an error too, so that a new command gets
-- a rule here. Not a script (the runner skips files whose name starts with
-- "_").

-- The keys the running script declared.
local DECLARED = {}
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
    if not DECLARED[args[i]] then
      error('undeclared key ' .. tostring(args[i]) .. ' in ' .. tostring(cmd))
    end
  end
end
-- The checking `redis`: completed by the first call, since a library's top
-- level runs without setmetatable and sees only a loader's `redis`. The
-- real `redis` global is the one a call sees, which this file's `local
-- redis` hides only from the code after it.
local CHECKED = {}
local function begin_checked_call(keys)
  DECLARED = {}
  for _, k in ipairs(keys) do DECLARED[k] = true end
  if CHECKED.call == nil then
    local real = redis
    CHECKED.call = function(cmd, ...) check(cmd, ...) return real.call(cmd, ...) end
    CHECKED.pcall = function(cmd, ...) check(cmd, ...) return real.pcall(cmd, ...) end
    setmetatable(CHECKED, {__index = real})
  end
end
local redis = CHECKED
