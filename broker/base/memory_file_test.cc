// MemoryFile: its path reads the content, Replace swaps it whole with a later
// mtime each time, a reader that opened it keeps the content it opened, and
// the descriptor is not inherited by exec.
#include "broker/base/memory_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace jobwire::base {
namespace {

std::string ReadPath(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int64_t Mtime(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mtime;
}

std::unique_ptr<MemoryFile> MustCreate(absl::string_view content) {
  absl::StatusOr<std::unique_ptr<MemoryFile>> file = MemoryFile::Create("test", content);
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? *std::move(file) : nullptr;
}

TEST(MemoryFileTest, PathReadsTheContentAndReplaceSwapsItWhole) {
  std::unique_ptr<MemoryFile> file = MustCreate("first\n");
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(ReadPath(file->path()), "first\n");
  ASSERT_TRUE(file->Replace("second, longer\n").ok());
  EXPECT_EQ(ReadPath(file->path()), "second, longer\n");
  ASSERT_TRUE(file->Replace("").ok());
  EXPECT_EQ(ReadPath(file->path()), "");
}

TEST(MemoryFileTest, EachReplaceHasALaterMtimeEvenWithinASecond) {
  std::unique_ptr<MemoryFile> file = MustCreate("a");
  ASSERT_NE(file, nullptr);
  int64_t before = Mtime(file->path());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(file->Replace(std::string(1, static_cast<char>('b' + i))).ok());
    const int64_t after = Mtime(file->path());
    EXPECT_GT(after, before);
    before = after;
  }
}

TEST(MemoryFileTest, AnOpenReaderKeepsWhatItOpened) {
  std::unique_ptr<MemoryFile> file = MustCreate("old content");
  ASSERT_NE(file, nullptr);
  std::ifstream reader(file->path(), std::ios::binary);
  ASSERT_TRUE(reader.is_open());
  ASSERT_TRUE(file->Replace("new content").ok());
  std::ostringstream read;
  read << reader.rdbuf();
  EXPECT_EQ(read.str(), "old content");
  EXPECT_EQ(ReadPath(file->path()), "new content");
}

TEST(MemoryFileTest, TheDescriptorIsClosedOnExec) {
  std::unique_ptr<MemoryFile> file = MustCreate("x");
  ASSERT_NE(file, nullptr);
  const absl::string_view prefix = "/proc/self/fd/";
  ASSERT_EQ(file->path().substr(0, prefix.size()), prefix);
  int fd = -1;
  ASSERT_TRUE(absl::SimpleAtoi(file->path().substr(prefix.size()), &fd));
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  ASSERT_TRUE(file->Replace("y").ok());
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
}

}  // namespace
}  // namespace jobwire::base
