// RequestKind: which request message a fuzz input holds. The first byte of
// an input picks the kind (modulo kRequestKinds); the rest is the serialized
// message. Shared by the fuzz target and the seed corpus generator.
#ifndef JOBWIRE_FUZZ_REQUEST_KIND_H_
#define JOBWIRE_FUZZ_REQUEST_KIND_H_

#include <cstdint>

namespace jobwire::fuzz {

enum class RequestKind : uint8_t {
  // jobwire.v1.Broker
  kEnqueue = 0,
  kEnqueueBatch,
  kClaim,
  kAck,
  kFail,
  kExtendLease,
  kGetJob,
  kCancel,
  // jobwire.v1.Admin
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

// A lease token of "*" in an Ack, Fail or ExtendLease input stands for the
// token of the latest claim of that job in this fuzz process, so that
// inputs can reach the settle paths (real tokens are random).
inline constexpr char kLatestToken[] = "*";

}  // namespace jobwire::fuzz

#endif  // JOBWIRE_FUZZ_REQUEST_KIND_H_
