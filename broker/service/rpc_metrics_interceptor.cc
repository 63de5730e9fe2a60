#include "broker/service/rpc_metrics_interceptor.h"

#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace jobwire::service {
namespace {

using grpc::experimental::InterceptionHookPoints;

// Counts the call once, when its status is sent, with the time since the
// interceptor was made (when the call arrived).
class RpcMetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(grpc::experimental::ServerRpcInfo* info, core::Metrics* metrics)
      : method_(info->method() != nullptr ? info->method() : ""),
        metrics_(metrics),
        start_(absl::Now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      metrics_->RpcFinished(
          method_, absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
          absl::Now() - start_);
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  core::Metrics* const metrics_;
  const absl::Time start_;
};

}  // namespace

grpc::experimental::Interceptor* RpcMetricsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcMetricsInterceptor(info, metrics_);
}

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
MakeRpcMetricsInterceptors(core::Metrics* metrics) {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<RpcMetricsInterceptorFactory>(metrics));
  return creators;
}

}  // namespace jobwire::service
