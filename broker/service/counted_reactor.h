// CountedReactor: a unary call's reactor that counts itself in a shared
// counter until gRPC is done with it, so that shutdown can wait for the calls
// still running (BrokerServer::Shutdown).
#ifndef JOBWIRE_BROKER_SERVICE_COUNTED_REACTOR_H_
#define JOBWIRE_BROKER_SERVICE_COUNTED_REACTOR_H_

#include <atomic>
#include <cstdint>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "broker/service/grpc_status.h"

namespace jobwire::service {

class CountedReactor : public grpc::ServerUnaryReactor {
 public:
  // `in_flight` must outlive the reactor.
  explicit CountedReactor(std::atomic<int64_t>* in_flight) : in_flight_(in_flight) {
    ++*in_flight_;
  }
  void OnDone() override {
    --*in_flight_;
    delete this;
  }

 private:
  std::atomic<int64_t>* const in_flight_;
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_COUNTED_REACTOR_H_
