// The broker's log lines about single jobs name the job's trace: a job whose
// headers carry a W3C traceparent has its trace id on "job dead" (a Fail made
// it dead) and "lease expired, ..." (the reaper settled its run); a job
// without one, or with a malformed one, has no trace_id field.
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/lifecycle_test_util.h"
#include "tests/subprocess.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr char kTraceId[] = "4bf92f3577b34da6a3ce929d0e0e4736";

class JobLogTest : public BrokerTest {
 protected:
  JobLogTest() {
    broker_log_path_ = absl::StrCat(::testing::TempDir(), "/job_log_", getpid(), ".log");
  }

  std::string EnqueueWith(const std::string& queue, const std::string& traceparent,
                          int max_attempts) {
    v1::EnqueueRequest request = MakeJob(queue);
    request.set_max_attempts(max_attempts);
    request.set_backoff_base_ms(60000);
    if (!traceparent.empty()) (*request.mutable_headers())["traceparent"] = traceparent;
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(*stub_, request, &response);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    return response.job_id();
  }

  // The broker's log line naming job `id` with `message`, waiting up to 10 s.
  std::string AwaitLine(const std::string& message, const std::string& id) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    do {
      for (absl::string_view line : absl::StrSplit(ReadTextFile(broker_log_path_), '\n')) {
        if (absl::StrContains(line, absl::StrCat("\"msg\":\"", message, "\"")) &&
            absl::StrContains(line, absl::StrCat("\"job_id\":\"", id, "\""))) {
          return std::string(line);
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < end);
    ADD_FAILURE() << "no log line \"" << message << "\" for job " << id << " in:\n"
                  << ReadTextFile(broker_log_path_);
    return "";
  }
};

TEST_F(JobLogTest, AFailThatMakesAJobDeadLogsItsTraceId) {
  const std::string queue = "log.fail";
  const std::string traced =
      EnqueueWith(queue, absl::StrCat("00-", kTraceId, "-00f067aa0ba902b7-01"), 1);
  const std::string plain = EnqueueWith(queue, "", 1);
  auto reader = OpenClaim(MakeClaim({queue}, 2, 30000));
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::ClaimedJob> claimed = reader->Next(kPrompt);
    ASSERT_TRUE(claimed.has_value());
    v1::FailResponse response;
    grpc::Status status = Fail(*stub_, MakeFail(*claimed, "boom"), &response);
    ASSERT_TRUE(status.ok()) << StatusText(status);
  }
  EXPECT_TRUE(absl::StrContains(AwaitLine("job dead", traced),
                                absl::StrCat("\"queue\":\"", queue, "\"")));
  EXPECT_TRUE(absl::StrContains(AwaitLine("job dead", traced),
                                absl::StrCat("\"trace_id\":\"", kTraceId, "\"")));
  EXPECT_FALSE(absl::StrContains(AwaitLine("job dead", plain), "trace_id"));
}

TEST_F(JobLogTest, TheReaperLogsEachExpiredRunWithItsTraceId) {
  const std::string queue = "log.reap";
  const std::string retried =
      EnqueueWith(queue, absl::StrCat("00-", kTraceId, "-00f067aa0ba902b7-00"), 2);
  const std::string dead =
      EnqueueWith(queue, absl::StrCat("01-", kTraceId, "-00f067aa0ba902b7-01-more"), 1);
  // Not traceparents: uppercase, version ff, a zero trace id.
  const std::vector<std::string> malformed = {
      EnqueueWith(queue, absl::StrCat("00-", absl::AsciiStrToUpper(kTraceId),
                                      "-00f067aa0ba902b7-01"), 1),
      EnqueueWith(queue, absl::StrCat("ff-", kTraceId, "-00f067aa0ba902b7-01"), 1),
      EnqueueWith(queue, "00-00000000000000000000000000000000-00f067aa0ba902b7-01", 1)};
  {
    auto reader = OpenClaim(MakeClaim({queue}, 5, 1000));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(reader->Next(kPrompt).has_value()) << i;
    reader->Cancel();  // the leases are not renewed: they expire in 1 s
  }
  EXPECT_TRUE(absl::StrContains(AwaitLine("lease expired, retry scheduled", retried),
                                absl::StrCat("\"trace_id\":\"", kTraceId, "\"")));
  EXPECT_TRUE(absl::StrContains(AwaitLine("lease expired, job dead", dead),
                                absl::StrCat("\"trace_id\":\"", kTraceId, "\"")));
  for (const std::string& id : malformed) {
    EXPECT_FALSE(absl::StrContains(AwaitLine("lease expired, job dead", id), "trace_id")) << id;
  }
}

}  // namespace
}  // namespace jobwire::testing
