#include "fuzz/job_view.h"

#include "absl/strings/numbers.h"

namespace jobwire::fuzz {
namespace {

// KEYS: job hashes. Returns one {fields (HGETALL), pttl} per key.
constexpr char kReadScript[] = R"lua(
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = {redis.call('HGETALL', key), redis.call('PTTL', key)}
end
return out
)lua";

int64_t ToInt(const std::string& s) {
  int64_t v = 0;
  return absl::SimpleAtoi(s, &v) ? v : 0;
}

const char* StateName(v1::JobState s) {
  switch (s) {
    case v1::PENDING:
      return "pending";
    case v1::ACTIVE:
      return "active";
    case v1::COMPLETED:
      return "completed";
    case v1::DEAD:
      return "dead";
    default:
      return "unspecified";
  }
}

JobView ViewOfHash(const store::RedisReply& fields, int64_t pttl) {
  JobView v;
  v.exists = !fields.elements.empty();
  v.lease_token = "";
  v.pttl = pttl;
  for (size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
    const std::string& name = fields.elements[i].str;
    const std::string& s = fields.elements[i + 1].str;
    if (name == "state") v.state = s;
    else if (name == "attempts") v.attempts = ToInt(s);
    else if (name == "max_attempts") v.max_attempts = ToInt(s);
    else if (name == "priority") v.priority = ToInt(s);
    else if (name == "available_at") v.available_at = ToInt(s);
    else if (name == "lease_expires_at") v.lease_expires_at = ToInt(s);
    else if (name == "finished_at") v.finished_at = ToInt(s);
    else if (name == "created_at") v.created_at = ToInt(s);
    else if (name == "backoff_base") v.backoff_base = ToInt(s);
    else if (name == "backoff_max") v.backoff_max = ToInt(s);
    else if (name == "type") v.type = s;
    else if (name == "payload") v.payload = s;
    else if (name == "result") v.result = s;
    else if (name == "error") v.error = s;
    else if (name == "idempotency_key") v.idempotency_key = s;
    else if (name == "worker_id") v.worker_id = s;
    else if (name == "lease_token") v.lease_token = s;
  }
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

std::vector<std::string> ReadJobsCommand(const std::vector<std::string>& job_keys) {
  std::vector<std::string> argv = {"EVAL", kReadScript, std::to_string(job_keys.size())};
  argv.insert(argv.end(), job_keys.begin(), job_keys.end());
  return argv;
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
    views.push_back(ViewOfHash(e.elements[0], e.elements[1].AsInt(-2)));
  }
  return views;
}

}  // namespace jobwire::fuzz
