// AdminService: the jobwire.v1.AdminService gRPC service (callback API), what
// operators use to inspect queues, redrive dead jobs and pause work. Each
// handler validates its request (INVALID_ARGUMENT, nothing changed), checks
// that the caller's token may administer the queue (UNAUTHENTICATED /
// PERMISSION_DENIED; ListQueues needs some admin permission and lists only
// the queues the token may administer), hands it to core::QueueAdmin and finishes the call from the Redis callback.
#ifndef JOBWIRE_BROKER_SERVICE_ADMIN_SERVICE_H_
#define JOBWIRE_BROKER_SERVICE_ADMIN_SERVICE_H_

#include <atomic>
#include <cstdint>

#include <grpcpp/grpcpp.h>

#include "broker/core/queue_admin.h"
#include "broker/core/schedule_admin.h"
#include "broker/core/worker_registry.h"
#include "broker/service/request_validator.h"
#include "broker/service/authorizer.h"
#include "jobwire/v1/admin.grpc.pb.h"

namespace jobwire::service {

// Thread safety: gRPC calls the handlers concurrently; the only state of its
// own is an atomic count of calls in flight.
class AdminService final : public v1::AdminService::CallbackService {
 public:
  // `admin`, `schedules`, `workers` and `authorizer` must outlive the
  // service; `limits` apply to the jobs of schedules.
  AdminService(const core::QueueAdmin* admin, const core::ScheduleAdmin* schedules,
               const core::WorkerRegistry* workers, const Authorizer* authorizer, Limits limits);

  grpc::ServerUnaryReactor* ListQueues(grpc::CallbackServerContext* ctx,
                                       const v1::ListQueuesRequest* req,
                                       v1::ListQueuesResponse* resp) override;
  grpc::ServerUnaryReactor* GetQueueStats(grpc::CallbackServerContext* ctx,
                                          const v1::GetQueueStatsRequest* req,
                                          v1::GetQueueStatsResponse* resp) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx,
                                     const v1::ListJobsRequest* req,
                                     v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* RetryDead(grpc::CallbackServerContext* ctx,
                                      const v1::RetryDeadRequest* req,
                                      v1::RetryDeadResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* ctx,
                                      const v1::DeleteJobRequest* req,
                                      v1::DeleteJobResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteQueue(grpc::CallbackServerContext* ctx,
                                        const v1::DeleteQueueRequest* req,
                                        v1::DeleteQueueResponse* resp) override;
  grpc::ServerUnaryReactor* PurgeDead(grpc::CallbackServerContext* ctx,
                                      const v1::PurgeDeadRequest* req,
                                      v1::PurgeDeadResponse* resp) override;
  grpc::ServerUnaryReactor* CreateQueue(grpc::CallbackServerContext* ctx,
                                        const v1::CreateQueueRequest* req,
                                        v1::CreateQueueResponse* resp) override;
  grpc::ServerUnaryReactor* UpdateQueue(grpc::CallbackServerContext* ctx,
                                        const v1::UpdateQueueRequest* req,
                                        v1::UpdateQueueResponse* resp) override;
  grpc::ServerUnaryReactor* PauseQueue(grpc::CallbackServerContext* ctx,
                                       const v1::PauseQueueRequest* req,
                                       v1::PauseQueueResponse* resp) override;
  grpc::ServerUnaryReactor* ResumeQueue(grpc::CallbackServerContext* ctx,
                                        const v1::ResumeQueueRequest* req,
                                        v1::ResumeQueueResponse* resp) override;
  grpc::ServerUnaryReactor* PutSchedule(grpc::CallbackServerContext* ctx,
                                        const v1::PutScheduleRequest* req,
                                        v1::PutScheduleResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteSchedule(grpc::CallbackServerContext* ctx,
                                           const v1::DeleteScheduleRequest* req,
                                           v1::DeleteScheduleResponse* resp) override;
  grpc::ServerUnaryReactor* ListSchedules(grpc::CallbackServerContext* ctx,
                                          const v1::ListSchedulesRequest* req,
                                          v1::ListSchedulesResponse* resp) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* ctx,
                                        const v1::ListWorkersRequest* req,
                                        v1::ListWorkersResponse* resp) override;

  // Calls that have started and are not done yet. Thread-safe.
  int64_t calls_in_flight() const { return calls_in_flight_.load(); }

 private:
  grpc::ServerUnaryReactor* NewReactor();
  grpc::ServerUnaryReactor* SetPaused(grpc::CallbackServerContext* ctx, const std::string& queue,
                                      bool paused);
  // Finishes `reactor` with PERMISSION_DENIED when `principal` (null: no
  // tokens) may administer no queue at all (the listings' rule).
  static bool FinishIfNoAdmin(grpc::ServerUnaryReactor* reactor, const Principal* principal);
  // Finishes `reactor` when the caller may not administer `queue`.
  bool FinishIfDenied(grpc::ServerUnaryReactor* reactor, grpc::CallbackServerContext* ctx,
                      const std::string& queue);

  std::atomic<int64_t> calls_in_flight_{0};
  const core::QueueAdmin* const admin_;
  const core::ScheduleAdmin* const schedules_;
  const core::WorkerRegistry* const workers_;
  const Authorizer* const authorizer_;
  const Limits limits_;
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_ADMIN_SERVICE_H_
