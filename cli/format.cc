#include "cli/format.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

namespace jobwire::cli {

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string Age(int64_t ms) {
  if (ms <= 0) return "-";
  // Whole seconds from one second on: "3m20s" rather than "3m20.123s".
  return absl::FormatDuration(ms < 1000 ? absl::Milliseconds(ms) : absl::Seconds(ms / 1000));
}

std::string TimeoutText(int64_t ms) {
  if (ms == 0) return "no limit";
  if (ms < 0) return "the broker's";
  return absl::StrCat(ms, " ms");
}

std::string RateLimitText(const v1::RateLimit& limit) {
  return absl::StrCat(limit.count(), " per ", limit.interval_ms(), " ms, burst ", limit.burst());
}

v1::RateLimit ResolvedBurst(v1::RateLimit limit) {
  if (limit.burst() == 0) limit.set_burst(limit.count());
  return limit;
}

std::string Time(int64_t ms) {
  if (ms <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

std::string StateName(v1::JobState state) {
  return absl::AsciiStrToLower(absl::StripPrefix(v1::JobState_Name(state), "JOB_STATE_"));
}

std::string Bytes(const std::string& bytes) {
  for (unsigned char c : bytes) {
    if (c < 0x20 && c != '\n' && c != '\t') return "base64:" + absl::Base64Escape(bytes);
  }
  return bytes;
}

std::string Truncate(const std::string& text, size_t max) {
  return text.size() <= max ? text : text.substr(0, max - 3) + "...";
}

}  // namespace jobwire::cli
