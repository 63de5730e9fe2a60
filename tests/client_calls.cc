// The client helpers of tests/test_harness.h (MakeClaim, MakeJob, Enqueue,
// GetJob, Ack, ...): one gRPC call each, with a 10 s deadline.
#include "absl/time/clock.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

void SetRpcDeadline(grpc::ClientContext& context) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
}

}  // namespace

v1::ClaimRequest MakeClaim(std::vector<std::string> queues, int max_in_flight,
                           int64_t lease_ms, const std::string& worker_id) {
  v1::ClaimRequest request;
  for (std::string& queue : queues) request.add_queues(std::move(queue));
  request.set_max_in_flight(max_in_flight);
  request.set_lease_ms(lease_ms);
  request.set_worker_id(worker_id);
  return request;
}

v1::EnqueueRequest MakeJob(const std::string& queue, const std::string& payload,
                           int32_t priority) {
  v1::EnqueueRequest request;
  request.set_queue(queue);
  request.set_type("test");
  request.set_payload(payload);
  request.set_priority(priority);
  return request;
}

grpc::Status Enqueue(v1::BrokerService::StubInterface& stub,
                     const v1::EnqueueRequest& request,
                     v1::EnqueueResponse* response) {
  grpc::ClientContext context;
  SetRpcDeadline(context);
  return stub.Enqueue(&context, request, response);
}

grpc::Status EnqueueBatch(v1::BrokerService::StubInterface& stub,
                          const v1::EnqueueBatchRequest& request,
                          v1::EnqueueBatchResponse* response) {
  grpc::ClientContext context;
  SetRpcDeadline(context);
  return stub.EnqueueBatch(&context, request, response);
}

grpc::Status GetJob(v1::BrokerService::StubInterface& stub, const v1::GetJobRequest& request,
                    v1::Job* job) {
  grpc::ClientContext context;
  SetRpcDeadline(context);
  v1::GetJobResponse response;
  grpc::Status status = stub.GetJob(&context, request, &response);
  *job = std::move(*response.mutable_job());
  return status;
}

grpc::Status GetJob(v1::BrokerService::StubInterface& stub, const std::string& queue,
                    const std::string& job_id, v1::Job* job) {
  v1::GetJobRequest request;
  request.set_queue(queue);
  request.set_job_id(job_id);
  return GetJob(stub, request, job);
}

grpc::Status GetJobByIdempotencyKey(v1::BrokerService::StubInterface& stub,
                                    const std::string& queue, const std::string& key,
                                    v1::Job* job) {
  v1::GetJobRequest request;
  request.set_queue(queue);
  request.set_idempotency_key(key);
  return GetJob(stub, request, job);
}

grpc::Status Ack(v1::BrokerService::StubInterface& stub, const std::string& queue,
                 const std::string& job_id, const std::string& lease_token,
                 const std::string& result) {
  grpc::ClientContext context;
  SetRpcDeadline(context);
  v1::AckRequest request;
  request.set_queue(queue);
  request.set_job_id(job_id);
  request.set_lease_token(lease_token);
  request.set_result(result);
  v1::AckResponse response;
  return stub.Ack(&context, request, &response);
}

grpc::Status Ack(v1::BrokerService::StubInterface& stub, const v1::ClaimedJob& claimed,
                 const std::string& result) {
  return Ack(stub, claimed.job().queue(), claimed.job().id(),
             claimed.lease_token(), result);
}

grpc::Status AckBatch(v1::BrokerService::StubInterface& stub,
                      const v1::AckBatchRequest& request,
                      v1::AckBatchResponse* response) {
  grpc::ClientContext context;
  SetRpcDeadline(context);
  return stub.AckBatch(&context, request, response);
}

grpc::Status Fail(v1::BrokerService::StubInterface& stub,
                  const v1::FailRequest& request, v1::FailResponse* response) {
  grpc::ClientContext context;
  SetRpcDeadline(context);
  return stub.Fail(&context, request, response);
}

grpc::Status ExtendLease(v1::BrokerService::StubInterface& stub,
                         const v1::ExtendLeaseRequest& request,
                         v1::ExtendLeaseResponse* response) {
  grpc::ClientContext context;
  SetRpcDeadline(context);
  return stub.ExtendLease(&context, request, response);
}

grpc::Status Cancel(v1::BrokerService::StubInterface& stub, const std::string& queue,
                    const std::string& job_id) {
  grpc::ClientContext context;
  SetRpcDeadline(context);
  v1::CancelRequest request;
  request.set_queue(queue);
  request.set_job_id(job_id);
  v1::CancelResponse response;
  return stub.Cancel(&context, request, &response);
}

v1::FailRequest MakeFail(const v1::ClaimedJob& claimed,
                         const std::string& error, bool non_retryable,
                         int64_t retry_after_ms) {
  v1::FailRequest request;
  request.set_queue(claimed.job().queue());
  request.set_job_id(claimed.job().id());
  request.set_lease_token(claimed.lease_token());
  request.set_error(error);
  request.set_non_retryable(non_retryable);
  request.set_retry_after_ms(retry_after_ms);
  return request;
}

std::string MustEnqueue(v1::BrokerService::StubInterface& stub,
                        const v1::EnqueueRequest& request) {
  v1::EnqueueResponse response;
  grpc::Status status = Enqueue(stub, request, &response);
  EXPECT_TRUE(status.ok()) << "Enqueue on " << request.queue() << ": "
                           << StatusText(status);
  if (!status.ok()) return "";
  EXPECT_FALSE(response.job_id().empty());
  return response.job_id();
}

v1::QueueStats MustGetQueueStats(v1::AdminService::StubInterface& admin,
                                 const std::string& queue) {
  v1::GetQueueStatsRequest request;
  request.set_queue(queue);
  v1::GetQueueStatsResponse response;
  grpc::Status status = admin.GetQueueStats(RpcContext().get(), request, &response);
  EXPECT_TRUE(status.ok()) << "GetQueueStats " << queue << ": " << StatusText(status);
  return response.stats();
}

void WaitNoClaimStreams(v1::AdminService::StubInterface& admin) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  v1::ListWorkersResponse response;
  while (true) {
    response.Clear();
    grpc::Status status = admin.ListWorkers(RpcContext().get(), v1::ListWorkersRequest(), &response);
    if (status.ok() && response.streams_size() == 0) return;
    if (absl::Now() > deadline) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ADD_FAILURE() << "Claim streams still listed after 10 s: " << response.DebugString();
}

v1::Job MustGetJob(v1::BrokerService::StubInterface& stub, const std::string& queue,
                   const std::string& job_id) {
  v1::Job job;
  grpc::Status status = GetJob(stub, queue, job_id, &job);
  EXPECT_TRUE(status.ok()) << "GetJob " << job_id << " of " << queue << ": " << StatusText(status);
  return job;
}

std::unique_ptr<grpc::ClientContext> RpcContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  SetRpcDeadline(*context);
  return context;
}

}  // namespace jobwire::testing
