#include "client/cpp/error_details.h"

#include <cstdint>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/types/optional.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/unknown_field_set.h"

namespace jobwire::client {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// Field numbers of the google.rpc messages (google/rpc/status.proto and
// error_details.proto), read with protobuf's UnknownFieldSet so that the
// client needs no generated googleapis types.
constexpr int kStatusDetails = 3;           // Status.details: repeated Any
constexpr int kErrorInfoReason = 1;         // ErrorInfo.reason
constexpr int kErrorInfoDomain = 2;         // ErrorInfo.domain
constexpr int kErrorInfoMetadata = 3;       // ErrorInfo.metadata: map entries
constexpr int kMapKey = 1;
constexpr int kMapValue = 2;
constexpr int kBadRequestViolations = 1;    // BadRequest.field_violations
constexpr int kViolationField = 1;          // FieldViolation.field
constexpr int kRetryInfoDelay = 1;          // RetryInfo.retry_delay: Duration
constexpr int kDurationSeconds = 1;
constexpr int kDurationNanos = 2;

constexpr absl::string_view kDomain = "jobwire.dev";

// Reads the fields of the payload at `url` into `fields`; false when it is
// absent or unparsable.
bool Detail(const absl::Status& status, absl::string_view url, UnknownFieldSet* fields) {
  absl::optional<absl::Cord> payload = status.GetPayload(url);
  return payload.has_value() && fields->ParseFromString(std::string(*payload));
}

// The last value of length-delimited field `number` (proto3: last wins).
std::string Bytes(const UnknownFieldSet& fields, int number) {
  std::string out;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& f = fields.field(i);
    if (f.number() == number && f.type() == UnknownField::TYPE_LENGTH_DELIMITED) {
      out = f.length_delimited();
    }
  }
  return out;
}

int64_t Varint(const UnknownFieldSet& fields, int number) {
  int64_t out = 0;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& f = fields.field(i);
    if (f.number() == number && f.type() == UnknownField::TYPE_VARINT) {
      out = static_cast<int64_t>(f.varint());
    }
  }
  return out;
}

}  // namespace

std::string ErrorReason(const absl::Status& status) {
  UnknownFieldSet info;
  return Detail(status, kErrorInfoUrl, &info) ? Bytes(info, kErrorInfoReason) : "";
}

std::string ErrorDomain(const absl::Status& status) {
  UnknownFieldSet info;
  return Detail(status, kErrorInfoUrl, &info) ? Bytes(info, kErrorInfoDomain) : "";
}

std::map<std::string, std::string> ErrorMetadata(const absl::Status& status) {
  std::map<std::string, std::string> out;
  UnknownFieldSet info;
  if (!Detail(status, kErrorInfoUrl, &info)) return out;
  for (int i = 0; i < info.field_count(); ++i) {
    const UnknownField& f = info.field(i);
    if (f.number() != kErrorInfoMetadata || f.type() != UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    UnknownFieldSet entry;
    if (entry.ParseFromString(f.length_delimited())) {
      out[Bytes(entry, kMapKey)] = Bytes(entry, kMapValue);
    }
  }
  return out;
}

std::optional<std::string> ErrorField(const absl::Status& status) {
  UnknownFieldSet bad_request;
  if (!Detail(status, kBadRequestUrl, &bad_request)) return std::nullopt;
  for (int i = 0; i < bad_request.field_count(); ++i) {
    const UnknownField& f = bad_request.field(i);
    if (f.number() != kBadRequestViolations || f.type() != UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    UnknownFieldSet violation;
    if (violation.ParseFromString(f.length_delimited())) return Bytes(violation, kViolationField);
  }
  return std::nullopt;
}

std::optional<absl::Duration> ErrorRetryDelay(const absl::Status& status) {
  UnknownFieldSet retry;
  if (!Detail(status, kRetryInfoUrl, &retry)) return std::nullopt;
  UnknownFieldSet delay;
  if (!delay.ParseFromString(Bytes(retry, kRetryInfoDelay))) return std::nullopt;
  return absl::Seconds(Varint(delay, kDurationSeconds)) +
         absl::Nanoseconds(Varint(delay, kDurationNanos));
}

void AttachErrorDetails(absl::string_view rpc_status_bytes, absl::Status* status) {
  if (status->ok() || rpc_status_bytes.empty()) return;
  UnknownFieldSet rpc_status;
  if (!rpc_status.ParseFromString(std::string(rpc_status_bytes))) return;
  for (int i = 0; i < rpc_status.field_count(); ++i) {
    const UnknownField& f = rpc_status.field(i);
    if (f.number() != kStatusDetails || f.type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
    google::protobuf::Any any;
    if (any.ParseFromString(f.length_delimited()) && !any.type_url().empty()) {
      status->SetPayload(any.type_url(), absl::Cord(any.value()));
    }
  }
}

void AttachReason(absl::string_view reason, absl::Status* status) {
  if (status->ok() || reason.empty()) return;
  UnknownFieldSet info;
  info.AddLengthDelimited(kErrorInfoReason, std::string(reason));
  info.AddLengthDelimited(kErrorInfoDomain, std::string(kDomain));
  std::string bytes;
  info.SerializeToString(&bytes);
  status->SetPayload(kErrorInfoUrl, absl::Cord(std::move(bytes)));
}

}  // namespace jobwire::client
