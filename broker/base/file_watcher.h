// FileWatcher: background loop that notices when files change, for settings
// reloaded while the broker runs (the token file, the TLS certificate;
// server/config_reloader.h). Each watch is a group of files read together (a
// certificate, its key and a CA). Every `interval`, and at once on
// Trigger(), the loop reads each group and calls its callback when the
// contents differ from the ones it last passed on.
//
// Contents are compared, not modification times: a copied or restored file
// may keep an old mtime, and a Kubernetes Secret volume swaps a `..data`
// symlink. A group whose read differs from the last one is read again until
// two reads in a row agree (at most 3 reads), so files replaced between two
// of the group's reads (a new certificate with the old key) are seen whole
// once the replacement is done. A read that fails (a file missing or
// unreadable) is passed on too, once per distinct error; the last contents
// stay the reference, and the first read that succeeds after a failed one is
// passed on even when it found them unchanged.
//
// Thread safety: Start and Stop from one thread; Trigger from any thread.
// Callbacks run on the loop's own thread, one at a time.
#ifndef JOBWIRE_BROKER_BASE_FILE_WATCHER_H_
#define JOBWIRE_BROKER_BASE_FILE_WATCHER_H_

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace jobwire::base {

struct FileWatch {
  std::vector<std::string> paths;
  // The contents the owner loaded (one per path): changes are relative to
  // them.
  std::vector<std::string> initial;
  // The group's new contents (one per path) or the first read error; and
  // whether Trigger() asked for this call (then it comes even when nothing
  // changed).
  std::function<void(absl::StatusOr<std::vector<std::string>> contents, bool triggered)>
      on_change;
};

struct FileWatcherParams {
  // How often the files are read; absl::InfiniteDuration(): only on Trigger.
  absl::Duration interval = absl::Seconds(10);
  std::vector<FileWatch> watches;
};

class FileWatcher {
 public:
  explicit FileWatcher(FileWatcherParams params);
  ~FileWatcher();  // Stop()
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // Starts the loop thread; the first read is an interval away.
  // REQUIRES: called once.
  void Start();
  // Reads every group now (after the pass running, if any) and calls every
  // callback, changed or not. Before Start it takes effect at Start.
  void Trigger();
  // Ends the loop and joins it: no callback runs after Stop returns.
  // Idempotent.
  void Stop();

 private:
  struct Watch {
    FileWatch watch;
    std::vector<std::string> last;  // contents last passed on (or initial)
    std::string last_error;         // the error last passed on, until a read succeeds
  };
  void Run();
  // One pass over every group.
  void Exec(bool triggered);
  void Check(Watch& w, bool triggered);

  const absl::Duration interval_;
  std::vector<Watch> watches_;  // loop thread only, after Start
  std::thread thread_;
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool triggered_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_FILE_WATCHER_H_
