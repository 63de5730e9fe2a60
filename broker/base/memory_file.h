// MemoryFile: a file held in this process's memory (memfd_create), reached
// by path (/proc/self/fd/<n>), whose whole content is replaced atomically.
// For a library that takes a file path and polls it, when what it reads must
// be checked first: gRPC's FileWatcherCertificateProvider reads the TLS
// certificate the broker has checked (ReloadableTlsCredentials). Nothing is
// written to disk, and the file is not inherited by child processes.
//
// Thread safety: Replace from one thread at a time; readers of path() from
// any thread, any process of the same user (through /proc/<pid>/fd/<n>).
#ifndef JOBWIRE_BROKER_BASE_MEMORY_FILE_H_
#define JOBWIRE_BROKER_BASE_MEMORY_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwire::base {

class MemoryFile {
 public:
  // A file holding `content`; `name` shows in /proc/<pid>/fd listings only.
  // INTERNAL (naming the failed call and errno) when it cannot be made.
  static absl::StatusOr<std::unique_ptr<MemoryFile>> Create(absl::string_view name,
                                                            absl::string_view content);
  // Closes the file. A reader that opened path() keeps reading what it opened.
  // REQUIRES: nothing opens path() afterwards (the descriptor number is free
  // for reuse then).
  ~MemoryFile();
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // "/proc/self/fd/<n>", valid for this process while the object lives.
  const std::string& path() const { return path_; }

  // Replaces the content: whoever opens path() afterwards reads `content`,
  // before it the previous content, never a mix (a new memory file is
  // written whole, then put on the descriptor number with dup3). Each
  // Replace sets a modification time, in whole seconds, later than the
  // previous one's, so a reader that compares the mtime before and after
  // reading notices a Replace in between (as gRPC's file watcher does).
  // INTERNAL when it fails; the previous content stays.
  absl::Status Replace(absl::string_view content);

 private:
  MemoryFile(int fd, std::string name);
  // A new memory file (its descriptor) holding `content`, with an mtime
  // later than last_mtime_, which it advances.
  absl::StatusOr<int> Write(absl::string_view content);

  const int fd_;
  const std::string name_;
  const std::string path_;
  int64_t last_mtime_ = 0;  // seconds since the epoch
};

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_MEMORY_FILE_H_
