// RequestKind: which request message a fuzz input holds. The first byte of
// an input picks the kind (modulo kRequestKinds); the rest is the serialized
// message. Shared by the fuzz target and the seed corpus generator.
#ifndef JOBWIRE_FUZZ_REQUEST_KIND_H_
#define JOBWIRE_FUZZ_REQUEST_KIND_H_

#include <cstdint>

namespace jobwire::fuzz {

enum class RequestKind : uint8_t {
  // jobwire.v1.BrokerService
  kEnqueue = 0,
  kEnqueueBatch,
  kClaim,
  kAck,
  kFail,
  kExtendLease,
  kGetJob,
  kCancel,
  // jobwire.v1.AdminService
  kListQueues,
  kGetQueueStats,
  kListJobs,
  kRetryDead,
  kDeleteJob,
  kPurgeDead,
  kPauseQueue,
  kResumeQueue,
};
inline constexpr int kRequestKinds = 16;

// The request message's name ("Enqueue", "PurgeDead"), for messages.
inline const char* RequestKindName(RequestKind kind) {
  static constexpr const char* kNames[kRequestKinds] = {
      "Enqueue",    "EnqueueBatch",  "Claim",    "Ack",       "Fail",      "ExtendLease",
      "GetJob",     "Cancel",        "ListQueues", "GetQueueStats", "ListJobs", "RetryDead",
      "DeleteJob",  "PurgeDead",     "PauseQueue", "ResumeQueue"};
  return kNames[static_cast<int>(kind) % kRequestKinds];
}

// A lease token of "*" in an Ack, Fail or ExtendLease input stands for the
// token of the latest claim of that job in this fuzz process, so that
// inputs can reach the settle paths (real tokens are random).
inline constexpr char kLatestToken[] = "*";

// A job id of "_" stands for the job of that queue that this fuzz process
// claimed last (Ack, Fail, ExtendLease, RetryDead) or enqueued last (GetJob,
// Cancel, DeleteJob), falling back to the other, so that inputs reach live
// jobs (ids are counters that restart at each FLUSHALL).
inline constexpr char kLatestJob[] = "_";

}  // namespace jobwire::fuzz

#endif  // JOBWIRE_FUZZ_REQUEST_KIND_H_
