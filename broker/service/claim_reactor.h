// ClaimReactor: the server side of one Claim stream (on cq_reactors.h). It
// only writes: its ClaimStream queues what the Dispatcher hands over and
// writes it (see claim_stream.h for the message and ending rules).
//
// A stream refused by the Dispatcher's stream limits ends at once with
// RESOURCE_EXHAUSTED and never opens a session.
//
// Lifetime: gRPC owns the reactor until OnDone, which detaches the stream
// (closing its dispatcher session) and deletes the reactor.
#ifndef JOBWIRE_BROKER_SERVICE_CLAIM_REACTOR_H_
#define JOBWIRE_BROKER_SERVICE_CLAIM_REACTOR_H_

#include <memory>

#include <grpcpp/grpcpp.h>

#include "broker/core/dispatcher.h"
#include "broker/core/metrics.h"
#include "broker/service/claim_stream.h"
#include "broker/service/cq_reactors.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::service {

class ClaimReactor : public WriteReactor<v1::ClaimResponse>,
                     private ClaimStream::Writer {
 public:
  // Opens a dispatcher session for `spec`. `dispatcher` and `metrics` must
  // outlive the stream.
  ClaimReactor(core::Dispatcher* dispatcher, core::Metrics* metrics, core::ClaimSpec spec);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // Moves the jobs and stops (a Claim stream has no answers) into message_.
  void Write(v1::WorkResponse* message) override;
  void End(const grpc::Status& status) override { Finish(status); }

  std::shared_ptr<ClaimStream> stream_;
  v1::ClaimResponse message_;  // being written (one at a time: ClaimStream)
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_CLAIM_REACTOR_H_
