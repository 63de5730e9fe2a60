#include "trace_context.h"

#include "absl/strings/str_cat.h"

namespace jobwire::client {
namespace {

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool AllZero(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

int HexValue(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

}  // namespace

std::string TraceContext::Traceparent() const {
  constexpr char kHex[] = "0123456789abcdef";
  const char f[] = {kHex[flags >> 4], kHex[flags & 0x0f], '\0'};
  return absl::StrCat("00-", trace_id, "-", parent_id, "-", f);
}

std::optional<TraceContext> TraceContext::Parse(std::string_view traceparent,
                                                std::string_view tracestate) {
  // version(2) - trace-id(32) - parent-id(16) - flags(2) = 55 characters.
  constexpr size_t kLength = 55;
  if (traceparent.size() < kLength) return std::nullopt;
  const std::string_view version = traceparent.substr(0, 2);
  if (!IsLowerHex(version) || version == "ff") return std::nullopt;
  if (version == "00" ? traceparent.size() != kLength
                      : traceparent.size() > kLength && traceparent[kLength] != '-') {
    return std::nullopt;
  }
  if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-') {
    return std::nullopt;
  }
  const std::string_view trace_id = traceparent.substr(3, 32);
  const std::string_view parent_id = traceparent.substr(36, 16);
  const std::string_view flags = traceparent.substr(53, 2);
  if (!IsLowerHex(trace_id) || !IsLowerHex(parent_id) || !IsLowerHex(flags) ||
      AllZero(trace_id) || AllZero(parent_id)) {
    return std::nullopt;
  }
  TraceContext context;
  context.trace_id = std::string(trace_id);
  context.parent_id = std::string(parent_id);
  context.flags = static_cast<uint8_t>(HexValue(flags[0]) * 16 + HexValue(flags[1]));
  context.tracestate = std::string(tracestate);
  return context;
}

std::optional<TraceContext> TraceContext::FromHeaders(
    const std::map<std::string, std::string>& headers) {
  auto parent = headers.find(kTraceparentHeader);
  if (parent == headers.end()) return std::nullopt;
  auto state = headers.find(kTracestateHeader);
  return Parse(parent->second, state == headers.end() ? std::string_view() : state->second);
}

void TraceContext::InjectInto(std::map<std::string, std::string>* headers) const {
  (*headers)[kTraceparentHeader] = Traceparent();
  if (tracestate.empty()) {
    headers->erase(kTracestateHeader);
  } else {
    (*headers)[kTracestateHeader] = tracestate;
  }
}

}  // namespace jobwire::client
