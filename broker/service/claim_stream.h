// ClaimStream: what the Dispatcher holds of one Claim or Work stream. It
// opens and closes the stream's dispatcher session, queues what the
// stream must write (jobs handed over by the Dispatcher, stop requests,
// and on a Work stream the answers to acks), and writes it through its
// Writer (the gRPC reactor) one message at a time: a message carries
// everything that arrived while the previous one was being written (and a
// claim's jobs together). A client that does not read stalls only its own
// stream (HTTP/2 flow control holds the write in progress); behind that
// write at most max_in_flight jobs wait in memory: the Dispatcher never
// exceeds max_in_flight unsettled jobs, and a waiting job whose slot freed
// (its lease ran out unread) is dropped when a new one arrives.
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
// Lifetime: the reactor owns a shared_ptr and calls Detach from its OnDone;
// the Dispatcher's shared_ptr may outlive the reactor, and after Detach
// everything handed over is refused.
//
// Thread safety: every method may be called from any thread. The Writer's
// calls are made with this object's mutex held, so a Writer never sees two
// at once, and never one after Finish or Detach.
#ifndef JOBWIRE_BROKER_SERVICE_CLAIM_STREAM_H_
#define JOBWIRE_BROKER_SERVICE_CLAIM_STREAM_H_

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "broker/core/dispatcher.h"
#include "broker/core/metrics.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::service {

class ClaimStream : public core::JobSink, public std::enable_shared_from_this<ClaimStream> {
 public:
  // The reactor's two stream operations.
  class Writer {
   public:
    virtual ~Writer() = default;
    // Starts writing `message` (gRPC StartWrite), which stays untouched
    // until WriteDone follows (a Claim stream's reactor may move its jobs
    // and stops into a ClaimResponse of its own: same fields).
    virtual void Write(v1::WorkResponse* message) = 0;
    // Ends the stream (gRPC Finish); OnDone follows.
    virtual void End(const grpc::Status& status) = 0;
  };

  // A message holds jobs up to this many bytes (at least one job, whatever
  // its size), well under gRPC clients' default 4 MiB receive limit.
  static constexpr size_t kMaxMessageBytes = 1 << 20;

  // `dispatcher` and `metrics` must outlive this object; `writer` must stay
  // valid until Detach.
  ClaimStream(Writer* writer, core::Dispatcher* dispatcher, core::Metrics* metrics);

  // Opens the dispatcher session for `spec` and counts the stream as open
  // until Detach. When the Dispatcher refuses it (RESOURCE_EXHAUSTED: a
  // stream limit) the stream is finished with that status and never opens.
  // Call at most once.
  void Open(core::ClaimSpec spec);

  bool Deliver(std::vector<v1::ClaimedJob> jobs) override;
  // Queued behind the jobs waiting (so a stop never overtakes its job);
  // a stop already waiting is not queued twice.
  void Stop(v1::StopRun stop) override;
  void Close(const absl::Status& status) override;
  // Written with the next message (Work streams). Dropped once the stream
  // has ended.
  void Answer(v1::WorkAcksAnswer answer);
  // Runs `fn` (with the mutex held) only while the stream has not been
  // finished or detached; returns whether it ran. Lets a reactor start an
  // operation from outside its own reactions without racing its end.
  bool IfOpen(absl::FunctionRef<void()> fn);

  // Called from the reactor's OnWriteDone: starts the next write if
  // anything waits.
  void WriteDone(bool ok);
  // Ends the stream with `status` once (no-op afterwards).
  void Finish(const grpc::Status& status);
  // From the reactor's OnDone: closes the session; afterwards everything
  // handed over is refused.
  void Detach();

 private:
  // Moves the oldest waiting jobs (up to kMaxMessageBytes), and the stops
  // and answers, into message_ and writes it.
  void StartWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasWaiting() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands every waiting job back to the dispatcher (the stream ended).
  void ReturnWaiting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  core::Dispatcher* const dispatcher_;
  core::Metrics* const metrics_;
  absl::Mutex mu_;
  Writer* writer_ ABSL_GUARDED_BY(mu_);  // null after Detach
  // At most this many jobs wait behind the message being written (the
  // stream's max_in_flight; set by Open).
  size_t max_queued_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<std::string> queues_ ABSL_GUARDED_BY(mu_);  // for its metrics
  std::optional<core::Dispatcher::SessionId> session_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::ClaimedJob> waiting_ ABSL_GUARDED_BY(mu_);
  // At most one per run delivered on the stream, so at most max_in_flight
  // (a stop for a run no longer held is never passed on).
  std::vector<v1::StopRun> stops_ ABSL_GUARDED_BY(mu_);
  // At most one per acks message being settled (WorkReactor bounds them).
  std::vector<v1::WorkAcksAnswer> answers_ ABSL_GUARDED_BY(mu_);
  v1::WorkResponse message_ ABSL_GUARDED_BY(mu_);  // being written (gRPC holds a pointer)
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_CLAIM_STREAM_H_
