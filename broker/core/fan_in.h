#ifndef JOBWIRE_BROKER_CORE_FAN_IN_H_
#define JOBWIRE_BROKER_CORE_FAN_IN_H_

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "broker/store/job_store.h"

namespace jobwire::core {

// Gathers the answers of `calls` asynchronous calls into one vector of
// `slots` values, each in the caller's position. The first error wins. The
// call that answers last runs `done`, once, on its own thread, outside the
// lock. Shared by the callbacks of one fan-out; a fan-out of no calls
// never finishes, so callers answer that case themselves.
//
//   auto fan_in = std::make_shared<FanIn<Stats>>(n, n, std::move(done));
//   for (size_t i = 0; i < n; ++i) {
//     store->Stats(part[i], [fan_in, i](absl::StatusOr<Stats> s) { fan_in->Add(i, std::move(s)); });
//   }
template <typename T>
class FanIn {
 public:
  FanIn(size_t slots, size_t calls, store::Callback<std::vector<T>> done)
      : out_(slots), remaining_(calls), done_(std::move(done)) {}

  // One call's answer, for slot `slot`.
  void Add(size_t slot, absl::StatusOr<T> answer) {
    {
      absl::MutexLock lock(&mu_);
      if (!answer.ok()) {
        if (error_.ok()) error_ = answer.status();
      } else if (slot < out_.size()) {
        out_[slot] = *std::move(answer);
      }
      if (--remaining_ > 0) return;
    }
    Finish();
  }

  // One call's answers, for the slots `slots`: answers[i] goes to slots[i].
  void Add(const std::vector<size_t>& slots, absl::StatusOr<std::vector<T>> answers) {
    {
      absl::MutexLock lock(&mu_);
      if (!answers.ok()) {
        if (error_.ok()) error_ = answers.status();
      } else {
        for (size_t i = 0; i < slots.size() && i < answers->size(); ++i) {
          if (slots[i] < out_.size()) out_[slots[i]] = std::move((*answers)[i]);
        }
      }
      if (--remaining_ > 0) return;
    }
    Finish();
  }

 private:
  // Runs after the last Add; nothing else touches the fields then.
  void Finish() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!error_.ok()) return done_(error_);
    done_(std::move(out_));
  }

  absl::Mutex mu_;
  std::vector<T> out_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  size_t remaining_ ABSL_GUARDED_BY(mu_);
  store::Callback<std::vector<T>> done_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_FAN_IN_H_
