// ReflectionV1Service: gRPC server reflection as grpc.reflection.v1
// (proto/grpc/reflection/v1/reflection.proto), which gRPC 1.51 does not ship
// (it serves only grpc.reflection.v1alpha). Answers from the process's
// generated descriptor pool, like the v1alpha service: every .proto linked
// into the broker, its imports included.
//
// gRPC 1.57 and later ship grpc.reflection.v1 in grpc++_reflection (the
// same .proto file name): on such a gRPC, delete this service and
// proto/grpc/reflection/v1/, which would then be registered twice.
//
// InstallReflectionV1() adds it to every grpc::ServerBuilder created after
// the call, as a ServerBuilderPlugin, so that it lists the services of the
// server it is part of (itself included). Call it before building a server.
#ifndef JOBWIRE_BROKER_SERVER_REFLECTION_V1_SERVICE_H_
#define JOBWIRE_BROKER_SERVER_REFLECTION_V1_SERVICE_H_

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"

namespace jobwire::server {

class ReflectionV1Service final : public grpc::reflection::v1::ServerReflection::CallbackService {
 public:
  // The server's service names, read at each list_services request (the list
  // belongs to the grpc::Server and lives as long as it). Null: none yet.
  void SetServiceList(const std::vector<std::string>* services);

  grpc::ServerBidiReactor<grpc::reflection::v1::ServerReflectionRequest,
                          grpc::reflection::v1::ServerReflectionResponse>*
  ServerReflectionInfo(grpc::CallbackServerContext* context) override;

  // The answer to one request (exposed for the reactor).
  void Answer(const grpc::reflection::v1::ServerReflectionRequest& request,
              grpc::reflection::v1::ServerReflectionResponse* response);

 private:
  absl::Mutex mu_;
  const std::vector<std::string>* services_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// Registers the plugin factory once per process; later calls do nothing.
void InstallReflectionV1();

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_REFLECTION_V1_SERVICE_H_
