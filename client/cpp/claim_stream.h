// ClaimStream: a Worker's Claim streams, one after another until it stops
// (docs/clients.md, Worker: Delivery, and the reconnect rule). Each stream is
// opened with max_in_flight = the worker's free handler slots at that moment
// and hands every message it delivers to the worker. The streams are Work
// streams, which also carry the worker's acks (SendAcks); a broker that
// answers Work with UNIMPLEMENTED is sent Claim streams from then on, and
// SendAcks declines (the acks then go as AckBatch calls). A stream that ends for
// any reason (broker restart or shutdown, UNAVAILABLE, ...) is reopened after
// a Backoff from 100 ms doubling to 5 s with full jitter (each wait uniform
// in [0, bound]), whose bound is reset to 100 ms once a stream delivers a
// message. INVALID_ARGUMENT (the broker rejects the Claim request) is fatal:
// no stream is reopened.
#ifndef JOBWIRE_CLIENT_CPP_CLAIM_STREAM_H_
#define JOBWIRE_CLIENT_CPP_CLAIM_STREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
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

  // Sends `batch` on the open Work stream and waits for its answer: one
  // status per ack, or the error of the batch as a whole; at most the
  // client's timeout (the unary calls' deadline), then DEADLINE_EXCEEDED
  // for the batch, as for an AckBatch call (a late answer is ignored).
  // nullopt when no
  // Work stream is open, or when it ended before answering (the acks may
  // or may not have been stored: send them again another way; a repeated
  // ack answers OK). Safe from any thread, except the callbacks'.
  std::optional<absl::StatusOr<std::vector<absl::Status>>> SendAcks(
      const v1::AckBatchRequest& batch);

 private:
  // Opens one stream and reads it to its end; returns its status. Resets
  // `backoff` once the stream delivers. OK without opening when stopped.
  absl::Status ReadOneStream(const v1::ClaimRequest& base, int free_slots, Backoff* backoff);
  // ReadOneStream's two kinds of stream, opened on `context` with `request`.
  absl::Status ReadClaimStream(grpc::ClientContext* context, const v1::ClaimRequest& request,
                               Backoff* backoff);
  absl::Status ReadWorkStream(grpc::ClientContext* context, const v1::ClaimRequest& request,
                              Backoff* backoff);

  // One batch sent on the Work stream, waiting for its answer.
  struct PendingAcks {
    int acks = 0;
    absl::Notification done;
    // Set before `done`: the answer, or nullopt when the stream ended first.
    std::optional<absl::StatusOr<std::vector<absl::Status>>> answer;
  };
  using WorkStream = grpc::ClientReaderWriter<v1::WorkRequest, v1::WorkResponse>;

  // Resolves the batches `message` answers.
  void Answered(const v1::WorkResponse& message);
  // The Work stream ended: stops SendAcks and resolves every batch still
  // waiting with nullopt.
  void WorkEnded();

  const Params params_;
  // Held while writing on the Work stream (one writer at a time), and by
  // WorkEnded, so that a stream is finished only once no write is in
  // progress.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // The context of the open stream, for Stop to cancel; null between streams.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The broker answered Work with UNIMPLEMENTED: Claim streams from then on.
  bool claim_only_ ABSL_GUARDED_BY(mu_) = false;
  // The open Work stream, for SendAcks; null when none is open.
  WorkStream* work_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t next_acks_id_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, std::shared_ptr<PendingAcks>> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_CLAIM_STREAM_H_
