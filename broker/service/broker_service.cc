#include "broker/service/broker_service.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/base/status_macros.h"
#include "broker/core/fan_in.h"
#include "broker/service/claim_reactor.h"
#include "broker/service/grpc_status.h"
#include "broker/service/subscribe_reactor.h"
#include "broker/service/wait_reactor.h"
#include "broker/service/work_reactor.h"

namespace jobwire::service {

namespace {

// A batch result's code, message and reason (OK: code 0, nothing else).
template <typename Result>
void SetResultError(const absl::Status& status, Result* result) {
  result->set_code(static_cast<int>(status.code()));
  result->set_message(std::string(status.message()));
  if (!status.ok()) result->set_reason(base::ReasonOf(status));
}

// The first step of a batch call: adds one result per item and checks each
// item with `validate(i, "<field>[i].")`, writing an invalid item's error
// into its result. Returns the indexes of the valid items grouped by queue
// (one script call per queue), in request order.
template <typename Item, typename Result, typename Validate>
absl::flat_hash_map<absl::string_view, std::vector<int>> ValidByQueue(
    const google::protobuf::RepeatedPtrField<Item>& items, absl::string_view field,
    google::protobuf::RepeatedPtrField<Result>* results, const Validate& validate) {
  absl::flat_hash_map<absl::string_view, std::vector<int>> by_queue;
  for (int i = 0; i < items.size(); ++i) {
    Result* result = results->Add();
    absl::Status valid = validate(i, absl::StrCat(field, "[", i, "]."));
    if (valid.ok()) {
      by_queue[items[i].queue()].push_back(i);
    } else {
      SetResultError(valid, result);
    }
  }
  return by_queue;
}

// `status`, the refusal of job `index` for a parent of its batch that was
// not stored (store::BatchParentNotStored: DEPENDENCY_NOT_FOUND without a
// job id), reworded to name the first such parent; any other status
// unchanged. `resp` holds the results of the earlier jobs.
absl::Status NameRefusedBatchParent(const v1::EnqueueBatchRequest& req, int index,
                                    const v1::EnqueueBatchResponse& resp, absl::Status status) {
  if (base::ReasonOf(status) != base::reason::kDependencyNotFound ||
      !base::MetadataOf(status).empty()) {
    return status;
  }
  const auto& parents = req.jobs(index).depends_on_batch_index();
  for (int k = 0; k < parents.size(); ++k) {
    if (resp.results(parents[k]).code() == 0) continue;
    return base::WithReason(
        absl::NotFoundError(absl::StrCat("jobs[", index, "].depends_on_batch_index[", k,
                                         "]: names jobs[", parents[k],
                                         "], which was not stored")),
        base::reason::kDependencyNotFound);
  }
  return status;
}

}  // namespace

BrokerService::BrokerService(core::JobLifecycle* lifecycle, core::Dispatcher* dispatcher,
                             core::JobWatcher* watcher, core::EventFeed* feed,
                             core::Metrics* metrics, const Authorizer* authorizer,
                             ServiceOptions options)
    : lifecycle_(lifecycle),
      dispatcher_(dispatcher),
      watcher_(watcher),
      feed_(feed),
      metrics_(metrics),
      authorizer_(authorizer),
      limits_(options.limits),
      max_stream_age_(options.max_stream_age),
      subscribe_buffer_events_(options.subscribe_buffer_events) {}

void BrokerService::Serve(grpc::ServerCompletionQueue* cq) {
  using Async = v1::BrokerService::AsyncService;
  auto unary = [&](auto request, auto handler) {
    methods_.push_back(ServeUnary(&async_service_, request, cq, this, handler, &calls_in_flight_));
  };
  unary(&Async::RequestEnqueue, &BrokerService::Enqueue);
  unary(&Async::RequestEnqueueBatch, &BrokerService::EnqueueBatch);
  unary(&Async::RequestAck, &BrokerService::Ack);
  unary(&Async::RequestAckBatch, &BrokerService::AckBatch);
  unary(&Async::RequestFail, &BrokerService::Fail);
  unary(&Async::RequestExtendLease, &BrokerService::ExtendLease);
  unary(&Async::RequestGetJob, &BrokerService::GetJob);
  unary(&Async::RequestCancel, &BrokerService::Cancel);
  unary(&Async::RequestReportProgress, &BrokerService::ReportProgress);
  methods_.push_back(ServeServerStream<Async>(
      &async_service_, &Async::RequestClaim, cq,
      [this](grpc::ServerContext* ctx, const v1::ClaimRequest* req) { return Claim(ctx, req); }));
  methods_.push_back(ServeServerStream<Async>(
      &async_service_, &Async::RequestWaitJob, cq,
      [this](grpc::ServerContext* ctx, const v1::WaitJobRequest* req) {
        return WaitJob(ctx, req);
      }));
  methods_.push_back(ServeServerStream<Async>(
      &async_service_, &Async::RequestSubscribe, cq,
      [this](grpc::ServerContext* ctx, const v1::SubscribeRequest* req) {
        return Subscribe(ctx, req);
      }));
  methods_.push_back(ServeBidiStream<Async>(&async_service_, &Async::RequestWork, cq,
                                            [this](grpc::ServerContext* ctx) { return Work(ctx); }));
}

void BrokerService::Enqueue(grpc::ServerContext* ctx, const v1::EnqueueRequest* req,
                            v1::EnqueueResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateEnqueue(*req, limits_))) return;
  if (FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kEnqueue, req->queue()))) {
    return;
  }
  lifecycle_->Enqueue(req->queue(), {*req},
                      [reactor, resp](absl::StatusOr<std::vector<store::EnqueueOutcome>> out) {
                        if (FinishIfError(reactor, out.status())) return;
                        if (FinishIfError(reactor, out->front().status)) return;
                        resp->set_job_id(out->front().job_id);
                        resp->set_duplicate(out->front().duplicate);
                        reactor->Finish(grpc::Status::OK);
                      });
}

void BrokerService::EnqueueBatch(grpc::ServerContext* ctx, const v1::EnqueueBatchRequest* req,
                                 v1::EnqueueBatchResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateEnqueueBatch(*req))) return;
  // Every job's queue must be allowed, or nothing is stored.
  std::vector<absl::string_view> queues;
  for (const v1::EnqueueRequest& job : req->jobs()) queues.push_back(job.queue());
  if (FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kEnqueue, queues))) {
    return;
  }
  const std::vector<absl::Status> valid = ValidateBatchJobs(*req, limits_);
  auto by_queue = ValidByQueue(req->jobs(), "jobs", resp->mutable_results(),
                               [&valid](int i, absl::string_view) { return valid[i]; });
  if (by_queue.empty()) return reactor->Finish(grpc::Status::OK);
  auto remaining = std::make_shared<std::atomic<int>>(static_cast<int>(by_queue.size()));
  for (auto& [queue, indexes] : by_queue) {
    // The queue's jobs in request order; batch parents by position here.
    std::vector<int> position(req->jobs_size());
    std::vector<v1::EnqueueRequest> jobs;
    jobs.reserve(indexes.size());
    for (int i : indexes) {
      position[i] = static_cast<int>(jobs.size());
      v1::EnqueueRequest& job = jobs.emplace_back(req->jobs(i));
      for (int& parent : *job.mutable_depends_on_batch_index()) parent = position[parent];
    }
    lifecycle_->Enqueue(
        std::string(queue), std::move(jobs),
        [reactor, req, resp, remaining, indexes = std::move(indexes)](
            absl::StatusOr<std::vector<store::EnqueueOutcome>> out) {
          // A failed call (Redis unreachable) fails only its own queue's jobs.
          for (size_t k = 0; k < indexes.size(); ++k) {
            v1::EnqueueResult* result = resp->mutable_results(indexes[k]);
            absl::Status status = out.ok() ? (*out)[k].status : out.status();
            if (!status.ok()) {
              if (out.ok()) status = NameRefusedBatchParent(*req, indexes[k], *resp, std::move(status));
              SetResultError(status, result);
              continue;
            }
            result->set_job_id((*out)[k].job_id);
            result->set_duplicate((*out)[k].duplicate);
          }
          if (--*remaining == 0) reactor->Finish(grpc::Status::OK);
        });
  }
}

absl::StatusOr<core::ClaimSpec> BrokerService::ClaimSpecFor(const grpc::ServerContextBase& ctx,
                                                            const v1::ClaimRequest& req) const {
  JW_RETURN_IF_ERROR(ValidateClaim(req));
  std::vector<absl::string_view> queues(req.queues().begin(), req.queues().end());
  JW_RETURN_IF_ERROR(authorizer_->Authorize(ctx, Permission::kClaim, queues));
  core::ClaimSpec spec;
  spec.queues.assign(req.queues().begin(), req.queues().end());
  spec.max_in_flight = req.max_in_flight() == 0 ? 1 : req.max_in_flight();
  spec.lease_ms = req.lease_ms() == 0 ? lifecycle_->defaults().lease_ms : req.lease_ms();
  spec.worker_id = req.worker_id();
  spec.types.assign(req.types().begin(), req.types().end());
  spec.weights.assign(req.weights().begin(), req.weights().end());
  spec.peer = ctx.peer();
  if (max_stream_age_ != absl::InfiniteDuration()) {
    thread_local absl::BitGen bitgen;
    spec.max_age = max_stream_age_ * absl::Uniform(bitgen, 0.9, 1.1);
  }
  return spec;
}

WriteReactor<v1::ClaimResponse>* BrokerService::Claim(grpc::ServerContext* ctx,
                                                      const v1::ClaimRequest* req) {
  absl::StatusOr<core::ClaimSpec> spec = ClaimSpecFor(*ctx, *req);
  if (!spec.ok()) {
    class Refused : public WriteReactor<v1::ClaimResponse> {
     public:
      explicit Refused(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
      void OnDone() override { delete this; }
    };
    return new Refused(spec.status());
  }
  return new ClaimReactor(dispatcher_, metrics_, *std::move(spec));
}

StreamReactor<v1::WorkRequest, v1::WorkResponse>* BrokerService::Work(
    grpc::ServerContext* ctx) {
  return new WorkReactor(this, ctx, dispatcher_, metrics_);
}

void BrokerService::Ack(grpc::ServerContext* ctx, const v1::AckRequest* req,
                        v1::AckResponse*, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateAck(*req, limits_))) return;
  if (FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kClaim, req->queue()))) {
    return;
  }
  lifecycle_->Ack(req->queue(), {req},
                  [reactor](absl::StatusOr<std::vector<absl::Status>> out) {
                    reactor->Finish(ToGrpcStatus(out.ok() ? out->front() : out.status()));
                  });
}

void BrokerService::AckBatch(grpc::ServerContext* ctx, const v1::AckBatchRequest* req,
                             v1::AckBatchResponse* resp, UnaryReactor* reactor) {
  SettleAcks(*ctx, *req, resp,
             [reactor](const absl::Status& status) { reactor->Finish(ToGrpcStatus(status)); });
}

void BrokerService::SettleAcks(const grpc::ServerContextBase& ctx, const v1::AckBatchRequest& req,
                               v1::AckBatchResponse* resp,
                               std::function<void(const absl::Status&)> done) {
  if (absl::Status valid = ValidateAckBatch(req); !valid.ok()) return done(valid);
  std::vector<absl::string_view> queues;
  for (const v1::AckRequest& ack : req.acks()) queues.push_back(ack.queue());
  if (absl::Status allowed = authorizer_->Authorize(ctx, Permission::kClaim, queues);
      !allowed.ok()) {
    return done(allowed);
  }
  auto by_queue = ValidByQueue(req.acks(), "acks", resp->mutable_results(),
                               [this, &req](int i, absl::string_view prefix) {
                                 return ValidateAck(req.acks(i), limits_, prefix);
                               });
  if (by_queue.empty()) return done(absl::OkStatus());
  // Counted until `done` ran, so that a drain waits for acks settled on
  // Work streams as it waits for unary calls.
  ++calls_in_flight_;
  // The call fails as a whole when Redis cannot be reached for any queue.
  // The acks refused by validation keep their results (a code set).
  auto fan_in = std::make_shared<core::FanIn<absl::Status>>(
      static_cast<size_t>(req.acks_size()), by_queue.size(),
      [this, resp, done = std::move(done)](absl::StatusOr<std::vector<absl::Status>> out) {
        if (!out.ok()) {
          resp->clear_results();
          done(out.status());
        } else {
          for (int i = 0; i < resp->results_size(); ++i) {
            if (resp->results(i).code() == 0) SetResultError((*out)[i], resp->mutable_results(i));
          }
          done(absl::OkStatus());
        }
        --calls_in_flight_;
      });
  for (auto& [queue, indexes] : by_queue) {
    std::vector<const v1::AckRequest*> acks;
    for (int i : indexes) acks.push_back(&req.acks(i));
    lifecycle_->Ack(std::string(queue), acks,
                    [fan_in, slots = std::vector<size_t>(indexes.begin(), indexes.end())](
                        absl::StatusOr<std::vector<absl::Status>> out) {
                      fan_in->Add(slots, std::move(out));
                    });
  }
}

void BrokerService::Fail(grpc::ServerContext* ctx, const v1::FailRequest* req,
                         v1::FailResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateFail(*req))) return;
  if (FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kClaim, req->queue()))) {
    return;
  }
  lifecycle_->Fail(*req, [reactor, resp](absl::StatusOr<store::FailOutcome> out) {
    if (FinishIfError(reactor, out.status())) return;
    resp->set_outcome(out->dead ? v1::FailResponse::OUTCOME_DEAD : v1::FailResponse::OUTCOME_RETRY_SCHEDULED);
    resp->set_next_attempt_at_ms(out->next_attempt_at_ms);
    reactor->Finish(grpc::Status::OK);
  });
}

void BrokerService::ExtendLease(grpc::ServerContext* ctx, const v1::ExtendLeaseRequest* req,
                                v1::ExtendLeaseResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateExtendLease(*req))) return;
  if (FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kClaim, req->queue()))) {
    return;
  }
  lifecycle_->ExtendLease(*req, [reactor, resp](absl::StatusOr<int64_t> out) {
    if (FinishIfError(reactor, out.status())) return;
    resp->set_lease_expires_at_ms(*out);
    reactor->Finish(grpc::Status::OK);
  });
}

void BrokerService::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                           v1::GetJobResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateGetJob(*req))) return;
  if (FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kRead, req->queue()))) {
    return;
  }
  lifecycle_->GetJob(*req, [reactor, resp](absl::StatusOr<v1::Job> out) {
    if (FinishIfError(reactor, out.status())) return;
    *resp->mutable_job() = std::move(*out);
    reactor->Finish(grpc::Status::OK);
  });
}

void BrokerService::Cancel(grpc::ServerContext* ctx, const v1::CancelRequest* req,
                           v1::CancelResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateCancel(*req))) return;
  if (FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kEnqueue, req->queue()))) {
    return;
  }
  lifecycle_->Cancel(*req, [reactor, resp](absl::StatusOr<bool> out) {
    if (FinishIfError(reactor, out.status())) return;
    resp->set_cancel_requested(*out);
    reactor->Finish(grpc::Status::OK);
  });
}

void BrokerService::ReportProgress(grpc::ServerContext* ctx, const v1::ReportProgressRequest* req,
                                   v1::ReportProgressResponse*, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateReportProgress(*req))) return;
  if (FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kClaim, req->queue()))) {
    return;
  }
  lifecycle_->ReportProgress(*req, [reactor](absl::StatusOr<bool> out) {
    reactor->Finish(ToGrpcStatus(out.status()));
  });
}

WriteReactor<v1::WaitJobResponse>* BrokerService::WaitJob(
    grpc::ServerContext* ctx, const v1::WaitJobRequest* req) {
  auto* reactor = new WaitReactor(watcher_);
  absl::Status refused = ValidateWaitJob(*req);
  if (refused.ok()) refused = authorizer_->Authorize(*ctx, Permission::kRead, req->queue());
  reactor->Start(*req,
                 req->timeout_ms() > 0 ? absl::Milliseconds(req->timeout_ms())
                                       : absl::InfiniteDuration(),
                 refused);
  return reactor;
}

WriteReactor<v1::SubscribeResponse>* BrokerService::Subscribe(
    grpc::ServerContext* ctx, const v1::SubscribeRequest* req) {
  auto* reactor = new SubscribeReactor(feed_, subscribe_buffer_events_);
  absl::Status refused = ValidateSubscribe(*req);
  if (refused.ok()) {
    std::vector<absl::string_view> queues(req->queues().begin(), req->queues().end());
    refused = authorizer_->Authorize(*ctx, Permission::kRead, queues);
  }
  reactor->Start(*req, refused);
  return reactor;
}

}  // namespace jobwire::service
