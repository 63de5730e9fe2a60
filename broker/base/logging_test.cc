// base::Log writes one valid JSON object per line: millisecond UTC
// timestamps, numbers and bools as JSON values, and valid UTF-8 whatever
// bytes a field holds (malformed sequences become U+FFFD).
#include "broker/base/logging.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace jobwire::base {
namespace {

// The lines Log writes to stderr while `fn` runs.
template <typename Fn>
std::string CaptureStderr(Fn fn) {
  const std::string path = ::testing::TempDir() + "/logging_test_" + std::to_string(getpid());
  std::fflush(stderr);
  const int saved = dup(fileno(stderr));
  EXPECT_NE(std::freopen(path.c_str(), "w", stderr), nullptr);
  fn();
  std::fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  return text.str();
}

// The single line `fn` logs, parsed (strictly: nlohmann rejects malformed
// UTF-8 in strings).
template <typename Fn>
nlohmann::json LogLine(Fn fn) {
  const std::string text = CaptureStderr(fn);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_TRUE(nlohmann::json::accept(text)) << text;
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

TEST(LoggingTest, TimestampHasMillisecondsAndFieldsKeepTheirKind) {
  nlohmann::json line = LogLine([] {
    Log(LogLevel::kWarning, "hello",
        {{"text", "a"},
         {"count", 42},
         {"big", int64_t{1} << 53},
         {"negative", -7},
         {"size", size_t{3}},
         {"ratio", 0.25},
         {"nan", std::nan("")},
         {"inf", std::numeric_limits<double>::infinity()},
         {"flag", true},
         {"digits", std::string("123")}});
  });
  ASSERT_TRUE(line.is_object());
  EXPECT_TRUE(std::regex_match(line["ts"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << line["ts"];
  EXPECT_EQ(line["level"], "warning");
  EXPECT_EQ(line["msg"], "hello");
  EXPECT_EQ(line["text"], "a");
  EXPECT_EQ(line["count"], 42);
  EXPECT_TRUE(line["count"].is_number_integer());
  EXPECT_EQ(line["big"], int64_t{1} << 53);
  EXPECT_EQ(line["negative"], -7);
  EXPECT_EQ(line["size"], 3);
  EXPECT_DOUBLE_EQ(line["ratio"].get<double>(), 0.25);
  EXPECT_EQ(line["nan"], "nan");  // JSON has no NaN: a string
  EXPECT_EQ(line["inf"], "inf");
  EXPECT_EQ(line["flag"], true);
  EXPECT_EQ(line["digits"], "123");  // text stays text
}

TEST(LoggingTest, MalformedUtf8BecomesReplacementCharacters) {
  const struct {
    const char* name;
    std::string in;
    std::string want;  // the decoded field, UTF-8
  } cases[] = {
      {"ascii", "queue-1", "queue-1"},
      {"two-byte", "caf\xC3\xA9", "caf\xC3\xA9"},
      {"three-byte", "\xE2\x82\xAC", "\xE2\x82\xAC"},
      {"four-byte", "\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},
      {"lone continuation", "a\x80z", "a\xEF\xBF\xBDz"},
      {"invalid byte", "\xFF", "\xEF\xBF\xBD"},
      {"truncated", "\xE2\x82", "\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"truncated at end of a longer text", "ab\xF0\x9F", "ab\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"overlong slash", "\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"overlong three-byte", "\xE0\x80\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"surrogate", "\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"above U+10FFFF", "\xF4\x90\x80\x80",
       "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"control characters", std::string("a\0b\x01\x1F\x7F\n\"\\", 10),
       std::string("a\0b\x01\x1F\x7F\n\"\\", 10)},
  };
  for (const auto& c : cases) {
    nlohmann::json line = LogLine([&] { Log(LogLevel::kError, c.in, {{c.in, c.in}}); });
    ASSERT_TRUE(line.is_object()) << c.name;
    EXPECT_EQ(line["msg"], c.want) << c.name;
    EXPECT_EQ(line[c.want], c.want) << c.name;  // keys are escaped alike
  }
}

TEST(LoggingTest, LevelFiltersAndLogJobNamesTheTrace) {
  SetLogLevel(LogLevel::kWarning);
  EXPECT_EQ(CaptureStderr([] { Log(LogLevel::kInfo, "dropped"); }), "");
  SetLogLevel(LogLevel::kInfo);
  nlohmann::json line = LogLine([] { LogJob("job dead", "q", "j1", "abc"); });
  EXPECT_EQ(line["level"], "info");
  EXPECT_EQ(line["queue"], "q");
  EXPECT_EQ(line["job_id"], "j1");
  EXPECT_EQ(line["trace_id"], "abc");
  line = LogLine([] { LogJob("job dead", "q", "j1", ""); });
  EXPECT_FALSE(line.contains("trace_id"));
}

}  // namespace
}  // namespace jobwire::base
