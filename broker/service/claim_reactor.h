// ClaimReactor: the server side of one Claim stream (gRPC callback API).
// Jobs handed over by the Dispatcher are written in order, one message at a
// time: a message carries every job that arrived while the previous one was
// being written (and a claim's jobs together). A client that does not read
// stalls only its own stream (HTTP/2 flow control holds the write in
// progress); behind that write at most max_in_flight jobs wait in memory:
// the Dispatcher never exceeds max_in_flight unsettled jobs, and a waiting
// job whose slot freed (its lease ran out unread) is dropped when a new one
// arrives.
//
// A stream refused by the Dispatcher's stream limits ends at once with
// RESOURCE_EXHAUSTED and never opens a session.
//
// However the stream ends (the client cancels, a write fails, the stream
// reaches its maximum age, the broker drains), the jobs still waiting behind
// the message being written never reached the client: they go back to the
// Dispatcher as the stream is finished (Dispatcher::ReturnUnsent), which
// gives them back to their queues with their attempt undone. A finished
// stream whose client does not read may wait long for OnDone, so this does
// not wait for it. The jobs of a message whose write failed are not
// given back: the client may have read them, so their leases stand.
//
// Lifetime: gRPC owns the reactor until OnDone, which closes the dispatcher
// session and deletes it. The Sink shared with the Dispatcher outlives it and
// refuses jobs once the stream has ended.
#ifndef JOBWIRE_BROKER_SERVICE_CLAIM_REACTOR_H_
#define JOBWIRE_BROKER_SERVICE_CLAIM_REACTOR_H_

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "broker/core/dispatcher.h"
#include "broker/core/metrics.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::service {

class ClaimReactor : public grpc::ServerWriteReactor<v1::ClaimResponse> {
 public:
  // A message holds jobs up to this many bytes (at least one job, whatever
  // its size), well under gRPC clients' default 4 MiB receive limit.
  static constexpr size_t kMaxMessageBytes = 1 << 20;

  // Opens a dispatcher session for `spec` and counts the stream as open in
  // `metrics` until OnDone. `dispatcher` and `metrics` must outlive the
  // stream.
  ClaimReactor(core::Dispatcher* dispatcher, core::Metrics* metrics, core::ClaimSpec spec);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  class Sink : public core::JobSink {
   public:
    // At most `max_queued` jobs wait behind the message being written.
    // `dispatcher` takes back the jobs that wait when the stream ends.
    Sink(ClaimReactor* reactor, core::Dispatcher* dispatcher, int max_queued)
        : max_queued_(static_cast<size_t>(max_queued < 1 ? 1 : max_queued)),
          dispatcher_(dispatcher),
          reactor_(reactor) {}
    bool Deliver(std::vector<v1::ClaimedJob> jobs) override;
    // Queued behind the jobs waiting (so a stop never overtakes its job);
    // a stop already waiting is not queued twice.
    void Stop(v1::StopRun stop) override;
    void Close(const absl::Status& status) override;
    // Called from OnWriteDone: starts the next write if jobs wait.
    void WriteDone(bool ok);
    // Ends the stream with `status` once (no-op afterwards).
    void Finish(const grpc::Status& status);
    // After OnDone: Deliver refuses everything.
    void Detach();

   private:
    // Moves the oldest waiting jobs (up to kMaxMessageBytes) into message_
    // and writes it.
    void StartWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
    // Hands every waiting job back to the dispatcher (the stream ended).
    void ReturnWaiting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

    const size_t max_queued_;
    core::Dispatcher* const dispatcher_;
    absl::Mutex mu_;
    ClaimReactor* reactor_ ABSL_GUARDED_BY(mu_);
    std::deque<v1::ClaimedJob> waiting_ ABSL_GUARDED_BY(mu_);
    // At most one per run delivered on the stream, so at most max_in_flight
    // (a stop for a run no longer held is never passed on).
    std::vector<v1::StopRun> stops_ ABSL_GUARDED_BY(mu_);
    v1::ClaimResponse message_ ABSL_GUARDED_BY(mu_);  // being written (gRPC holds a pointer)
    bool writing_ ABSL_GUARDED_BY(mu_) = false;
    bool finished_ ABSL_GUARDED_BY(mu_) = false;
  };

  core::Dispatcher* const dispatcher_;
  core::Metrics* const metrics_;
  const std::vector<std::string> queues_;  // the stream's, for its metrics
  std::shared_ptr<Sink> sink_;
  std::optional<core::Dispatcher::SessionId> session_;  // none when refused
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_CLAIM_REACTOR_H_
