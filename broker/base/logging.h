// Minimal structured logging: one JSON object per line on stderr, e.g.
//   {"ts":"2026-12-04T10:00:00.123Z","level":"info","msg":"...","port":50051}
// "ts" is UTC with milliseconds. Field values keep their kind: strings are
// JSON strings, integers and finite doubles JSON numbers, bools JSON bools.
// Every line is valid JSON in valid UTF-8: control characters are escaped
// and each byte that is not part of a well-formed UTF-8 sequence becomes
// U+FFFD (as Go's encoding/json does), so a queue name or an error text
// from Redis can never break a log shipper's parser.
#ifndef JOBWIRE_BROKER_BASE_LOGGING_H_
#define JOBWIRE_BROKER_BASE_LOGGING_H_

#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace jobwire::base {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped. Default kInfo. Thread-safe.
void SetLogLevel(LogLevel level);
// The level set last.
LogLevel GetLogLevel();
// Parses "debug", "info", "warning", "error"; false when unknown.
bool ParseLogLevel(absl::string_view text, LogLevel* level);

// A field's value: text (a JSON string) or a number or bool (written as
// such). Built implicitly, so fields read {{"queue", name}, {"jobs", n}}.
class LogValue {
 public:
  LogValue(std::string text) : text_(std::move(text)) {}  // NOLINT
  LogValue(absl::string_view text) : text_(text) {}       // NOLINT
  LogValue(const char* text) : text_(text) {}             // NOLINT
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  LogValue(T number) : text_(absl::StrCat(number)), quoted_(false) {}  // NOLINT
  LogValue(double number);                                            // NOLINT
  LogValue(bool value) : text_(value ? "true" : "false"), quoted_(false) {}  // NOLINT

  // Appends the value as JSON.
  void AppendTo(std::string* out) const;

 private:
  std::string text_;
  bool quoted_ = true;
};

using LogField = std::pair<absl::string_view, LogValue>;

// Writes {"ts":...,"level":...,"msg":...,<fields>} as one line. Thread-safe.
void Log(LogLevel level, absl::string_view message, absl::Span<const LogField> fields = {});

// An info line about one job: {"msg":<message>,"queue":..,"job_id":..} and
// "trace_id" when `trace_id` is not empty (the trace id of the job's W3C
// traceparent header, so that the line leads to the job's trace).
void LogJob(absl::string_view message, absl::string_view queue, absl::string_view job_id,
            absl::string_view trace_id);

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_LOGGING_H_
