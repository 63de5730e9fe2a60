#include "broker/server/reflection_v1_service.h"

#include <memory>
#include <mutex>
#include <set>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/impl/server_initializer.h>
#include <grpcpp/server_builder.h>

namespace jobwire::server {
namespace {

namespace refl = ::grpc::reflection::v1;
using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;

// Adds `file` and its imports, transitively, each once, to `out`.
void AddFileAndImports(const FileDescriptor* file, std::set<std::string>* seen,
                       refl::FileDescriptorResponse* out) {
  if (!seen->insert(file->name()).second) return;
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(out->add_file_descriptor_proto());
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddFileAndImports(file->dependency(i), seen, out);
  }
}

void SetError(grpc::StatusCode code, const std::string& message,
              refl::ServerReflectionResponse* response) {
  response->mutable_error_response()->set_error_code(code);
  response->mutable_error_response()->set_error_message(message);
}

// One stream: read a request, write its answer, read the next; the stream
// ends OK when the client half-closes.
class Reactor final
    : public grpc::ServerBidiReactor<refl::ServerReflectionRequest, refl::ServerReflectionResponse> {
 public:
  explicit Reactor(ReflectionV1Service* service) : service_(service) { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    response_.Clear();
    service_->Answer(request_, &response_);
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    StartRead(&request_);
  }

  void OnDone() override { delete this; }

 private:
  ReflectionV1Service* const service_;
  refl::ServerReflectionRequest request_;
  refl::ServerReflectionResponse response_;
};

// Registers the service with each server and hands it the server's list of
// services once they are all registered (Finish).
class Plugin final : public grpc::ServerBuilderPlugin {
 public:
  std::string name() override { return "jobwire_reflection_v1"; }
  void InitServer(grpc::ServerInitializer* si) override { si->RegisterService(service_); }
  void Finish(grpc::ServerInitializer* si) override {
    service_->SetServiceList(si->GetServiceList());
  }
  void ChangeArguments(const std::string& /*name*/, void* /*value*/) override {}
  bool has_sync_methods() const override { return false; }
  bool has_async_methods() const override { return false; }

 private:
  std::shared_ptr<ReflectionV1Service> service_ = std::make_shared<ReflectionV1Service>();
};

std::unique_ptr<grpc::ServerBuilderPlugin> CreatePlugin() { return std::make_unique<Plugin>(); }

}  // namespace

void ReflectionV1Service::SetServiceList(const std::vector<std::string>* services) {
  absl::MutexLock lock(&mu_);
  services_ = services;
}

grpc::ServerBidiReactor<refl::ServerReflectionRequest, refl::ServerReflectionResponse>*
ReflectionV1Service::ServerReflectionInfo(grpc::CallbackServerContext* /*context*/) {
  return new Reactor(this);
}

void ReflectionV1Service::Answer(const refl::ServerReflectionRequest& request,
                                 refl::ServerReflectionResponse* response) {
  response->set_valid_host(request.host());
  *response->mutable_original_request() = request;
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  const FileDescriptor* file = nullptr;
  std::string missing;
  switch (request.message_request_case()) {
    case refl::ServerReflectionRequest::kListServices: {
      refl::ListServiceResponse* list = response->mutable_list_services_response();
      absl::MutexLock lock(&mu_);
      if (services_ != nullptr) {
        for (const std::string& name : *services_) list->add_service()->set_name(name);
      }
      return;
    }
    case refl::ServerReflectionRequest::kFileByFilename:
      file = pool->FindFileByName(request.file_by_filename());
      missing = "file " + request.file_by_filename();
      break;
    case refl::ServerReflectionRequest::kFileContainingSymbol:
      file = pool->FindFileContainingSymbol(request.file_containing_symbol());
      missing = "symbol " + request.file_containing_symbol();
      break;
    case refl::ServerReflectionRequest::kFileContainingExtension: {
      const refl::ExtensionRequest& ext = request.file_containing_extension();
      const google::protobuf::Descriptor* type = pool->FindMessageTypeByName(ext.containing_type());
      const google::protobuf::FieldDescriptor* field =
          type == nullptr ? nullptr : pool->FindExtensionByNumber(type, ext.extension_number());
      if (field != nullptr) file = field->file();
      missing = "extension " + std::to_string(ext.extension_number()) + " of " +
                ext.containing_type();
      break;
    }
    case refl::ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const google::protobuf::Descriptor* type =
          pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr) {
        return SetError(grpc::StatusCode::NOT_FOUND,
                        "type " + request.all_extension_numbers_of_type() + " not found",
                        response);
      }
      std::vector<const google::protobuf::FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      refl::ExtensionNumberResponse* numbers = response->mutable_all_extension_numbers_response();
      numbers->set_base_type_name(type->full_name());
      for (const auto* extension : extensions) numbers->add_extension_number(extension->number());
      return;
    }
    default:
      return SetError(grpc::StatusCode::UNIMPLEMENTED, "no request kind set", response);
  }
  if (file == nullptr) return SetError(grpc::StatusCode::NOT_FOUND, missing + " not found", response);
  std::set<std::string> seen;
  AddFileAndImports(file, &seen, response->mutable_file_descriptor_response());
}

void InstallReflectionV1() {
  static std::once_flag once;
  std::call_once(once, [] { grpc::ServerBuilder::InternalAddPluginFactory(&CreatePlugin); });
}

}  // namespace jobwire::server
