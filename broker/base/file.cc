#include "broker/base/file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace jobwire::base {

absl::StatusOr<std::string> ReadFile(absl::string_view path) {
  const std::string name(path);
  std::ifstream in(name, std::ios::binary);
  if (!in) {
    const int error = errno;
    std::string message = absl::StrCat("cannot read ", name, ": ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return absl::InternalError(absl::StrCat("cannot read ", name));
  return content.str();
}

}  // namespace jobwire::base
