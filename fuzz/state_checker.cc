#include "fuzz/state_checker.h"

namespace jobwire::fuzz {
namespace {

// ARGV[1]: key prefix. Returns violations as strings.
constexpr char kCheckScript[] = R"lua(
local prefix = ARGV[1]
local bad = {}
local jobs = 0
local sets = {'ready', 'scheduled', 'active', 'completed', 'dead'}
local want = {pending = {ready = true, scheduled = true}, active = {active = true},
              completed = {completed = true}, dead = {dead = true}}
local function note(s) if #bad < 100 then bad[#bad + 1] = s end end
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', prefix .. ':{*}:*', 'COUNT', 1000)
  cursor = r[1]
  for _, key in ipairs(r[2]) do
    local q, rest = string.match(key, '^[^{]*:{([^}]*)}:(.*)$')
    local base = prefix .. ':{' .. tostring(q) .. '}:'
    if q == nil then
      note('unparsed key ' .. key)
    elseif string.sub(rest, 1, 4) == 'job:' then
      local id = string.sub(rest, 5)
      jobs = jobs + 1
      if redis.call('TYPE', key).ok ~= 'hash' then
        note(key .. ' is not a hash')
      else
        local state = redis.call('HGET', key, 'state')
        local allowed = want[state or '']
        if allowed == nil then
          note(key .. ' has state ' .. tostring(state))
        else
          local found = 0
          for _, set in ipairs(sets) do
            local member = redis.call('ZSCORE', base .. set, id)
            if member then
              if allowed[set] then found = found + 1
              else note(key .. ' (' .. state .. ') is in ' .. set) end
            end
          end
          if found ~= 1 then
            note(key .. ' (' .. state .. ') is in ' .. found .. ' of its zsets')
          end
        end
      end
    elseif string.sub(rest, 1, 6) == 'acked:' then
      -- The tombstone of a job deleted on ack: it expires, and its job is gone.
      if redis.call('PTTL', key) <= 0 then note(key .. ' has no expiry') end
      if redis.call('EXISTS', base .. 'job:' .. string.sub(rest, 7)) == 1 then
        note(key .. ' is the tombstone of a job hash that exists')
      end
    else
      for _, set in ipairs(sets) do
        if rest == set then
          for _, id in ipairs(redis.call('ZRANGE', key, 0, -1)) do
            local state = redis.call('HGET', base .. 'job:' .. id, 'state')
            if state == false then
              if set ~= 'completed' then note(key .. ' holds ' .. id .. ' without a job hash') end
            elseif not want[state] or not want[state][set] then
              note(key .. ' holds ' .. id .. ' in state ' .. tostring(state))
            end
          end
        end
      end
    end
  end
until cursor == '0'
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
