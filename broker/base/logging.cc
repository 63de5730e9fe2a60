#include "broker/base/logging.h"

#include <atomic>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace jobwire::base {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "info";
}

void AppendJsonString(std::string* out, absl::string_view s) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20) {
          absl::StrAppend(out, "\\u00", absl::Hex(c, absl::kZeroPad2));
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

}  // namespace

void SetLogLevel(LogLevel level) { min_level = static_cast<int>(level); }

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (text == LevelName(l)) {
      *level = l;
      return true;
    }
  }
  return false;
}

void Log(LogLevel level, absl::string_view message, absl::Span<const LogField> fields) {
  if (static_cast<int>(level) < min_level) return;
  std::string line = "{\"ts\":";
  AppendJsonString(&line, absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone()));
  absl::StrAppend(&line, ",\"level\":\"", LevelName(level), "\",\"msg\":");
  AppendJsonString(&line, message);
  for (const auto& [key, value] : fields) {
    line.push_back(',');
    AppendJsonString(&line, key);
    line.push_back(':');
    AppendJsonString(&line, value);
  }
  line.append("}\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void LogJob(absl::string_view message, absl::string_view queue, absl::string_view job_id,
            absl::string_view trace_id) {
  const LogField fields[] = {{"queue", std::string(queue)},
                             {"job_id", std::string(job_id)},
                             {"trace_id", std::string(trace_id)}};
  Log(LogLevel::kInfo, message, absl::MakeConstSpan(fields, trace_id.empty() ? 2 : 3));
}

}  // namespace jobwire::base
