#include "fuzz/job_view.h"

#include "broker/store/job_record.h"
#include "broker/store/keys.h"

namespace jobwire::fuzz {
namespace {

// A function of the library ScriptRunner builds, after lua/_lib.lua's
// helpers. KEYS: per job, its queue's jobs, payloads,
// results and completed keys; ARGV: the job ids. Returns one {fields, ttl}
// per job: the job as the store's scripts answer it (job_reply; empty when
// there is no record, or for a completed job whose retention has ended,
// which the next trim deletes), ttl the ms left of a completed job's
// retention (its completed-index score - now), -1 for a job in another state.
constexpr char kReadScript[] = R"lua(#!lua flags=no-writes
local now = now_ms()
local out = {}
for i, id in ipairs(ARGV) do
  local jobs, payloads, results, completed = KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1],
                                             KEYS[4 * i]
  local packed = redis.call('HGET', jobs, id)
  local fields, ttl = {}, -1
  if packed then
    local job = job_unpack(packed)
    fields = job_reply(packed, redis.call('HGET', payloads, id), redis.call('HGET', results, id))
    local expiry = tonumber(redis.call('ZSCORE', completed, id))
    if job[F.state] == 'completed' and expiry then
      ttl = expiry - now
      if ttl <= 0 then fields = {} end
    end
  end
  out[i] = {fields, ttl}
end
return out
)lua";

const char* StateName(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_PENDING:
      return "pending";
    case v1::JOB_STATE_ACTIVE:
      return "active";
    case v1::JOB_STATE_COMPLETED:
      return "completed";
    case v1::JOB_STATE_DEAD:
      return "dead";
    default:
      return "unspecified";
  }
}

JobView ViewOfRecord(const store::RedisReply& job, int64_t pttl) {
  std::string lease_token;
  JobView v = ViewOfJob(store::JobFromReply("", "", job, &lease_token));
  v.exists = !job.elements.empty();
  v.lease_token = lease_token;
  v.pttl = pttl;
  return v;
}

}  // namespace

JobView ViewOfJob(const v1::Job& job) {
  JobView v;
  v.exists = true;
  v.state = StateName(job.state());
  v.attempts = job.attempts();
  v.max_attempts = job.max_attempts();
  v.priority = job.priority();
  v.available_at = job.available_at_ms();
  v.lease_expires_at = job.lease_expires_at_ms();
  v.finished_at = job.finished_at_ms();
  v.created_at = job.created_at_ms();
  v.backoff_base = job.backoff_base_ms();
  v.backoff_max = job.backoff_max_ms();
  v.type = job.type();
  v.payload = job.payload();
  v.result = job.result();
  v.error = job.error();
  v.idempotency_key = job.idempotency_key();
  v.worker_id = job.worker_id();
  return v;
}

store::LuaSource ReadJobsFunction() { return {kReadJobsFunction, kReadScript}; }

ReadJobsArguments ReadJobsArgumentsFor(const std::string& key_prefix,
                                       const std::vector<JobRef>& jobs) {
  ReadJobsArguments out;
  for (const JobRef& ref : jobs) {
    const store::Keys k(key_prefix, ref.first);
    for (std::string key : {k.Jobs(), k.Payloads(), k.Results(), k.Completed()}) {
      out.keys.push_back(std::move(key));
    }
    out.ids.push_back(ref.second);
  }
  return out;
}

std::optional<std::vector<JobView>> ParseReadJobsReply(const store::RedisReply& reply,
                                                       size_t keys) {
  if (reply.type != store::RedisReply::Type::kArray || reply.elements.size() != keys) {
    return std::nullopt;
  }
  std::vector<JobView> views;
  views.reserve(keys);
  for (const store::RedisReply& e : reply.elements) {
    if (e.elements.size() != 2) return std::nullopt;
    views.push_back(ViewOfRecord(e.elements[0], e.elements[1].AsInt(-2)));
  }
  return views;
}

}  // namespace jobwire::fuzz
