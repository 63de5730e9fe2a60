#include "broker/service/admin_service.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/service/admin_validator.h"
#include "broker/service/grpc_status.h"

namespace jobwire::service {
namespace {

// The settings a CreateQueue / UpdateQueue request gives (rate limits with
// their burst resolved).
template <typename Request>
store::QueueSettingsChange ChangeOf(const Request& request) {
  store::QueueSettingsChange change;
  change.partitions = request.partitions();
  if (request.has_default_job_timeout_ms()) change.job_timeout_ms = request.default_job_timeout_ms();
  if (request.has_rate_limit()) change.rate_limit = ResolvedRateLimit(request.rate_limit());
  if (request.has_key_rate_limit()) {
    change.key_rate_limit = ResolvedRateLimit(request.key_rate_limit());
  }
  return change;
}

}  // namespace

AdminService::AdminService(const core::QueueAdmin* admin, const core::ScheduleAdmin* schedules,
                           const core::WorkerRegistry* workers, const Authorizer* authorizer,
                           Limits limits)
    : admin_(admin),
      schedules_(schedules),
      workers_(workers),
      authorizer_(authorizer),
      limits_(limits) {}

void AdminService::Serve(grpc::ServerCompletionQueue* cq) {
  using Async = v1::AdminService::AsyncService;
  auto unary = [&](auto request, auto handler) {
    methods_.push_back(ServeUnary(&async_service_, request, cq, this, handler, &calls_in_flight_));
  };
  unary(&Async::RequestListQueues, &AdminService::ListQueues);
  unary(&Async::RequestGetQueueStats, &AdminService::GetQueueStats);
  unary(&Async::RequestListJobs, &AdminService::ListJobs);
  unary(&Async::RequestRetryDead, &AdminService::RetryDead);
  unary(&Async::RequestDeleteJob, &AdminService::DeleteJob);
  unary(&Async::RequestDeleteQueue, &AdminService::DeleteQueue);
  unary(&Async::RequestPurgeDead, &AdminService::PurgeDead);
  unary(&Async::RequestCreateQueue, &AdminService::CreateQueue);
  unary(&Async::RequestUpdateQueue, &AdminService::UpdateQueue);
  unary(&Async::RequestPauseQueue, &AdminService::PauseQueue);
  unary(&Async::RequestResumeQueue, &AdminService::ResumeQueue);
  unary(&Async::RequestPutSchedule, &AdminService::PutSchedule);
  unary(&Async::RequestDeleteSchedule, &AdminService::DeleteSchedule);
  unary(&Async::RequestListSchedules, &AdminService::ListSchedules);
  unary(&Async::RequestListWorkers, &AdminService::ListWorkers);
}

bool AdminService::FinishIfNoAdmin(UnaryReactor* reactor, const Principal* principal) {
  if (principal == nullptr || !principal->admin.empty()) return false;
  return FinishIfError(reactor, base::WithReason(absl::PermissionDeniedError(absl::StrCat(
                                                     "token \"", principal->name,
                                                     "\" may not administer any queue")),
                                                 base::reason::kTokenNotPermitted));
}

bool AdminService::FinishIfDenied(UnaryReactor* reactor, grpc::ServerContext* ctx,
                                  const std::string& queue) {
  return FinishIfError(reactor, authorizer_->Authorize(*ctx, Permission::kAdmin, queue));
}

void AdminService::ListQueues(grpc::ServerContext* ctx, const v1::ListQueuesRequest*,
                              v1::ListQueuesResponse* resp, UnaryReactor* reactor) {
  // Any admin permission lets a token list the queues it may administer.
  absl::StatusOr<std::shared_ptr<const Principal>> caller = authorizer_->Authenticate(*ctx);
  if (FinishIfError(reactor, caller.status())) return;
  // Shared: the reply below comes after Redis answers, maybe after a Reload.
  std::shared_ptr<const Principal> principal = *std::move(caller);
  if (FinishIfNoAdmin(reactor, principal.get())) return;
  admin_->ListQueues([reactor, resp, principal](
                         absl::StatusOr<std::vector<v1::QueueStats>> queues) {
    if (FinishIfError(reactor, queues.status())) return;
    for (v1::QueueStats& stats : *queues) {
      if (!Authorizer::Allows(principal.get(), Permission::kAdmin, stats.queue())) continue;
      *resp->add_queues() = std::move(stats);
    }
    reactor->Finish(grpc::Status::OK);
  });
}

void AdminService::GetQueueStats(grpc::ServerContext* ctx, const v1::GetQueueStatsRequest* req,
                                 v1::GetQueueStatsResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateQueueRequest(req->queue()))) return;
  if (FinishIfDenied(reactor, ctx, req->queue())) return;
  admin_->Stats(req->queue(), [reactor, resp](absl::StatusOr<v1::QueueStats> stats) {
    if (FinishIfError(reactor, stats.status())) return;
    *resp->mutable_stats() = *std::move(stats);
    reactor->Finish(grpc::Status::OK);
  });
}

void AdminService::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                            v1::ListJobsResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateListJobs(*req))) return;
  if (FinishIfDenied(reactor, ctx, req->queue())) return;
  store::JobPageRequest page;
  page.state = req->state();
  const PageToken token = *ParsePageToken(req->page_token());
  page.partition = token.partition;
  page.offset = token.offset;
  page.page_size = req->page_size() == 0 ? kDefaultPageSize : req->page_size();
  page.newest_first = !req->oldest_first();
  page.type = req->type();
  // With a type filter, look further than one page for matches.
  page.scan_limit = page.type.empty() ? page.page_size : std::min(10 * page.page_size, 10000);
  admin_->ListJobs(req->queue(), page, [reactor, resp](absl::StatusOr<store::JobPage> jobs) {
    if (FinishIfError(reactor, jobs.status())) return;
    for (v1::Job& job : jobs->jobs) *resp->add_jobs() = std::move(job);
    if (jobs->next_offset >= 0) {
      resp->set_next_page_token(FormatPageToken(jobs->next_partition, jobs->next_offset));
    }
    reactor->Finish(grpc::Status::OK);
  });
}

void AdminService::RetryDead(grpc::ServerContext* ctx, const v1::RetryDeadRequest* req,
                             v1::RetryDeadResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateRetryDead(*req))) return;
  if (FinishIfDenied(reactor, ctx, req->queue())) return;
  std::vector<std::string> ids(req->job_ids().begin(), req->job_ids().end());
  admin_->RetryDead(req->queue(), ids, req->all(), req->type(),
                    [reactor, resp](absl::StatusOr<int64_t> moved) {
                      if (FinishIfError(reactor, moved.status())) return;
                      resp->set_moved(*moved);
                      reactor->Finish(grpc::Status::OK);
                    });
}

void AdminService::DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req,
                             v1::DeleteJobResponse*, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateDeleteJob(*req))) return;
  if (FinishIfDenied(reactor, ctx, req->queue())) return;
  admin_->DeleteJob(req->queue(), req->job_id(), [reactor](absl::StatusOr<bool> deleted) {
    if (FinishIfError(reactor, deleted.status())) return;
    reactor->Finish(grpc::Status::OK);
  });
}

void AdminService::DeleteQueue(grpc::ServerContext* ctx, const v1::DeleteQueueRequest* req,
                               v1::DeleteQueueResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateDeleteQueue(*req))) return;
  if (FinishIfDenied(reactor, ctx, req->queue())) return;
  admin_->DeleteQueue(req->queue(), req->force(),
                      [reactor, resp](absl::StatusOr<int64_t> deleted) {
                        if (FinishIfError(reactor, deleted.status())) return;
                        resp->set_deleted(*deleted);
                        reactor->Finish(grpc::Status::OK);
                      });
}

void AdminService::PurgeDead(grpc::ServerContext* ctx, const v1::PurgeDeadRequest* req,
                             v1::PurgeDeadResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidatePurgeDead(*req))) return;
  if (FinishIfDenied(reactor, ctx, req->queue())) return;
  admin_->PurgeDead(req->queue(), req->older_than_ms(),
                    [reactor, resp](absl::StatusOr<int64_t> purged) {
                      if (FinishIfError(reactor, purged.status())) return;
                      resp->set_purged(*purged);
                      reactor->Finish(grpc::Status::OK);
                    });
}

void AdminService::CreateQueue(grpc::ServerContext* ctx, const v1::CreateQueueRequest* req,
                               v1::CreateQueueResponse*, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateCreateQueue(*req))) return;
  if (FinishIfDenied(reactor, ctx, req->queue())) return;
  store::QueueSettingsChange change = ChangeOf(*req);
  change.partitions = std::max(1, change.partitions);
  if (req->max_active() > 0) change.max_active = req->max_active();
  if (req->max_active_per_key() > 0) change.max_active_per_key = req->max_active_per_key();
  admin_->CreateQueue(req->queue(), change, [reactor](absl::StatusOr<bool> created) {
    if (FinishIfError(reactor, created.status())) return;
    reactor->Finish(grpc::Status::OK);
  });
}

void AdminService::UpdateQueue(grpc::ServerContext* ctx, const v1::UpdateQueueRequest* req,
                               v1::UpdateQueueResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateUpdateQueue(*req))) return;
  if (FinishIfDenied(reactor, ctx, req->queue())) return;
  store::QueueSettingsChange change = ChangeOf(*req);
  if (req->has_max_active()) change.max_active = req->max_active();
  if (req->has_max_active_per_key()) change.max_active_per_key = req->max_active_per_key();
  admin_->UpdateQueue(req->queue(), change, [reactor, resp](absl::StatusOr<int> before) {
    if (FinishIfError(reactor, before.status())) return;
    resp->set_previous_partitions(*before);
    reactor->Finish(grpc::Status::OK);
  });
}

void AdminService::PauseQueue(grpc::ServerContext* ctx, const v1::PauseQueueRequest* req,
                              v1::PauseQueueResponse*, UnaryReactor* reactor) {
  SetPaused(ctx, req->queue(), true, reactor);
}

void AdminService::ResumeQueue(grpc::ServerContext* ctx, const v1::ResumeQueueRequest* req,
                               v1::ResumeQueueResponse*, UnaryReactor* reactor) {
  SetPaused(ctx, req->queue(), false, reactor);
}

void AdminService::SetPaused(grpc::ServerContext* ctx, const std::string& queue, bool paused,
                             UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateQueueRequest(queue))) return;
  if (FinishIfDenied(reactor, ctx, queue)) return;
  admin_->SetPaused(queue, paused, [reactor](absl::StatusOr<bool> changed) {
    if (FinishIfError(reactor, changed.status())) return;
    reactor->Finish(grpc::Status::OK);
  });
}

void AdminService::PutSchedule(grpc::ServerContext* ctx, const v1::PutScheduleRequest* req,
                               v1::PutScheduleResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateSchedule(req->schedule(), limits_))) return;
  if (FinishIfDenied(reactor, ctx, req->schedule().job().queue())) return;
  schedules_->Put(req->schedule(),
                  [reactor, resp](absl::StatusOr<v1::PutScheduleResponse> put) {
                    if (FinishIfError(reactor, put.status())) return;
                    *resp = *std::move(put);
                    reactor->Finish(grpc::Status::OK);
                  });
}

void AdminService::DeleteSchedule(grpc::ServerContext* ctx, const v1::DeleteScheduleRequest* req,
                                  v1::DeleteScheduleResponse* resp, UnaryReactor* reactor) {
  if (FinishIfError(reactor, ValidateScheduleName(req->name()))) return;
  absl::StatusOr<std::shared_ptr<const Principal>> caller = authorizer_->Authenticate(*ctx);
  if (FinishIfError(reactor, caller.status())) return;
  std::shared_ptr<const Principal> principal = *std::move(caller);
  // The permission is on the schedule's queue: read it first.
  schedules_->List([this, reactor, resp, principal, name = req->name()](
                       absl::StatusOr<std::vector<v1::ScheduleInfo>> all) {
    if (FinishIfError(reactor, all.status())) return;
    auto it = std::find_if(all->begin(), all->end(), [&](const v1::ScheduleInfo& info) {
      return info.schedule().name() == name;
    });
    if (it == all->end()) {
      resp->set_deleted(false);
      return reactor->Finish(grpc::Status::OK);
    }
    const std::string& queue = it->schedule().job().queue();
    if (!Authorizer::Allows(principal.get(), Permission::kAdmin, queue)) {
      FinishIfError(reactor, base::WithReason(
                                 absl::PermissionDeniedError(absl::StrCat(
                                     "token \"", principal->name, "\" may not administer queue \"",
                                     queue, "\" (of schedule \"", name, "\")")),
                                 base::reason::kTokenNotPermitted));
      return;
    }
    schedules_->Delete(name, [reactor, resp](absl::StatusOr<bool> deleted) {
      if (FinishIfError(reactor, deleted.status())) return;
      resp->set_deleted(*deleted);
      reactor->Finish(grpc::Status::OK);
    });
  });
}

void AdminService::ListSchedules(grpc::ServerContext* ctx, const v1::ListSchedulesRequest*,
                                 v1::ListSchedulesResponse* resp, UnaryReactor* reactor) {
  absl::StatusOr<std::shared_ptr<const Principal>> caller = authorizer_->Authenticate(*ctx);
  if (FinishIfError(reactor, caller.status())) return;
  std::shared_ptr<const Principal> principal = *std::move(caller);
  schedules_->List([reactor, resp, principal](absl::StatusOr<std::vector<v1::ScheduleInfo>> all) {
    if (FinishIfError(reactor, all.status())) return;
    for (v1::ScheduleInfo& info : *all) {
      if (!Authorizer::Allows(principal.get(), Permission::kAdmin, info.schedule().job().queue())) {
        continue;
      }
      *resp->add_schedules() = std::move(info);
    }
    reactor->Finish(grpc::Status::OK);
  });
}

void AdminService::ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest*,
                               v1::ListWorkersResponse* resp, UnaryReactor* reactor) {
  absl::StatusOr<std::shared_ptr<const Principal>> caller = authorizer_->Authenticate(*ctx);
  if (FinishIfError(reactor, caller.status())) return;
  std::shared_ptr<const Principal> principal = *std::move(caller);
  if (FinishIfNoAdmin(reactor, principal.get())) return;
  workers_->List([reactor, resp, principal](absl::StatusOr<v1::ListWorkersResponse> all) {
    if (FinishIfError(reactor, all.status())) return;
    // A stream is listed only when the token may administer every queue it
    // reads: the listing names no queue the token may not see.
    for (v1::WorkerStream& stream : *all->mutable_streams()) {
      bool allowed = true;
      for (const std::string& queue : stream.queues()) {
        allowed = allowed && Authorizer::Allows(principal.get(), Permission::kAdmin, queue);
      }
      if (allowed) *resp->add_streams() = std::move(stream);
    }
    *resp->mutable_brokers() = std::move(*all->mutable_brokers());
    reactor->Finish(grpc::Status::OK);
  });
}

}  // namespace jobwire::service
