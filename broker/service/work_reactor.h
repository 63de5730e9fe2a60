// WorkReactor: the server side of one Work stream (on cq_reactors.h): a
// Claim stream whose client also sends its acks on it. The first message
// read must be a claim: it is checked and opened as Claim would be
// (BrokerService::ClaimSpecFor, then ClaimStream::Open). Every later
// message is a batch of acks, settled as AckBatch would settle it
// (BrokerService::SettleAcks) and answered on the stream
// (ClaimStream::Answer) together with the jobs written next.
//
// At most kMaxUnansweredBatches batches of a stream are settled at a time:
// the next message is read only when fewer are unanswered, so a client
// that sends faster than Redis settles is held back by HTTP/2 flow control
// instead of growing the broker's memory.
//
// The stream ends as a Claim stream does (ClaimStream), and also when the
// client half-closes (OK) or breaks the protocol (INVALID_ARGUMENT: a first
// message that is not a claim, a later one that is). Batches still being
// settled then are settled all the same; their answers are dropped.
//
// Lifetime: gRPC owns the reactor until OnDone, which detaches the stream
// and deletes the reactor. The callbacks of batches still being settled
// hold the ClaimStream and the read state, never the reactor: they reach
// it only through ClaimStream::IfOpen, which runs nothing once the stream
// has been finished or detached.
#ifndef JOBWIRE_BROKER_SERVICE_WORK_REACTOR_H_
#define JOBWIRE_BROKER_SERVICE_WORK_REACTOR_H_

#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "broker/core/dispatcher.h"
#include "broker/core/metrics.h"
#include "broker/service/claim_stream.h"
#include "broker/service/cq_reactors.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::service {

class BrokerService;

class WorkReactor : public StreamReactor<v1::WorkRequest, v1::WorkResponse>,
                    private ClaimStream::Writer {
 public:
  static constexpr int kMaxUnansweredBatches = 16;

  // Starts reading the first message. `service`, `dispatcher` and `metrics`
  // must outlive the stream; `ctx` is gRPC's, valid until OnDone.
  WorkReactor(BrokerService* service, grpc::ServerContextBase* ctx,
              core::Dispatcher* dispatcher, core::Metrics* metrics);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Shared with the callbacks of batches being settled.
  struct Reads {
    absl::Mutex mu;
    int unanswered ABSL_GUARDED_BY(mu) = 0;
    // No read is outstanding: kMaxUnansweredBatches were unanswered.
    bool paused ABSL_GUARDED_BY(mu) = false;
  };

  void Write(v1::WorkResponse* message) override { StartWrite(message); }
  void End(const grpc::Status& status) override { Finish(status); }

  // The first message: opens the stream, or ends it.
  void OpenClaim();
  // A later message: settles its acks (request_ is free again on return).
  void SettleAcks();
  // Reads the next message unless the stream has ended.
  void ReadNext();

  BrokerService* const service_;
  grpc::ServerContextBase* const ctx_;
  const std::shared_ptr<ClaimStream> stream_;
  const std::shared_ptr<Reads> reads_ = std::make_shared<Reads>();
  v1::WorkRequest request_;  // being read (gRPC holds a pointer)
  bool opened_ = false;      // the claim was read (reactions only)
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_WORK_REACTOR_H_
