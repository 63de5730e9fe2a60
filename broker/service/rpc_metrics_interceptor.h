// RpcMetricsInterceptor: a gRPC server interceptor that counts every call
// of every service on the server (jobwire.v1.BrokerService, health, reflection, and
// any service registered later) by method and final status code in Metrics.
//
//   builder.experimental().SetInterceptorCreators(
//       MakeRpcMetricsInterceptors(&metrics));
#ifndef JOBWIRE_BROKER_SERVICE_RPC_METRICS_INTERCEPTOR_H_
#define JOBWIRE_BROKER_SERVICE_RPC_METRICS_INTERCEPTOR_H_

#include <memory>
#include <vector>

#include <grpcpp/support/server_interceptor.h>

#include "broker/core/metrics.h"

namespace jobwire::service {

// Thread safety: gRPC creates one interceptor per call; the factory is
// shared and stateless apart from `metrics`, which must outlive the server.
class RpcMetricsInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsInterceptorFactory(core::Metrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  core::Metrics* const metrics_;
};

// The creator list for ServerBuilder::experimental().SetInterceptorCreators.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
MakeRpcMetricsInterceptors(core::Metrics* metrics);

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_RPC_METRICS_INTERCEPTOR_H_
