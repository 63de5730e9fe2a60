// gRPC health checking and server reflection of the real broker: SERVING
// only while Redis is reachable, NOT_SERVING while it is not, and back; the
// liveness service SERVING throughout.
#include <set>
#include <string>

#include <google/protobuf/descriptor.pb.h>

#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/health_client.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr const char* kBroker = "jobwire.v1.BrokerService";
constexpr const char* kLiveness = "jobwire.liveness";

// The liveness service's status now, or NOT_FOUND as a failure.
bool LivenessServing(const std::shared_ptr<grpc::Channel>& channel) {
  HealthStatus status;
  grpc::Status call = CheckHealth(channel, kLiveness, &status);
  EXPECT_TRUE(call.ok()) << call.error_message();
  return call.ok() && status == kServing;
}

class HealthTest : public BrokerTest {};

TEST_F(HealthTest, ServingFollowsRedisReachability) {
  auto channel = MakeChannel(broker_->address());
  for (const std::string service : {"", kBroker}) {
    EXPECT_TRUE(WaitForHealth(channel, service, kServing, absl::Seconds(5))) << service;
  }

  EXPECT_TRUE(LivenessServing(channel));

  redis_->Stop();
  for (const std::string service : {"", kBroker}) {
    EXPECT_TRUE(WaitForHealth(channel, service, kNotServing, absl::Seconds(5))) << service;
  }
  // Readiness is down, the process is alive: a liveness probe must not
  // restart it for a Redis outage.
  EXPECT_TRUE(LivenessServing(channel));
  // Not serving, but alive: calls answer UNAVAILABLE rather than hang.
  v1::Job job;
  EXPECT_EQ(GetJob(*stub_, "q", "1", &job).error_code(), grpc::StatusCode::UNAVAILABLE);

  JW_ASSERT_OK(redis_->Restart());
  // The reconnect backoff tops out at 2 s.
  for (const std::string service : {"", kBroker}) {
    EXPECT_TRUE(WaitForHealth(channel, service, kServing, absl::Seconds(8))) << service;
  }
  EXPECT_EQ(GetJob(*stub_, "q", "1", &job).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(HealthTest, UnknownServiceIsNotFound) {
  HealthStatus status;
  EXPECT_EQ(CheckHealth(MakeChannel(broker_->address()), "no.such.Service", &status).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// The services a list_services request on `stream` answers (v1 and v1alpha
// share the message shapes); empty when the stream fails.
template <typename Request, typename Response, typename Stream>
std::set<std::string> ListServices(Stream& stream) {
  Request request;
  request.set_list_services("");
  Response response;
  std::set<std::string> names;
  if (!stream.Write(request) || !stream.Read(&response)) return names;
  for (const auto& service : response.list_services_response().service()) {
    names.insert(service.name());
  }
  return names;
}

TEST_F(HealthTest, ReflectionListsTheServices) {
  namespace refl = ::grpc::reflection::v1alpha;
  auto stub = refl::ServerReflection::NewStub(MakeChannel(broker_->address()));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  auto stream = stub->ServerReflectionInfo(&ctx);
  std::set<std::string> names =
      ListServices<refl::ServerReflectionRequest, refl::ServerReflectionResponse>(*stream);
  EXPECT_TRUE(names.contains(kBroker));
  EXPECT_TRUE(names.contains("grpc.health.v1.Health"));
  EXPECT_TRUE(names.contains("grpc.reflection.v1alpha.ServerReflection"));
  stream->WritesDone();
  refl::ServerReflectionResponse response;
  while (stream->Read(&response)) {
  }
  JW_EXPECT_OK(stream->Finish());
}

// grpc.reflection.v1, as grpcurl and current clients ask first: the services,
// then the contract's file by symbol, with its imports; unknown symbols get an
// error response on the same stream.
TEST_F(HealthTest, ReflectionV1ListsTheServicesAndServesTheContract) {
  namespace refl = ::grpc::reflection::v1;
  auto stub = refl::ServerReflection::NewStub(MakeChannel(broker_->address()));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  auto stream = stub->ServerReflectionInfo(&ctx);

  std::set<std::string> names =
      ListServices<refl::ServerReflectionRequest, refl::ServerReflectionResponse>(*stream);
  for (const char* name : {kBroker, "jobwire.v1.AdminService", "grpc.health.v1.Health",
                           "grpc.reflection.v1alpha.ServerReflection",
                           "grpc.reflection.v1.ServerReflection"}) {
    EXPECT_TRUE(names.contains(name)) << name;
  }

  refl::ServerReflectionRequest request;
  refl::ServerReflectionResponse response;
  request.set_file_containing_symbol("jobwire.v1.AdminService.RetryDead");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.original_request().file_containing_symbol(), "jobwire.v1.AdminService.RetryDead");
  std::set<std::string> files;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    files.insert(file.name());
    if (file.name() == "jobwire/v1/admin.proto") {
      EXPECT_EQ(file.options().java_package(), "dev.jobwire.v1");
    }
  }
  // admin.proto and the broker.proto it imports.
  EXPECT_EQ(files, (std::set<std::string>{"jobwire/v1/admin.proto", "jobwire/v1/broker.proto"}));

  request.set_file_containing_symbol("jobwire.v1.NoSuchThing");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(response.file_descriptor_response().file_descriptor_proto().empty());

  stream->WritesDone();
  while (stream->Read(&response)) {
  }
  JW_EXPECT_OK(stream->Finish());
}

}  // namespace
}  // namespace jobwire::testing
