#include "broker/base/error_reason.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/types/optional.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace jobwire::base {
namespace {

// Payload type URLs (never sent as such: ToGrpcStatus turns them into
// google.rpc details).
constexpr absl::string_view kReasonUrl = "type.jobwire.dev/error_reason";
constexpr absl::string_view kMetadataUrlPrefix = "type.jobwire.dev/error_metadata/";
constexpr absl::string_view kFieldUrl = "type.jobwire.dev/error_field";
constexpr absl::string_view kRetryDelayUrl = "type.jobwire.dev/error_retry_delay_ms";

std::optional<std::string> Payload(const absl::Status& status, absl::string_view url) {
  absl::optional<absl::Cord> payload = status.GetPayload(url);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

}  // namespace

absl::Status WithReason(absl::Status status, absl::string_view reason) {
  if (!status.ok()) status.SetPayload(kReasonUrl, absl::Cord(reason));
  return status;
}

absl::Status WithMetadata(absl::Status status, absl::string_view key, absl::string_view value) {
  if (!status.ok()) status.SetPayload(absl::StrCat(kMetadataUrlPrefix, key), absl::Cord(value));
  return status;
}

absl::Status WithField(absl::Status status, absl::string_view field) {
  if (status.ok()) return status;
  status.SetPayload(kFieldUrl, absl::Cord(field));
  return WithMetadata(WithReason(std::move(status), reason::kInvalidField), "field", field);
}

absl::Status WithRetryDelay(absl::Status status, absl::Duration delay) {
  if (!status.ok()) {
    status.SetPayload(kRetryDelayUrl, absl::Cord(absl::StrCat(absl::ToInt64Milliseconds(delay))));
  }
  return status;
}

absl::Status TooManyStreamsError(absl::string_view message, absl::string_view reason) {
  return WithRetryDelay(WithReason(absl::ResourceExhaustedError(message), reason),
                        absl::Seconds(1));
}

absl::Status RedisUnavailableError(absl::string_view message) {
  return WithReason(absl::UnavailableError(message), reason::kRedisUnavailable);
}

std::string ReasonOf(const absl::Status& status) {
  std::optional<std::string> reason = Payload(status, kReasonUrl);
  return reason.has_value() ? *std::move(reason) : absl::StatusCodeToString(status.code());
}

std::vector<std::pair<std::string, std::string>> MetadataOf(const absl::Status& status) {
  std::vector<std::pair<std::string, std::string>> out;
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& value) {
    if (absl::StartsWith(url, kMetadataUrlPrefix)) {
      out.emplace_back(std::string(url.substr(kMetadataUrlPrefix.size())), std::string(value));
    }
  });
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> FieldOf(const absl::Status& status) {
  return Payload(status, kFieldUrl);
}

std::optional<absl::Duration> RetryDelayOf(const absl::Status& status) {
  std::optional<std::string> text = Payload(status, kRetryDelayUrl);
  int64_t ms = 0;
  if (!text.has_value() || !absl::SimpleAtoi(*text, &ms)) return std::nullopt;
  return absl::Milliseconds(ms);
}

}  // namespace jobwire::base
