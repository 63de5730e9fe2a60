// FileWatcher on files in a temporary directory: a change is passed on once,
// an unchanged file never; Trigger passes on unchanged contents at once; a
// read error is passed on once, and the next good read even when unchanged;
// a group comes in path order; nothing is called after Stop.
#include "broker/base/file_watcher.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace jobwire::base {
namespace {

// What the callback saw: each call's contents (or error) and trigger flag.
struct Call {
  absl::StatusOr<std::vector<std::string>> contents;
  bool triggered;
};

class FileWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobwire-file-watcher-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    watcher_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // Writes a temporary file and renames it over `name`, as Kubernetes and
  // careful operators do.
  void Write(const std::string& name, const std::string& content) {
    const std::string tmp = Path(name + ".tmp");
    std::ofstream(tmp, std::ios::binary) << content;
    ASSERT_EQ(std::rename(tmp.c_str(), Path(name).c_str()), 0);
  }

  // Watches `names` (with `initial` as loaded), checking every `interval`.
  void StartWatching(std::vector<std::string> names, std::vector<std::string> initial,
                     absl::Duration interval) {
    FileWatch watch;
    for (const std::string& name : names) watch.paths.push_back(Path(name));
    watch.initial = std::move(initial);
    watch.on_change = [this](absl::StatusOr<std::vector<std::string>> contents, bool triggered) {
      absl::MutexLock lock(&mu_);
      calls_.push_back(Call{std::move(contents), triggered});
    };
    FileWatcherParams params;
    params.interval = interval;
    params.watches.push_back(std::move(watch));
    watcher_ = std::make_unique<FileWatcher>(std::move(params));
    watcher_->Start();
  }

  // Waits up to 5 s for the callback to have run `n` times; the calls so far.
  std::vector<Call> AwaitCalls(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(5));
    return calls_;
  }

  // The calls after `wait` (for checking that nothing more came).
  std::vector<Call> CallsAfter(absl::Duration wait) {
    absl::SleepFor(wait);
    absl::MutexLock lock(&mu_);
    return calls_;
  }

  std::string dir_;
  std::unique_ptr<FileWatcher> watcher_;
  absl::Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
};

constexpr absl::Duration kInterval = absl::Milliseconds(10);
// Many intervals: enough for a watcher that would wrongly call back to do so.
constexpr absl::Duration kQuiet = absl::Milliseconds(200);

TEST_F(FileWatcherTest, PassesOnAChangeOnceAndNothingWhileUnchanged) {
  Write("a", "one");
  StartWatching({"a"}, {"one"}, kInterval);
  EXPECT_TRUE(CallsAfter(kQuiet).empty());
  Write("a", "two");
  std::vector<Call> calls = AwaitCalls(1);
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_TRUE(calls[0].contents.ok()) << calls[0].contents.status();
  EXPECT_EQ(*calls[0].contents, std::vector<std::string>{"two"});
  EXPECT_FALSE(calls[0].triggered);
  EXPECT_EQ(CallsAfter(kQuiet).size(), 1u);
}

TEST_F(FileWatcherTest, TriggerPassesOnUnchangedContentsAtOnce) {
  Write("a", "same");
  StartWatching({"a"}, {"same"}, absl::InfiniteDuration());
  Write("a", "changed");  // no interval: not seen until Trigger
  EXPECT_TRUE(CallsAfter(kQuiet).empty());
  watcher_->Trigger();
  std::vector<Call> calls = AwaitCalls(1);
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_TRUE(calls[0].contents.ok());
  EXPECT_EQ(*calls[0].contents, std::vector<std::string>{"changed"});
  EXPECT_TRUE(calls[0].triggered);
  watcher_->Trigger();  // unchanged, still called
  calls = AwaitCalls(2);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(calls[1].triggered);
}

TEST_F(FileWatcherTest, ReadErrorPassedOnOnceThenTheNextGoodRead) {
  Write("a", "kept");
  StartWatching({"a"}, {"kept"}, kInterval);
  ASSERT_EQ(unlink(Path("a").c_str()), 0);
  std::vector<Call> calls = AwaitCalls(1);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].contents.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CallsAfter(kQuiet).size(), 1u);  // the same error, not again
  Write("a", "kept");  // back unchanged: passed on, the owner logs the recovery
  calls = AwaitCalls(2);
  ASSERT_EQ(calls.size(), 2u);
  ASSERT_TRUE(calls[1].contents.ok());
  EXPECT_EQ(*calls[1].contents, std::vector<std::string>{"kept"});
  EXPECT_EQ(CallsAfter(kQuiet).size(), 2u);
}

TEST_F(FileWatcherTest, AGroupComesWholeInPathOrder) {
  Write("cert", "c1");
  Write("key", "k1");
  StartWatching({"cert", "key"}, {"c1", "k1"}, kInterval);
  Write("key", "k2");
  Write("cert", "c2");
  // Either one call with both, or a first with the key and a second with
  // both: the last call has the whole new group.
  std::vector<Call> calls = AwaitCalls(1);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (!(calls.back().contents.ok() &&
           *calls.back().contents == std::vector<std::string>{"c2", "k2"}) &&
         absl::Now() < deadline) {
    calls = AwaitCalls(calls.size() + 1);
  }
  ASSERT_TRUE(calls.back().contents.ok());
  EXPECT_EQ(*calls.back().contents, (std::vector<std::string>{"c2", "k2"}));
}

TEST_F(FileWatcherTest, NothingIsCalledAfterStop) {
  Write("a", "one");
  StartWatching({"a"}, {"one"}, kInterval);
  watcher_->Stop();
  Write("a", "two");
  watcher_->Trigger();
  EXPECT_TRUE(CallsAfter(kQuiet).empty());
  watcher_->Stop();  // idempotent
}

}  // namespace
}  // namespace jobwire::base
