// ScriptRunner against a real redis-server whose script cache is empty (as
// after a restart, a failover or SCRIPT FLUSH): many calls in flight meet
// NOSCRIPT together, one of them sends the script's text, and every call
// still gets its own answer.
#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/store/job_store_test_util.h"
#include "gtest/gtest.h"

namespace jobwire::store {
namespace {

class ScriptRunnerTest : public JobStoreTest {
 public:
  // Calls of `command` so far, from INFO commandstats (0 if never called).
  int64_t Calls(const std::string& command) {
    auto info = redis_.Command("INFO", "commandstats");
    if (!info.ok()) return -1;
    const std::string prefix = absl::StrCat("cmdstat_", command, ":calls=");
    const size_t at = info->str.find(prefix);
    if (at == std::string::npos) return 0;
    return std::stoll(info->str.substr(at + prefix.size()));
  }

  // Sends `n` Enqueues of one job each to `queue` at once (each its own
  // enqueue.lua call) and waits for them all; returns how many stored a job.
  int EnqueueAtOnce(const std::string& queue, int n) {
    std::atomic<int> stored{0}, answered{0};
    std::promise<void> all;
    for (int i = 0; i < n; ++i) {
      v1::EnqueueRequest r;
      r.set_queue(queue);
      r.set_type("t");
      r.set_payload(absl::StrCat("job ", i));
      r.set_max_attempts(3);
      r.set_backoff_base_ms(1000);
      r.set_backoff_max_ms(60000);
      store_->Enqueue(queue, {r}, [&, n](absl::StatusOr<std::vector<EnqueueOutcome>> out) {
        if (out.ok() && out->size() == 1 && !out->at(0).job_id.empty()) ++stored;
        if (++answered == n) all.set_value();
      });
    }
    all.get_future().wait();
    return stored;
  }
};

TEST_F(ScriptRunnerTest, CallsThatMeetNoScriptTogetherSendTheTextOnce) {
  constexpr int kCalls = 300;
  // A first call registers the queue and loads enqueue.lua; the flush
  // forgets the script, as a restarted Redis or a promoted replica would.
  const std::string queue = "noscript";
  ASSERT_EQ(EnqueueAtOnce(queue, 1), 1);
  ASSERT_TRUE(redis_.Command("SCRIPT", "FLUSH").ok());
  const int64_t evals = Calls("eval"), evalshas = Calls("evalsha");
  // Redis holds every command for a moment, so that all the calls are on
  // their way before the first NOSCRIPT comes back.
  ASSERT_TRUE(redis_.Command("CLIENT", "PAUSE", "300", "ALL").ok());

  EXPECT_EQ(EnqueueAtOnce(queue, kCalls), kCalls);

  EXPECT_EQ(Calls("eval") - evals, 1) << "one call sends the script's text";
  // Every call's EVALSHA met NOSCRIPT; all but the one that sent the text
  // waited for it and sent their EVALSHA again.
  EXPECT_EQ(Calls("evalsha") - evalshas, 2 * kCalls - 1);
  auto pending = redis_.Command("ZCARD", KeysOf(queue).Ready());
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(pending->integer, kCalls + 1);

  // With the script loaded again, calls go by SHA alone.
  EXPECT_EQ(EnqueueAtOnce(queue, 10), 10);
  EXPECT_EQ(Calls("eval") - evals, 1);
}

}  // namespace
}  // namespace jobwire::store
