// Writes the seed corpus of request_fuzzer: valid requests of every kind
// (and a few just past a limit), each as one file holding the kind byte
// followed by the serialized message (fuzz/request_kind.h).
//
//   jobwire_fuzz_seeds <directory>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fuzz/request_kind.h"
#include "google/protobuf/message.h"
#include "jobwire/v1/admin.pb.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::fuzz {
namespace {

std::string dir;
int written = 0;

void Write(const std::string& name, RequestKind kind, const google::protobuf::Message& m) {
  std::string bytes(1, static_cast<char>(kind));
  bytes += m.SerializeAsString();
  std::ofstream(absl::StrCat(dir, "/", name), std::ios::binary) << bytes;
  ++written;
}

v1::EnqueueRequest Job(const std::string& queue, const std::string& type) {
  v1::EnqueueRequest r;
  r.set_queue(queue);
  r.set_type(type);
  r.set_payload("payload");
  return r;
}

// The id enqueue.lua gives the n-th job of a queue (ids count from 1 again
// after each of the fuzzer's FLUSHALLs).
std::string Id(int n) { return absl::StrFormat("%012d", n); }

template <typename Request>
Request Settle(const std::string& queue, const std::string& job_id) {
  Request r;
  r.set_queue(queue);
  r.set_job_id(job_id);
  r.set_lease_token(kLatestToken);
  return r;
}

void WriteAll() {
  using K = RequestKind;
  Write("enqueue-plain", K::kEnqueue, Job("q", "t"));
  v1::EnqueueRequest e = Job("q", "t");
  e.set_priority(7);
  Write("enqueue-priority", K::kEnqueue, e);
  e = Job("q", "t");
  e.set_delay_ms(50);
  Write("enqueue-delay", K::kEnqueue, e);
  e = Job("q", "t");
  e.set_idempotency_key("k1");
  Write("enqueue-idempotent", K::kEnqueue, e);
  e = Job("q", "t");
  e.set_max_attempts(1);
  e.set_backoff_base_ms(1);
  e.set_backoff_max_ms(2);
  Write("enqueue-one-attempt", K::kEnqueue, e);
  e = Job("q", "t");
  e.add_depends_on(Id(1));
  e.add_depends_on("_");
  Write("enqueue-depends-on", K::kEnqueue, e);
  e = Job("other.queue:1", "t2");
  e.set_priority(-1000);
  Write("enqueue-other-queue", K::kEnqueue, e);
  e = Job("q", "t");
  e.set_priority(1001);
  Write("enqueue-bad-priority", K::kEnqueue, e);
  e = Job("q", "t");
  e.set_completed_retention_ms(0);
  Write("enqueue-delete-on-ack", K::kEnqueue, e);
  e.set_completed_retention_ms(60000);
  Write("enqueue-retention-1m", K::kEnqueue, e);
  e.set_completed_retention_ms(8LL * 24 * 3600 * 1000);
  Write("enqueue-retention-above-max", K::kEnqueue, e);

  v1::EnqueueBatchRequest b;
  for (int i = 0; i < 3; ++i) *b.add_jobs() = Job("q", absl::StrCat("t", i));
  Write("batch-three", K::kEnqueueBatch, b);
  b.mutable_jobs(1)->set_idempotency_key("k1");
  b.mutable_jobs(2)->set_idempotency_key("k1");
  Write("batch-same-key", K::kEnqueueBatch, b);
  *b.add_jobs() = Job("bad queue", "t");
  Write("batch-one-invalid", K::kEnqueueBatch, b);

  v1::ClaimRequest c;
  c.add_queues("q");
  Write("claim-one", K::kClaim, c);
  c.set_max_in_flight(10);
  c.set_lease_ms(1000);
  c.add_queues("other.queue:1");
  c.set_worker_id("w");
  Write("claim-many", K::kClaim, c);
  c.add_types("t2");
  c.add_types("t0");
  Write("claim-types", K::kClaim, c);

  for (const std::string& id : {Id(1), Id(2), Id(3), std::string(kLatestJob)}) {
    Write(absl::StrCat("ack-", id), K::kAck, Settle<v1::AckRequest>("q", id));
    v1::FailRequest f = Settle<v1::FailRequest>("q", id);
    f.set_error("boom");
    Write(absl::StrCat("fail-", id), K::kFail, f);
    f.set_non_retryable(true);
    Write(absl::StrCat("fail-final-", id), K::kFail, f);
    v1::ExtendLeaseRequest x = Settle<v1::ExtendLeaseRequest>("q", id);
    x.set_lease_ms(5000);
    Write(absl::StrCat("extend-", id), K::kExtendLease, x);
  }
  v1::FailRequest f = Settle<v1::FailRequest>("q", Id(1));
  f.set_retry_after_ms(1);
  Write("fail-retry-now", K::kFail, f);
  v1::AckRequest a = Settle<v1::AckRequest>("q", Id(1));
  a.set_result("result");
  Write("ack-result", K::kAck, a);

  v1::GetJobRequest g;
  g.set_queue("q");
  g.set_job_id(Id(1));
  Write("get-job", K::kGetJob, g);
  v1::CancelRequest x;
  x.set_queue("q");
  x.set_job_id(Id(2));
  Write("cancel", K::kCancel, x);
  x.set_job_id(kLatestJob);
  Write("cancel-latest", K::kCancel, x);

  Write("list-queues", K::kListQueues, v1::ListQueuesRequest());
  v1::GetQueueStatsRequest s;
  s.set_queue("q");
  Write("queue-stats", K::kGetQueueStats, s);
  for (int state = 1; state <= 4; ++state) {
    v1::ListJobsRequest l;
    l.set_queue("q");
    l.set_state(static_cast<v1::JobState>(state));
    l.set_page_size(2);
    if (state == 2) l.set_page_token("2");
    if (state == 4) l.set_type("t");
    l.set_oldest_first(state % 2 == 0);
    Write(absl::StrCat("list-jobs-", state), K::kListJobs, l);
  }
  v1::RetryDeadRequest r;
  r.set_queue("q");
  r.set_all(true);
  Write("retry-dead-all", K::kRetryDead, r);
  r.set_all(false);
  r.add_job_ids(Id(1));
  r.add_job_ids(Id(2));
  Write("retry-dead-ids", K::kRetryDead, r);
  r.clear_job_ids();
  r.add_job_ids(kLatestJob);
  Write("retry-dead-latest", K::kRetryDead, r);
  v1::DeleteJobRequest d;
  d.set_queue("q");
  d.set_job_id(Id(3));
  Write("delete-job", K::kDeleteJob, d);
  d.set_job_id(kLatestJob);
  Write("delete-latest", K::kDeleteJob, d);
  v1::PurgeDeadRequest p;
  p.set_queue("q");
  Write("purge-dead", K::kPurgeDead, p);
  v1::PauseQueueRequest pause;
  pause.set_queue("q");
  Write("pause", K::kPauseQueue, pause);
  v1::ResumeQueueRequest resume;
  resume.set_queue("q");
  Write("resume", K::kResumeQueue, resume);
}

}  // namespace
}  // namespace jobwire::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <directory>\n", argv[0]);
    return 2;
  }
  jobwire::fuzz::dir = argv[1];
  jobwire::fuzz::WriteAll();
  std::printf("wrote %d seeds to %s\n", jobwire::fuzz::written, argv[1]);
  return 0;
}
