// AckCoalescer: turns the Acks of a Worker's concurrent handler threads into
// batches, each sent by a Send function (the Worker's: on its Work stream
// when one is open, else an AckBatch call). An ack that finds no AckBatch in flight is sent at once by
// the thread that queued it, together with every ack queued meanwhile (up to
// 1000 acks and 8 MiB of results); that thread keeps sending, one call at a
// time, until a call returns with nothing left queued. Every other thread
// queues its ack and returns without waiting, so under load a handler thread
// goes straight back to work and the calls per job drop to about
// 1 / (acks finishing during one round trip). An ack alone is never delayed.
#ifndef JOBWIRE_CLIENT_CPP_ACK_COALESCER_H_
#define JOBWIRE_CLIENT_CPP_ACK_COALESCER_H_

#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/statusor.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::client {

// Thread safety: Ack and AckAndWait may be called from any number of threads.
class AckCoalescer {
 public:
  // The most acks sent in one AckBatch (the broker's limit).
  static constexpr int kMaxBatch = 1000;
  // The most result bytes sent in one AckBatch, unless one result alone is
  // larger: well under the broker's 64 MiB request limit.
  static constexpr size_t kMaxBatchBytes = 8 << 20;

  // Receives an ack's own outcome (the per-ack status, or the AckBatch
  // call's error, UNAVAILABLE, ..., when the whole call failed) and its
  // request back, for a retry.
  using Done = std::function<void(absl::Status status, v1::AckRequest request)>;

  // Sends one batch and returns one status per ack, or the error of the
  // batch as a whole (Client::AckBatch's contract).
  using Send =
      std::function<absl::StatusOr<std::vector<absl::Status>>(const v1::AckBatchRequest& batch)>;

  explicit AckCoalescer(Send send) : send_(std::move(send)) {}

  // Queues one ack. `done` is called exactly once, on the thread that sends
  // the call carrying it: this one (before Ack returns) when no call was in
  // flight, else the sending thread. While this thread sends, it also runs
  // the `done` of the other acks in its calls, so `done` must not block for
  // long.
  void Ack(v1::AckRequest request, Done done);

  // Acks one job, as Client::Ack would, and returns its outcome once the
  // call carrying it has answered.
  absl::Status AckAndWait(v1::AckRequest request);

 private:
  struct Entry {
    v1::AckRequest request;
    Done done;
  };

  const Send send_;
  absl::Mutex mu_;
  std::deque<Entry> queued_ ABSL_GUARDED_BY(mu_);
  bool sending_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_ACK_COALESCER_H_
