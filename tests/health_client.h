// Client helpers for the broker's standard gRPC health service
// (grpc.health.v1), for the tests in this folder.
#ifndef JOBWIRE_TESTS_HEALTH_CLIENT_H_
#define JOBWIRE_TESTS_HEALTH_CLIENT_H_

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace jobwire::testing {

using HealthStatus = ::grpc::health::v1::HealthCheckResponse::ServingStatus;
inline constexpr HealthStatus kServing = ::grpc::health::v1::HealthCheckResponse::SERVING;
inline constexpr HealthStatus kNotServing = ::grpc::health::v1::HealthCheckResponse::NOT_SERVING;

// One Health/Check of `service` ("" = the whole server) with a 2 s deadline.
inline grpc::Status CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& service, HealthStatus* status) {
  auto stub = ::grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  ::grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  ::grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = stub->Check(&ctx, request, &response);
  *status = response.status();
  return s;
}

// Polls Check every 50 ms until it answers OK with `want`; false when it
// has not within `timeout`.
inline bool WaitForHealth(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                          HealthStatus want, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  do {
    HealthStatus got;
    if (CheckHealth(channel, service, &got).ok() && got == want) return true;
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < deadline);
  return false;
}

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_HEALTH_CLIENT_H_
