#include "broker/base/logging.h"

#include <atomic>
#include <cmath>
#include <cstdio>

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

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t Utf8SequenceLength(absl::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](size_t i) { return i < s.size() && (byte(i) & 0xC0) == 0x80; };
  const unsigned char c = byte(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return continuation(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (c == 0xE0 && byte(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && byte(1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (c == 0xF0 && byte(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && byte(1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// Appends `s` as a JSON string (quotes included), valid UTF-8 (see
// logging.h).
void AppendJsonString(std::string* out, absl::string_view s) {
  out->push_back('"');
  while (!s.empty()) {
    const unsigned char c = static_cast<unsigned char>(s[0]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s);
      if (n == 0) {
        out->append("\\ufffd");
        s.remove_prefix(1);
      } else {
        out->append(s.data(), n);
        s.remove_prefix(n);
      }
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20 || c == 0x7F) {
          absl::StrAppend(out, "\\u00", absl::Hex(c, absl::kZeroPad2));
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    s.remove_prefix(1);
  }
  out->push_back('"');
}

}  // namespace

// JSON has no NaN or infinity: those are written as strings ("nan", "inf").
LogValue::LogValue(double number)
    : text_(absl::StrCat(number)), quoted_(!std::isfinite(number)) {}

void LogValue::AppendTo(std::string* out) const {
  if (quoted_) {
    AppendJsonString(out, text_);
  } else {
    out->append(text_);
  }
}

void SetLogLevel(LogLevel level) { min_level = static_cast<int>(level); }

LogLevel GetLogLevel() { return static_cast<LogLevel>(min_level.load()); }

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
  std::string line = "{\"ts\":\"";
  line.append(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()));
  absl::StrAppend(&line, "\",\"level\":\"", LevelName(level), "\",\"msg\":");
  AppendJsonString(&line, message);
  for (const auto& [key, value] : fields) {
    line.push_back(',');
    AppendJsonString(&line, key);
    line.push_back(':');
    value.AppendTo(&line);
  }
  line.append("}\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void LogJob(absl::string_view message, absl::string_view queue, absl::string_view job_id,
            absl::string_view trace_id) {
  const LogField fields[] = {{"queue", queue}, {"job_id", job_id}, {"trace_id", trace_id}};
  Log(LogLevel::kInfo, message, absl::MakeConstSpan(fields, trace_id.empty() ? 2 : 3));
}

}  // namespace jobwire::base
