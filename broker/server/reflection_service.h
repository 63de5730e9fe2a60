// ReflectionService: gRPC server reflection, as grpc.reflection.v1
// (proto/grpc/reflection/v1/reflection.proto, which gRPC 1.51 does not
// ship) and as grpc.reflection.v1alpha (older grpcurl and clients), served
// on a completion queue of ours (service/cq_reactors.h) rather than by
// gRPC's reflection plugin, whose synchronous-API threads would poll beside
// the queue's one thread. Answers from the process's generated descriptor
// pool: every .proto linked into the broker, its imports included. The two
// versions' messages are the same on the wire, so a v1alpha request is
// answered by reading it as a v1 one.
//
// Lifetime: Serve once the server is built; the service must outlive the
// queue's polling.
//
// Thread safety: Answer may be called from any thread.
#ifndef JOBWIRE_BROKER_SERVER_REFLECTION_SERVICE_H_
#define JOBWIRE_BROKER_SERVER_REFLECTION_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"

namespace jobwire::server {

class ReflectionService {
 public:
  // `services`: the full names of the server's services, which
  // list_services answers (both reflection services included).
  explicit ReflectionService(std::vector<std::string> services);

  // For ServerBuilder::RegisterService: both versions.
  std::vector<grpc::Service*> grpc_services() { return {&v1_, &v1alpha_}; }
  // Starts serving both on `cq`; call once.
  void Serve(grpc::ServerCompletionQueue* cq);

  // The answer to one request.
  void Answer(const grpc::reflection::v1::ServerReflectionRequest& request,
              grpc::reflection::v1::ServerReflectionResponse* response) const;

 private:
  const std::vector<std::string> services_;
  grpc::reflection::v1::ServerReflection::AsyncService v1_;
  grpc::reflection::v1alpha::ServerReflection::AsyncService v1alpha_;
  std::vector<std::shared_ptr<void>> methods_;  // what Serve started
};

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_REFLECTION_SERVICE_H_
