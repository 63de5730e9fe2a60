// Minimal structured logging: one JSON object per line on stderr.
#ifndef JOBWIRE_BROKER_BASE_LOGGING_H_
#define JOBWIRE_BROKER_BASE_LOGGING_H_

#include <initializer_list>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>

namespace jobwire::base {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped. Default kInfo. Thread-safe.
void SetLogLevel(LogLevel level);
// Parses "debug", "info", "warning", "error"; false when unknown.
bool ParseLogLevel(absl::string_view text, LogLevel* level);

using LogField = std::pair<absl::string_view, std::string>;

// Writes {"ts":...,"level":...,"msg":...,<fields>} as one line. Thread-safe.
void Log(LogLevel level, absl::string_view message, std::initializer_list<LogField> fields = {});

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_LOGGING_H_
