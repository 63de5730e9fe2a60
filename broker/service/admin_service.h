// AdminService: the jobwire.v1.AdminService gRPC service, what operators use
// to inspect queues, redrive dead jobs and pause work. Each handler
// validates its request (INVALID_ARGUMENT, nothing changed), checks that the
// caller's token may administer the queue (UNAUTHENTICATED /
// PERMISSION_DENIED; ListQueues needs some admin permission and lists only
// the queues the token may administer), hands it to core::QueueAdmin and
// finishes the call from the Redis callback.
#ifndef JOBWIRE_BROKER_SERVICE_ADMIN_SERVICE_H_
#define JOBWIRE_BROKER_SERVICE_ADMIN_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "broker/core/queue_admin.h"
#include "broker/core/schedule_admin.h"
#include "broker/core/worker_registry.h"
#include "broker/service/request_validator.h"
#include "broker/service/authorizer.h"
#include "broker/service/cq_reactors.h"
#include "jobwire/v1/admin.grpc.pb.h"

namespace jobwire::service {

// Served on the completion-queue API, as BrokerService is.
//
// Thread safety: the handlers may run on any thread; the only state of its
// own is an atomic count of calls in flight.
class AdminService final {
 public:
  // `admin`, `schedules`, `workers` and `authorizer` must outlive the
  // service; `limits` apply to the jobs of schedules.
  AdminService(const core::QueueAdmin* admin, const core::ScheduleAdmin* schedules,
               const core::WorkerRegistry* workers, const Authorizer* authorizer, Limits limits);

  // For ServerBuilder::RegisterService.
  grpc::Service* grpc_service() { return &async_service_; }
  // Starts serving every method on `cq`, as BrokerService::Serve.
  void Serve(grpc::ServerCompletionQueue* cq);

  void ListQueues(grpc::ServerContext* ctx, const v1::ListQueuesRequest* req, v1::ListQueuesResponse* resp,
                 UnaryReactor* reactor);
  void GetQueueStats(grpc::ServerContext* ctx, const v1::GetQueueStatsRequest* req, v1::GetQueueStatsResponse* resp,
                    UnaryReactor* reactor);
  void ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req, v1::ListJobsResponse* resp,
               UnaryReactor* reactor);
  void RetryDead(grpc::ServerContext* ctx, const v1::RetryDeadRequest* req, v1::RetryDeadResponse* resp,
                UnaryReactor* reactor);
  void DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req, v1::DeleteJobResponse* resp,
                UnaryReactor* reactor);
  void DeleteQueue(grpc::ServerContext* ctx, const v1::DeleteQueueRequest* req, v1::DeleteQueueResponse* resp,
                  UnaryReactor* reactor);
  void PurgeDead(grpc::ServerContext* ctx, const v1::PurgeDeadRequest* req, v1::PurgeDeadResponse* resp,
                UnaryReactor* reactor);
  void CreateQueue(grpc::ServerContext* ctx, const v1::CreateQueueRequest* req, v1::CreateQueueResponse* resp,
                  UnaryReactor* reactor);
  void UpdateQueue(grpc::ServerContext* ctx, const v1::UpdateQueueRequest* req, v1::UpdateQueueResponse* resp,
                  UnaryReactor* reactor);
  void PauseQueue(grpc::ServerContext* ctx, const v1::PauseQueueRequest* req, v1::PauseQueueResponse* resp,
                 UnaryReactor* reactor);
  void ResumeQueue(grpc::ServerContext* ctx, const v1::ResumeQueueRequest* req, v1::ResumeQueueResponse* resp,
                  UnaryReactor* reactor);
  void PutSchedule(grpc::ServerContext* ctx, const v1::PutScheduleRequest* req, v1::PutScheduleResponse* resp,
                  UnaryReactor* reactor);
  void DeleteSchedule(grpc::ServerContext* ctx, const v1::DeleteScheduleRequest* req, v1::DeleteScheduleResponse* resp,
                     UnaryReactor* reactor);
  void ListSchedules(grpc::ServerContext* ctx, const v1::ListSchedulesRequest* req, v1::ListSchedulesResponse* resp,
                    UnaryReactor* reactor);
  void ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req, v1::ListWorkersResponse* resp,
                  UnaryReactor* reactor);

  // Calls that have started and are not done yet. Thread-safe.
  int64_t calls_in_flight() const { return calls_in_flight_.load(); }

 private:
  void SetPaused(grpc::ServerContext* ctx, const std::string& queue, bool paused,
                 UnaryReactor* reactor);
  // Finishes `reactor` with PERMISSION_DENIED when `principal` (null: no
  // tokens) may administer no queue at all (the listings' rule).
  static bool FinishIfNoAdmin(UnaryReactor* reactor, const Principal* principal);
  // Finishes `reactor` when the caller may not administer `queue`.
  bool FinishIfDenied(UnaryReactor* reactor, grpc::ServerContext* ctx, const std::string& queue);

  std::atomic<int64_t> calls_in_flight_{0};
  v1::AdminService::AsyncService async_service_;
  std::vector<std::shared_ptr<void>> methods_;  // what Serve started
  const core::QueueAdmin* const admin_;
  const core::ScheduleAdmin* const schedules_;
  const core::WorkerRegistry* const workers_;
  const Authorizer* const authorizer_;
  const Limits limits_;
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_ADMIN_SERVICE_H_
