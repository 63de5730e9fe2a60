// Minimal structured logging: one JSON object per line on stderr.
#ifndef JOBWIRE_BROKER_BASE_LOGGING_H_
#define JOBWIRE_BROKER_BASE_LOGGING_H_

#include <string>
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include <utility>

namespace jobwire::base {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped. Default kInfo. Thread-safe.
void SetLogLevel(LogLevel level);
// Parses "debug", "info", "warning", "error"; false when unknown.
bool ParseLogLevel(absl::string_view text, LogLevel* level);

using LogField = std::pair<absl::string_view, std::string>;

// Writes {"ts":...,"level":...,"msg":...,<fields>} as one line. Thread-safe.
void Log(LogLevel level, absl::string_view message, absl::Span<const LogField> fields = {});

// An info line about one job: {"msg":<message>,"queue":..,"job_id":..} and
// "trace_id" when `trace_id` is not empty (the trace id of the job's W3C
// traceparent header, so that the line leads to the job's trace).
void LogJob(absl::string_view message, absl::string_view queue, absl::string_view job_id,
            absl::string_view trace_id);

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_LOGGING_H_
