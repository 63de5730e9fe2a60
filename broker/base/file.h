// Reading small files whole (PEM certificates, the token file).
#ifndef JOBWIRE_BROKER_BASE_FILE_H_
#define JOBWIRE_BROKER_BASE_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwire::base {

// The whole content of the file at `path`. NOT_FOUND when it does not
// exist, PERMISSION_DENIED / INTERNAL when it cannot be read; the message
// names the path and the reason, never the content.
absl::StatusOr<std::string> ReadFile(absl::string_view path);

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_FILE_H_
