#include "broker/base/file_watcher.h"

#include <pthread.h>

#include <utility>

#include "broker/base/file.h"

namespace jobwire::base {
namespace {

// Reads of a group until two in a row agree.
constexpr int kMaxReads = 3;

absl::StatusOr<std::vector<std::string>> ReadAll(const std::vector<std::string>& paths) {
  std::vector<std::string> contents;
  contents.reserve(paths.size());
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> content = ReadFile(path);
    if (!content.ok()) return content.status();
    contents.push_back(*std::move(content));
  }
  return contents;
}

}  // namespace

FileWatcher::FileWatcher(FileWatcherParams params) : interval_(params.interval) {
  for (FileWatch& watch : params.watches) {
    std::vector<std::string> initial = std::move(watch.initial);
    watches_.push_back(Watch{std::move(watch), std::move(initial), ""});
  }
}

FileWatcher::~FileWatcher() { Stop(); }

void FileWatcher::Start() {
  thread_ = std::thread([this] { Run(); });
  pthread_setname_np(thread_.native_handle(), "jw-files");
}

void FileWatcher::Trigger() {
  absl::MutexLock lock(&mu_);
  triggered_ = true;
}

void FileWatcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void FileWatcher::Run() {
  for (;;) {
    bool triggered;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_ || triggered_; };
      mu_.AwaitWithTimeout(absl::Condition(&wake), interval_);
      if (stopped_) return;
      triggered = triggered_;
      triggered_ = false;
    }
    Exec(triggered);
  }
}

void FileWatcher::Exec(bool triggered) {
  for (Watch& w : watches_) Check(w, triggered);
}

void FileWatcher::Check(Watch& w, bool triggered) {
  absl::StatusOr<std::vector<std::string>> read = ReadAll(w.watch.paths);
  for (int reads = 1; read.ok() && *read != w.last && reads < kMaxReads; ++reads) {
    absl::StatusOr<std::vector<std::string>> again = ReadAll(w.watch.paths);
    const bool settled = again.ok() && *again == *read;
    read = std::move(again);
    if (settled) break;
  }
  if (!read.ok()) {
    const std::string error = read.status().ToString();
    if (!triggered && error == w.last_error) return;
    w.last_error = error;
    w.watch.on_change(read.status(), triggered);
    return;
  }
  const bool recovered = !w.last_error.empty();
  w.last_error.clear();
  if (!triggered && !recovered && *read == w.last) return;
  w.last = *read;
  w.watch.on_change(*std::move(read), triggered);
}

}  // namespace jobwire::base
