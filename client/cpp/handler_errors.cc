#include "client/cpp/handler_errors.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <typeinfo>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/cpp/worker.h"

namespace jobwire::client {
namespace {

constexpr char kNonRetryableUrl[] = "type.jobwire.dev/non-retryable";
constexpr char kRetryAfterUrl[] = "type.jobwire.dev/retry_after_ms";
constexpr char kKeepAttemptUrl[] = "type.jobwire.dev/keep_attempt";

std::string Demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 ? std::string(demangled.get()) : std::string(name);
}

}  // namespace

absl::Status NonRetryable(absl::Status status) {
  status.SetPayload(kNonRetryableUrl, absl::Cord("1"));
  return status;
}

bool IsNonRetryable(const absl::Status& status) {
  return status.GetPayload(kNonRetryableUrl).has_value();
}

absl::Status RetryAfter(absl::Status status, absl::Duration delay, bool keep_attempt) {
  int64_t ms = kMaxRetryAfterMs;
  if (delay < absl::Milliseconds(kMaxRetryAfterMs)) {
    ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(absl::Ceil(delay, absl::Milliseconds(1))));
  }
  status.SetPayload(kRetryAfterUrl, absl::Cord(absl::StrCat(ms)));
  if (keep_attempt) {
    status.SetPayload(kKeepAttemptUrl, absl::Cord("1"));
  } else {
    status.ErasePayload(kKeepAttemptUrl);
  }
  return status;
}

int64_t RetryAfterMs(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryAfterUrl);
  int64_t ms = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &ms)) return 0;
  return std::clamp<int64_t>(ms, 1, kMaxRetryAfterMs);
}

bool KeepsAttempt(const absl::Status& status) {
  return RetryAfterMs(status) > 0 && status.GetPayload(kKeepAttemptUrl).has_value();
}

absl::Status HandlerFailure(const absl::Status& status) {
  absl::Status failure(status.code(), absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                                                   status.message()));
  if (IsNonRetryable(status)) failure = NonRetryable(std::move(failure));
  if (int64_t ms = RetryAfterMs(status); ms > 0) {
    failure = RetryAfter(std::move(failure), absl::Milliseconds(ms), KeepsAttempt(status));
  }
  return failure;
}

absl::Status ExceptionFailure(const std::exception& e) {
  return absl::UnknownError(absl::StrCat(Demangle(typeid(e).name()), ": ", e.what()));
}

namespace {

// The length of the well-formed UTF-8 sequence at text[i], 0 when there is
// none (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
size_t SequenceLength(absl::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

std::string ValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceLength(text, i);
    if (n == 0) {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      ++i;
    } else {
      out.append(text.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string TruncateErrorText(absl::string_view raw) {
  const std::string valid = ValidUtf8(raw);
  const absl::string_view text = valid;
  if (text.size() <= kMaxErrorBytes) return valid;
  size_t end = kMaxErrorBytes;
  // Back over the continuation bytes (10xxxxxx) of the character that
  // straddles the limit, to its first byte; at most 3 of them in UTF-8.
  for (int i = 0; i < 3 && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80;
       ++i) {
    --end;
  }
  return std::string(text.substr(0, end));
}

void SetFailure(const absl::Status& failure, v1::FailRequest* request) {
  request->set_error(TruncateErrorText(failure.message()));
  request->set_non_retryable(IsNonRetryable(failure));
  if (request->non_retryable()) return;
  request->set_retry_after_ms(RetryAfterMs(failure));
  request->set_keep_attempt(KeepsAttempt(failure));
}

}  // namespace jobwire::client
