// ScriptRunner against a real redis-server that lost its function library
// (as after a restart, a failover or FUNCTION FLUSH): many calls in flight
// find no function together, one of them loads the library, and every call
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

TEST_F(ScriptRunnerTest, CallsThatFindNoLibraryTogetherLoadItOnce) {
  constexpr int kCalls = 300;
  // A first call registers the queue and loads the library; the flush
  // forgets it, as a restarted Redis or a promoted replica would.
  const std::string queue = "nolibrary";
  ASSERT_EQ(EnqueueAtOnce(queue, 1), 1);
  ASSERT_TRUE(redis_.Command("FUNCTION", "FLUSH").ok());
  const int64_t loads = Calls("function|load"), fcalls = Calls("fcall");
  // Redis holds every command for a moment, so that all the calls are on
  // their way before the first "Function not found" comes back.
  ASSERT_TRUE(redis_.Command("CLIENT", "PAUSE", "300", "ALL").ok());

  EXPECT_EQ(EnqueueAtOnce(queue, kCalls), kCalls);

  EXPECT_EQ(Calls("function|load") - loads, 1) << "one call loads the library";
  // Every call's FCALL found no function; each called again once the
  // library was loaded.
  EXPECT_EQ(Calls("fcall") - fcalls, 2 * kCalls);
  auto pending = redis_.Command("ZCARD", KeysOf(queue).Ready());
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(pending->integer, kCalls + 1);

  // With the library loaded again, a call is one FCALL.
  EXPECT_EQ(EnqueueAtOnce(queue, 10), 10);
  EXPECT_EQ(Calls("function|load") - loads, 1);
  EXPECT_EQ(Calls("fcall") - fcalls, 2 * kCalls + 10);
}

// Brokers of two versions share a Redis: each loads its own library, and
// neither replaces the other's functions.
TEST_F(ScriptRunnerTest, AnotherVersionsLibraryLeavesThisOnesFunctions) {
  const std::string queue = "versions";
  ASSERT_EQ(EnqueueAtOnce(queue, 1), 1);
  // Another version's library: other text, so another name.
  ScriptRunner other(&*client_, /*check_declared_keys=*/false);
  ASSERT_NE(other.library_name(), scripts_->library_name());
  auto loaded = redis_.CommandArgv({"FUNCTION", "LOAD", other.library()});
  ASSERT_TRUE(loaded.ok() && !loaded->is_error()) << (loaded.ok() ? loaded->str : "");
  const int64_t loads = Calls("function|load");
  EXPECT_EQ(EnqueueAtOnce(queue, 5), 5);
  EXPECT_EQ(Calls("function|load"), loads) << "this version's library was replaced";
  auto libraries = redis_.Command("FUNCTION", "LIST");
  ASSERT_TRUE(libraries.ok());
  EXPECT_EQ(libraries->elements.size(), 2u);
}

}  // namespace
}  // namespace jobwire::store
