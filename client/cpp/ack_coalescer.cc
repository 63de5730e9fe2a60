#include "client/cpp/ack_coalescer.h"

#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"

namespace jobwire::client {

void AckCoalescer::Ack(v1::AckRequest request, Done done) {
  {
    absl::MutexLock lock(&mu_);
    queued_.push_back(Entry{std::move(request), std::move(done)});
    if (sending_) return;  // the thread sending now takes it into its next call
    sending_ = true;
  }
  while (true) {
    std::vector<Entry> batch;
    {
      absl::MutexLock lock(&mu_);
      if (queued_.empty()) {
        sending_ = false;
        return;
      }
      size_t bytes = 0;
      while (!queued_.empty() && static_cast<int>(batch.size()) < kMaxBatch) {
        const size_t size = queued_.front().request.result().size();
        if (!batch.empty() && bytes + size > kMaxBatchBytes) break;
        bytes += size;
        batch.push_back(std::move(queued_.front()));
        queued_.pop_front();
      }
    }
    v1::AckBatchRequest call;
    for (Entry& entry : batch) *call.add_acks() = std::move(entry.request);
    absl::StatusOr<std::vector<absl::Status>> results = send_(call);
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].done(results.ok() ? (*results)[i] : results.status(),
                    std::move(*call.mutable_acks(static_cast<int>(i))));
    }
  }
}

absl::Status AckCoalescer::AckAndWait(v1::AckRequest request) {
  absl::Notification answered;
  absl::Status status;
  Ack(std::move(request), [&](absl::Status result, v1::AckRequest) {
    status = std::move(result);
    answered.Notify();
  });
  answered.WaitForNotification();
  return status;
}

}  // namespace jobwire::client
