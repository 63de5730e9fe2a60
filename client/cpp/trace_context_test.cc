// TraceContext: the W3C traceparent rules, table-driven.
#include "client/cpp/trace_context.h"

#include <map>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace jobwire::client {
namespace {

constexpr char kTrace[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kParent[] = "00f067aa0ba902b7";

TEST(TraceContextTest, ParsesValidTraceparents) {
  struct Case {
    std::string header;
    uint8_t flags;
  };
  const Case cases[] = {
      {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 0x01},
      {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", 0x00},
      {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", 0xff},
      // A later version may append fields after a "-".
      {"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-extra", 0x09},
      {"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 0x01},
  };
  for (const Case& c : cases) {
    std::optional<TraceContext> parsed = TraceContext::Parse(c.header);
    ASSERT_TRUE(parsed.has_value()) << c.header;
    EXPECT_EQ(parsed->trace_id, kTrace) << c.header;
    EXPECT_EQ(parsed->parent_id, kParent) << c.header;
    EXPECT_EQ(parsed->flags, c.flags) << c.header;
  }
}

TEST(TraceContextTest, RefusesInvalidTraceparents) {
  const std::string cases[] = {
      "",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // 00 is exactly 55
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // later version, no "-"
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
  };
  for (const std::string& header : cases) {
    EXPECT_FALSE(TraceContext::Parse(header).has_value()) << header;
  }
}

TEST(TraceContextTest, InjectsAndReadsBackHeaders) {
  TraceContext context;
  context.trace_id = kTrace;
  context.parent_id = kParent;
  context.flags = 0x01;
  std::map<std::string, std::string> headers{{"tracestate", "stale=1"}, {"tenant", "a"}};
  context.InjectInto(&headers);
  EXPECT_EQ(headers, (std::map<std::string, std::string>{
                         {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
                         {"tenant", "a"}}));
  context.tracestate = "vendor=abc";
  context.InjectInto(&headers);
  std::optional<TraceContext> back = TraceContext::FromHeaders(headers);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->Traceparent(), context.Traceparent());
  EXPECT_EQ(back->tracestate, "vendor=abc");
  EXPECT_TRUE(back->sampled());
  EXPECT_FALSE(TraceContext::FromHeaders({{"tenant", "a"}}).has_value());
}

}  // namespace
}  // namespace jobwire::client
