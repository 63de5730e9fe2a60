// W3C Trace Context (https://www.w3.org/TR/trace-context/) carried in job
// headers: `traceparent` and `tracestate`. The C++ client has no
// OpenTelemetry (Debian 12 ships no opentelemetry-cpp), so it propagates the
// headers only: a handler reads the producer's trace with FromHeaders (to log
// its trace id, or to parent a span of whatever tracing library it uses), and
// a C++ producer that has a trace context passes it on with InjectInto. The
// Python, Node.js and Go clients create the spans themselves
// (docs/clients.md, "Middleware and tracing").
#ifndef JOBWIRE_CLIENT_CPP_TRACE_CONTEXT_H_
#define JOBWIRE_CLIENT_CPP_TRACE_CONTEXT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace jobwire::client {

inline constexpr char kTraceparentHeader[] = "traceparent";
inline constexpr char kTracestateHeader[] = "tracestate";

struct TraceContext {
  std::string trace_id;   // 32 lowercase hex digits, not all zero
  std::string parent_id;  // 16 lowercase hex digits, not all zero: the producer's span
  uint8_t flags = 0;      // trace-flags; bit 0 is "sampled"
  std::string tracestate; // vendor data, passed on unchanged (may be empty)

  bool sampled() const { return (flags & 0x01) != 0; }

  // "00-<trace_id>-<parent_id>-<flags>".
  std::string Traceparent() const;

  // Parses a traceparent header value as the W3C rules say: version 00 is
  // exactly "00-" 32 hex "-" 16 hex "-" 2 hex; a later version (not "ff")
  // may append "-" and more, which is ignored. Lowercase hex only; an
  // all-zero trace id or parent id is invalid. nullopt when invalid.
  static std::optional<TraceContext> Parse(std::string_view traceparent,
                                           std::string_view tracestate = {});

  // The trace context of a job's headers (Job::headers): nullopt when it has
  // no traceparent or an invalid one (the W3C rule: start a new trace).
  static std::optional<TraceContext> FromHeaders(
      const std::map<std::string, std::string>& headers);

  // Sets `traceparent` (and `tracestate` when not empty, else removes it) in
  // `headers`, e.g. EnqueueOptions::headers.
  void InjectInto(std::map<std::string, std::string>* headers) const;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_TRACE_CONTEXT_H_
