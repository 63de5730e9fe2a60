// BrokerService: the jobwire.v1.BrokerService gRPC service. Each
// handler validates its request (INVALID_ARGUMENT, nothing changed), checks
// the caller's token (UNAUTHENTICATED / PERMISSION_DENIED, see Authorizer),
// then hands it to the lifecycle layer and finishes the call from the Redis
// callback: no gRPC thread ever waits on Redis.
#ifndef JOBWIRE_BROKER_SERVICE_BROKER_SERVICE_H_
#define JOBWIRE_BROKER_SERVICE_BROKER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/core/dispatcher.h"
#include "broker/core/job_lifecycle.h"
#include "broker/core/event_feed.h"
#include "broker/core/job_watcher.h"
#include "broker/core/metrics.h"
#include "broker/service/authorizer.h"
#include "broker/service/cq_reactors.h"
#include "broker/service/request_validator.h"
#include "jobwire/v1/broker.grpc.pb.h"

namespace jobwire::service {

struct ServiceOptions {
  Limits limits;
  // Claim streams end with UNAVAILABLE after this age, jittered by +-10% per
  // stream so that reconnects spread out; InfiniteDuration: never.
  absl::Duration max_stream_age = absl::InfiniteDuration();
  // Events a Subscribe stream may have waiting before it is cut off.
  int64_t subscribe_buffer_events = 10000;
};

// Served on the completion-queue API (cq_reactors.h): Serve requests every
// method's calls on a queue that one thread polls, so the handlers run on
// that thread and must not block; they finish from the Redis callbacks.
//
// Thread safety: the handlers may run on any thread; the only state of its
// own is an atomic count of calls in flight.
class BrokerService final {
 public:
  // `lifecycle`, `dispatcher`, `watcher`, `feed`, `metrics` and `authorizer`
  // must outlive the service.
  BrokerService(core::JobLifecycle* lifecycle, core::Dispatcher* dispatcher,
                core::JobWatcher* watcher, core::EventFeed* feed, core::Metrics* metrics,
                const Authorizer* authorizer, ServiceOptions options);

  // For ServerBuilder::RegisterService.
  grpc::Service* grpc_service() { return &async_service_; }
  // Starts serving every method on `cq` (call once, after the server is
  // built, before the queue is polled). The calls in progress must be
  // done, and the queue drained, before this service is destroyed.
  void Serve(grpc::ServerCompletionQueue* cq);

  void Enqueue(grpc::ServerContext* ctx, const v1::EnqueueRequest* req, v1::EnqueueResponse* resp,
               UnaryReactor* reactor);
  void EnqueueBatch(grpc::ServerContext* ctx, const v1::EnqueueBatchRequest* req,
                    v1::EnqueueBatchResponse* resp, UnaryReactor* reactor);
  WriteReactor<v1::ClaimResponse>* Claim(grpc::ServerContext* ctx, const v1::ClaimRequest* req);
  StreamReactor<v1::WorkRequest, v1::WorkResponse>* Work(grpc::ServerContext* ctx);
  void Ack(grpc::ServerContext* ctx, const v1::AckRequest* req, v1::AckResponse* resp,
           UnaryReactor* reactor);
  void AckBatch(grpc::ServerContext* ctx, const v1::AckBatchRequest* req,
                v1::AckBatchResponse* resp, UnaryReactor* reactor);
  void Fail(grpc::ServerContext* ctx, const v1::FailRequest* req, v1::FailResponse* resp,
            UnaryReactor* reactor);
  void ExtendLease(grpc::ServerContext* ctx, const v1::ExtendLeaseRequest* req,
                   v1::ExtendLeaseResponse* resp, UnaryReactor* reactor);
  void GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::GetJobResponse* resp,
              UnaryReactor* reactor);
  void Cancel(grpc::ServerContext* ctx, const v1::CancelRequest* req, v1::CancelResponse* resp,
              UnaryReactor* reactor);
  void ReportProgress(grpc::ServerContext* ctx, const v1::ReportProgressRequest* req,
                      v1::ReportProgressResponse* resp, UnaryReactor* reactor);
  WriteReactor<v1::WaitJobResponse>* WaitJob(grpc::ServerContext* ctx,
                                             const v1::WaitJobRequest* req);
  WriteReactor<v1::SubscribeResponse>* Subscribe(grpc::ServerContext* ctx,
                                                 const v1::SubscribeRequest* req);

  // Unary calls, and acks messages of Work streams, that have started and
  // are not done yet. Thread-safe.
  int64_t calls_in_flight() const { return calls_in_flight_.load(); }

  // The two steps Claim and AckBatch share with Work streams (WorkReactor).
  // Thread-safe.
  //
  // A Claim's spec: validated (INVALID_ARGUMENT) and authorized against
  // `ctx`'s token (UNAUTHENTICATED / PERMISSION_DENIED).
  absl::StatusOr<core::ClaimSpec> ClaimSpecFor(const grpc::ServerContextBase& ctx,
                                               const v1::ClaimRequest& req) const;
  // Settles `req` as AckBatch does, fills `resp->results`, then calls `done`
  // with the status of the batch as a whole (its results are empty unless
  // OK), on any thread, once. `req` and `resp` must stay valid until then;
  // `ctx` is read before this returns.
  void SettleAcks(const grpc::ServerContextBase& ctx, const v1::AckBatchRequest& req,
                  v1::AckBatchResponse* resp, std::function<void(const absl::Status&)> done);

 private:
  std::atomic<int64_t> calls_in_flight_{0};
  v1::BrokerService::AsyncService async_service_;
  std::vector<std::shared_ptr<void>> methods_;  // what Serve started
  core::JobLifecycle* const lifecycle_;
  core::Dispatcher* const dispatcher_;
  core::JobWatcher* const watcher_;
  core::EventFeed* const feed_;
  core::Metrics* const metrics_;
  const Authorizer* const authorizer_;
  const Limits limits_;
  const absl::Duration max_stream_age_;
  const int64_t subscribe_buffer_events_;
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_BROKER_SERVICE_H_
