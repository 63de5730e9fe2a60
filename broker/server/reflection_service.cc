#include "broker/server/reflection_service.h"

#include <set>
#include <type_traits>
#include <utility>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include "broker/service/cq_reactors.h"

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

// One stream of either version: read a request, write its answer, read the
// next; the stream ends OK when the client half-closes.
template <typename Request, typename Response>
class Reactor final : public service::StreamReactor<Request, Response> {
 public:
  explicit Reactor(const ReflectionService* service) : service_(service) {
    this->StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return this->Finish(grpc::Status::OK);
    response_.Clear();
    if constexpr (std::is_same_v<Request, refl::ServerReflectionRequest>) {
      service_->Answer(request_, &response_);
    } else {  // v1alpha: the same messages on the wire
      refl::ServerReflectionRequest request;
      refl::ServerReflectionResponse response;
      request.ParseFromString(request_.SerializeAsString());
      service_->Answer(request, &response);
      response_.ParseFromString(response.SerializeAsString());
    }
    this->StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return this->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    this->StartRead(&request_);
  }

  void OnDone() override { delete this; }

 private:
  const ReflectionService* const service_;
  Request request_;
  Response response_;
};

}  // namespace

ReflectionService::ReflectionService(std::vector<std::string> services)
    : services_(std::move(services)) {}

void ReflectionService::Serve(grpc::ServerCompletionQueue* cq) {
  using V1 = refl::ServerReflection::AsyncService;
  using V1alpha = ::grpc::reflection::v1alpha::ServerReflection::AsyncService;
  methods_.push_back(service::ServeBidiStream<V1>(
      &v1_, &V1::RequestServerReflectionInfo, cq, [this](grpc::ServerContext*) {
        return new Reactor<refl::ServerReflectionRequest, refl::ServerReflectionResponse>(this);
      }));
  methods_.push_back(service::ServeBidiStream<V1alpha>(
      &v1alpha_, &V1alpha::RequestServerReflectionInfo, cq, [this](grpc::ServerContext*) {
        return new Reactor<::grpc::reflection::v1alpha::ServerReflectionRequest,
                           ::grpc::reflection::v1alpha::ServerReflectionResponse>(this);
      }));
}

void ReflectionService::Answer(const refl::ServerReflectionRequest& request,
                               refl::ServerReflectionResponse* response) const {
  response->set_valid_host(request.host());
  *response->mutable_original_request() = request;
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  const FileDescriptor* file = nullptr;
  std::string missing;
  switch (request.message_request_case()) {
    case refl::ServerReflectionRequest::kListServices: {
      refl::ListServiceResponse* list = response->mutable_list_services_response();
      for (const std::string& name : services_) list->add_service()->set_name(name);
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

}  // namespace jobwire::server
