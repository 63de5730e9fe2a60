// The version and source commit a jobwire binary was built from, for
// `--version` and the start-up log line. Both are fixed at build time
// (broker/base/build_info.cmake writes them on every build, touching the
// generated header only when they change).
#ifndef JOBWIRE_BROKER_BASE_BUILD_INFO_H_
#define JOBWIRE_BROKER_BASE_BUILD_INFO_H_

#include <string>
#include <string_view>

namespace jobwire::base {

// The release version, from project(jobwire VERSION ...), e.g. "0.1.0".
std::string_view Version();

// The git commit of the source tree (12 hex digits, with "-dirty" when the
// tree had uncommitted changes), the -DJOBWIRE_GIT_COMMIT given to CMake when
// built outside a git checkout (the image), else "unknown".
std::string_view GitCommit();

// "<program> <version> (commit <commit>)", the line `--version` prints.
std::string VersionLine(std::string_view program);

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_BUILD_INFO_H_
