// AckCoalescer: turns the Acks of a Worker's concurrent handler threads into
// AckBatch calls. A thread whose ack finds no AckBatch in flight sends every
// queued ack (up to 1000 acks and 8 MiB of results) in one call and hands the
// answers out; acks queued while that call is in flight go in the next one.
// An ack alone is sent at once, so coalescing adds no delay; under load the
// calls per job drop to about 1 / (acks finishing during one round trip).
#ifndef JOBWIRE_CLIENT_CPP_ACK_COALESCER_H_
#define JOBWIRE_CLIENT_CPP_ACK_COALESCER_H_

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/cpp/client.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::client {

// Thread safety: Ack may be called from any number of threads.
class AckCoalescer {
 public:
  // The most acks sent in one AckBatch (the broker's limit).
  static constexpr int kMaxBatch = 1000;
  // The most result bytes sent in one AckBatch, unless one result alone is
  // larger: well under the broker's 64 MiB request limit.
  static constexpr size_t kMaxBatchBytes = 8 << 20;

  // `client` must outlive the coalescer.
  explicit AckCoalescer(Client* client) : client_(client) {}

  // Acks one job, as Client::Ack would, and returns its own outcome: the
  // per-ack status, or the AckBatch call's error (UNAVAILABLE, ...) when the
  // whole call failed. Blocks until the call carrying it has answered.
  absl::Status Ack(v1::AckRequest request);

 private:
  struct Entry {
    v1::AckRequest request;
    absl::Status status;
    bool done = false;
  };

  Client* const client_;
  absl::Mutex mu_;
  std::deque<Entry*> queued_ ABSL_GUARDED_BY(mu_);
  bool sending_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_ACK_COALESCER_H_
