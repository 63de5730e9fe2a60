#include "broker/base/build_info.h"

#include "broker/base/build_info_values.h"  // generated: kVersion, kGitCommit

namespace jobwire::base {

std::string_view Version() { return kVersion; }

std::string_view GitCommit() { return kGitCommit; }

std::string VersionLine(std::string_view program) {
  std::string line(program);
  line.append(" ").append(Version()).append(" (commit ").append(GitCommit()).append(")");
  return line;
}

}  // namespace jobwire::base
