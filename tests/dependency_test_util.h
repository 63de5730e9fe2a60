// Shared by the dependency tests (dependencies_test.cc,
// remote_dependencies_test.cc): jobs that wait for parents, and reading
// them back.
#ifndef JOBWIRE_TESTS_DEPENDENCY_TEST_UTIL_H_
#define JOBWIRE_TESTS_DEPENDENCY_TEST_UTIL_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {

class DependencyTest : public QueueSettingsTest {
 protected:
  // A job of `queue` that waits for `parents` (ids or refs "<queue>/<id>").
  static v1::EnqueueRequest Child(const std::string& queue, std::vector<std::string> parents,
                                  bool run_after_failed = false) {
    v1::EnqueueRequest job = MakeJob(queue);
    for (std::string& id : parents) job.add_depends_on(std::move(id));
    job.set_run_after_failed_dependency(run_after_failed);
    return job;
  }

  v1::Job Get(const std::string& queue, const std::string& id) {
    return MustGetJob(*stub_, queue, id);
  }

  // Claims the next job from `reader`, expecting `id`.
  static v1::ClaimedJob Next(ClaimReader& reader, const std::string& id) {
    std::optional<v1::ClaimedJob> claimed = reader.Next(kPrompt);
    EXPECT_TRUE(claimed) << "expected job " << id;
    if (!claimed) return {};
    EXPECT_EQ(claimed->job().id(), id);
    return *claimed;
  }
};

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_DEPENDENCY_TEST_UTIL_H_
