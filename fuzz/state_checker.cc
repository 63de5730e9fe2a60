#include "fuzz/state_checker.h"

namespace jobwire::fuzz {
namespace {

// ARGV[1]: key prefix. Returns violations as strings.
constexpr char kCheckScript[] = R"lua(
local prefix = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local bad = {}
local jobs = 0
local sets = {'ready', 'scheduled', 'active', 'completed', 'dead'}
local want = {pending = {ready = true, scheduled = true}, active = {active = true},
              completed = {completed = true}, dead = {dead = true}}
local function note(s) if #bad < 100 then bad[#bad + 1] = s end end
-- Pairs of a field and its value, from HGETALL / ZRANGE WITHSCORES.
local function pairs_of(reply)
  local t = {}
  for i = 1, #reply, 2 do t[reply[i]] = reply[i + 1] end
  return t
end
local queues = {}
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', prefix .. ':{*}:*', 'COUNT', 1000)
  cursor = r[1]
  for _, key in ipairs(r[2]) do
    local q = string.match(key, '^[^{]*:{([^}]*)}:.*$')
    if q == nil then note('unparsed key ' .. key) else queues[q] = true end
  end
until cursor == '0'
for q in pairs(queues) do
  local base = prefix .. ':{' .. q .. '}:'
  -- Job id -> state, from the records (cmsgpack; field 1 is the state).
  local states, types = {}, {}
  local keyed_active = {}  -- concurrency key (field 26) -> active jobs of it
  local records = pairs_of(redis.call('HGETALL', base .. 'jobs'))
  records['#listened'] = nil  -- the queue's listen mark, not a job (lua/listen_events.lua)
  for id, packed in pairs(records) do
    local ok, rec = pcall(cmsgpack.unpack, packed)
    -- A completed job past its retention is gone for every reader (the next
    -- trim deletes its record): not counted.
    local expiry = tonumber(redis.call('ZSCORE', base .. 'completed', id))
    if not (ok and type(rec) == 'table' and rec[1] == 'completed' and expiry and expiry < now) then
      jobs = jobs + 1
    end
    if not ok or type(rec) ~= 'table' then
      note(base .. 'jobs ' .. id .. ' does not unpack')
    else
      states[id], types[id] = rec[1], rec[2]
      if rec[1] == 'active' and type(rec[26]) == 'string' and rec[26] ~= '' then
        keyed_active[rec[26]] = (keyed_active[rec[26]] or 0) + 1
      end
      local allowed = want[rec[1] or '']
      if allowed == nil then
        note(base .. 'jobs ' .. id .. ' has state ' .. tostring(rec[1]))
      else
        local found = 0
        for _, set in ipairs(sets) do
          if redis.call('ZSCORE', base .. set, id) then
            if allowed[set] then found = found + 1
            else note(base .. 'jobs ' .. id .. ' (' .. rec[1] .. ') is in ' .. set) end
          end
        end
        if found ~= 1 then
          note(base .. 'jobs ' .. id .. ' (' .. rec[1] .. ') is in ' .. found .. ' of its zsets')
        end
      end
    end
  end
  for _, set in ipairs(sets) do
    for _, id in ipairs(redis.call('ZRANGE', base .. set, 0, -1)) do
      local state = states[id]
      if state == nil then
        note(base .. set .. ' holds ' .. id .. ' without a job record')
      elseif not want[state] or not want[state][set] then
        note(base .. set .. ' holds ' .. id .. ' in state ' .. tostring(state))
      end
    end
  end
  -- The ready set's index by type: one member per ready job, naming its
  -- type and ready score (lua/_lib.lua, type_member), and nothing else.
  local indexed = {}
  for _, member in ipairs(redis.call('ZRANGE', base .. 'ready_by_type', 0, -1)) do
    indexed[member] = true
  end
  local ready = pairs_of(redis.call('ZRANGE', base .. 'ready', 0, -1, 'WITHSCORES'))
  local ready_count = 0
  for id, score in pairs(ready) do
    ready_count = ready_count + 1
    local t = type(types[id]) == 'string' and types[id] or ''
    local member = string.format('%03d', #t) .. t .. string.format('%016d', tonumber(score)) .. id
    if not indexed[member] then note(base .. 'ready_by_type lacks ready job ' .. id) end
  end
  local index_count = redis.call('ZCARD', base .. 'ready_by_type')
  if index_count ~= ready_count then
    note(base .. 'ready_by_type holds ' .. index_count .. ' members for ' .. ready_count ..
         ' ready jobs')
  end
  -- Each concurrency key's count of active jobs (lua/_lib.lua, key_release)
  -- is the number of active jobs with that key, and nothing else is counted.
  local counted = pairs_of(redis.call('HGETALL', base .. 'key_active'))
  for key, n in pairs(keyed_active) do
    if tonumber(counted[key]) ~= n then
      note(base .. 'key_active counts ' .. tostring(counted[key]) .. ' for key ' .. key ..
           ' with ' .. n .. ' active jobs')
    end
  end
  for key, n in pairs(counted) do
    if keyed_active[key] == nil then
      note(base .. 'key_active counts ' .. n .. ' for key ' .. key .. ' without active jobs')
    end
  end
  for _, hash in ipairs({'payloads', 'results'}) do
    for _, id in ipairs(redis.call('HKEYS', base .. hash)) do
      if states[id] == nil then note(base .. hash .. ' holds ' .. id .. ' without a job record') end
    end
  end
  -- Tombstones of jobs deleted on ack: each has an expiry, and its job is gone.
  local expiry = pairs_of(redis.call('ZRANGE', base .. 'acked_expiry', 0, -1, 'WITHSCORES'))
  for _, id in ipairs(redis.call('HKEYS', base .. 'acked')) do
    if expiry[id] == nil then note(base .. 'acked ' .. id .. ' has no expiry') end
    if states[id] ~= nil then note(base .. 'acked ' .. id .. ' is the tombstone of a job that exists') end
  end
  local idem_expiry = pairs_of(redis.call('ZRANGE', base .. 'idem_expiry', 0, -1, 'WITHSCORES'))
  for _, key in ipairs(redis.call('HKEYS', base .. 'idem')) do
    if idem_expiry[key] == nil then note(base .. 'idem ' .. key .. ' has no expiry') end
  end
end
return {bad, jobs}
)lua";

}  // namespace

absl::StatusOr<std::vector<std::string>> CheckStoredState(testing::RedisServer& redis,
                                                          const std::string& key_prefix,
                                                          int64_t* job_hashes) {
  absl::StatusOr<testing::RedisReply> reply =
      redis.CommandArgv({"EVAL", kCheckScript, "0", key_prefix});
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return absl::InternalError(reply->str);
  if (reply->elements.size() != 2) return absl::InternalError("unexpected check reply");
  std::vector<std::string> violations;
  for (const testing::RedisReply& e : reply->elements[0].elements) violations.push_back(e.str);
  *job_hashes = reply->elements[1].integer;
  return violations;
}

}  // namespace jobwire::fuzz
