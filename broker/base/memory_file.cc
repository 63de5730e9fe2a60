#include "broker/base/memory_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace jobwire::base {
namespace {

absl::Status Errno(absl::string_view call) {
  return absl::InternalError(absl::StrCat(call, ": ", std::strerror(errno)));
}

}  // namespace

MemoryFile::MemoryFile(int fd, std::string name)
    : fd_(fd), name_(std::move(name)), path_(absl::StrCat("/proc/self/fd/", fd)) {}

MemoryFile::~MemoryFile() { close(fd_); }

absl::StatusOr<std::unique_ptr<MemoryFile>> MemoryFile::Create(absl::string_view name,
                                                               absl::string_view content) {
  const int fd = memfd_create(std::string(name).c_str(), MFD_CLOEXEC);
  if (fd < 0) return Errno("memfd_create");
  std::unique_ptr<MemoryFile> file(new MemoryFile(fd, std::string(name)));
  if (absl::Status s = file->Replace(content); !s.ok()) return s;
  return file;
}

absl::Status MemoryFile::Replace(absl::string_view content) {
  absl::StatusOr<int> written = Write(content);
  if (!written.ok()) return written.status();
  // Atomic: a concurrent open of path_ gets the old file or the new one.
  const bool moved = dup3(*written, fd_, O_CLOEXEC) >= 0;
  absl::Status status = moved ? absl::OkStatus() : Errno("dup3");
  close(*written);
  return status;
}

absl::StatusOr<int> MemoryFile::Write(absl::string_view content) {
  const int fd = memfd_create(name_.c_str(), MFD_CLOEXEC);
  if (fd < 0) return Errno("memfd_create");
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status status = Errno("write");
      close(fd);
      return status;
    }
    done += static_cast<size_t>(n);
  }
  // Strictly later than the previous content's, even within one second.
  last_mtime_ = std::max(absl::ToUnixSeconds(absl::Now()), last_mtime_ + 1);
  const timespec times[2] = {{static_cast<time_t>(last_mtime_), 0},
                             {static_cast<time_t>(last_mtime_), 0}};
  if (futimens(fd, times) < 0) {
    absl::Status status = Errno("futimens");
    close(fd);
    return status;
  }
  return fd;
}

}  // namespace jobwire::base
