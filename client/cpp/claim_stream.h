// ClaimStream: a Worker's Claim streams, one after another until it stops
// (docs/clients.md, Worker: Delivery, and the reconnect rule). Each stream is
// opened with max_in_flight = the worker's free handler slots at that moment
// and hands every message it delivers to the worker. A stream that ends for
// any reason (broker restart or shutdown, UNAVAILABLE, ...) is reopened after
// a Backoff from 100 ms doubling to 5 s with full jitter (each wait uniform
// in [0, bound]), whose bound is reset to 100 ms once a stream delivers a
// message. INVALID_ARGUMENT (the broker rejects the Claim request) is fatal:
// no stream is reopened.
#ifndef JOBWIRE_CLIENT_CPP_CLAIM_STREAM_H_
#define JOBWIRE_CLIENT_CPP_CLAIM_STREAM_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/cpp/backoff.h"
#include "client/cpp/client.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::client {

// Thread safety: Run runs on one thread; Stop may be called from any thread
// at any time, also before Run and while the caller holds a lock of its own
// (it takes only the stream's own lock). The callbacks are called on Run's
// thread, without the stream's lock held.
class ClaimStream {
 public:
  // The reconnect backoff: from kInitialBackoff doubling to kMaxBackoff.
  static constexpr absl::Duration kInitialBackoff = absl::Milliseconds(100);
  static constexpr absl::Duration kMaxBackoff = absl::Seconds(5);

  struct Params {
    // Opens the streams. Must outlive the ClaimStream.
    Client* client = nullptr;
    // The ClaimRequest of every stream: queues, lease_ms (0: the broker's
    // default), worker_id. max_in_flight is set per stream, types by Run.
    v1::ClaimRequest request;
    // Blocks until the worker has a free handler slot and returns how many
    // it has (>= 1), or returns 0 at once when the worker is stopping (then
    // Run returns OK).
    std::function<int()> await_free_slots;
    // Takes the jobs of one stream message, in stream order.
    std::function<void(const v1::ClaimResponse&)> receive;
    // One line per stream that ended with its status, before the backoff.
    std::function<void(const std::string&)> log;
  };

  explicit ClaimStream(Params params);

  ClaimStream(const ClaimStream&) = delete;
  ClaimStream& operator=(const ClaimStream&) = delete;

  // Opens streams, each taking jobs of `types` only (ClaimRequest.types: the
  // worker's handler types), until Stop, or until await_free_slots returns
  // 0: returns OK then. Returns INVALID_ARGUMENT (the broker's status) when
  // the broker rejects the Claim request. Every other end of a stream is
  // retried.
  // REQUIRES: called once.
  absl::Status Run(const std::vector<std::string>& types);

  // Cancels the open stream (if any), ends a backoff wait and makes Run
  // return OK; no stream is opened after it.
  void Stop();

 private:
  // Opens one stream and reads it to its end; returns its status. Resets
  // `backoff` once the stream delivers. OK without opening when stopped.
  absl::Status ReadOneStream(const v1::ClaimRequest& base, int free_slots, Backoff* backoff);

  const Params params_;
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // The context of the open stream, for Stop to cancel; null between streams.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_CLAIM_STREAM_H_
