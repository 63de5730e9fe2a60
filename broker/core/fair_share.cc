#include "broker/core/fair_share.h"

#include <algorithm>

namespace jobwire::core {

FairShare::FairShare(std::vector<int> weights, int max_slots)
    : weights_(std::move(weights)),
      max_credit_(std::max(max_slots, 1)),
      credit_(weights_.size(), 0.0) {}

std::vector<int> FairShare::Split(int free, const std::vector<size_t>& active) {
  std::vector<int> share(weights_.size(), 0);
  if (active.empty() || free <= 0) return share;
  double total = 0;
  for (size_t q : active) total += weights_[q];
  for (size_t q : active) {
    credit_[q] = std::min(credit_[q] + free * weights_[q] / total, max_credit_);
  }
  for (int slot = 0; slot < free; ++slot) {
    size_t best = active.front();
    for (size_t q : active) {
      if (credit_[q] > credit_[best] || (credit_[q] == credit_[best] && q < best)) best = q;
    }
    ++share[best];
    credit_[best] = std::max(credit_[best] - 1, -max_credit_);
  }
  return share;
}

void FairShare::Settle(size_t queue, int unused, bool drained) {
  if (drained) {
    credit_[queue] = 0;
  } else if (unused > 0) {
    credit_[queue] = std::min(credit_[queue] + unused, max_credit_);
  }
}

}  // namespace jobwire::core
