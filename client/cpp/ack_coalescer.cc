#include "client/cpp/ack_coalescer.h"

#include <utility>
#include <vector>

namespace jobwire::client {

absl::Status AckCoalescer::Ack(v1::AckRequest request) {
  Entry entry;
  entry.request = std::move(request);
  mu_.Lock();
  queued_.push_back(&entry);
  while (true) {
    auto turn = [this, &entry]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return entry.done || !sending_;
    };
    mu_.Await(absl::Condition(&turn));
    if (entry.done) break;
    // No call in flight: this thread sends what is queued (as much as fits
    // one call; its own ack may have to wait for the next).
    sending_ = true;
    std::vector<Entry*> batch;
    size_t bytes = 0;
    while (!queued_.empty() && static_cast<int>(batch.size()) < kMaxBatch) {
      const size_t size = queued_.front()->request.result().size();
      if (!batch.empty() && bytes + size > kMaxBatchBytes) break;
      bytes += size;
      batch.push_back(queued_.front());
      queued_.pop_front();
    }
    mu_.Unlock();
    v1::AckBatchRequest call;
    for (Entry* e : batch) *call.add_acks() = std::move(e->request);
    absl::StatusOr<std::vector<absl::Status>> results = client_->AckBatch(call);
    mu_.Lock();
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i]->status = results.ok() ? (*results)[i] : results.status();
      batch[i]->done = true;
    }
    sending_ = false;
  }
  mu_.Unlock();
  return entry.status;
}

}  // namespace jobwire::client
