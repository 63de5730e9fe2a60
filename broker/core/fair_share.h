// FairShare: weighted fair claiming across the queues of one Claim stream
// (ClaimRequest.weights; docs/semantics.md, "Fair claiming").
//
// A fill with F free slots splits them over the queues that may have due
// jobs (those not found drained) in proportion to their weights. Each such
// queue earns F * weight / (sum of their weights) of credit; slots then go
// one at a time to the queue with the most credit, each costing it one
// (ties: the earlier queue). Fractions carry over from fill to fill
// (deficit round robin), so with weights 3 and 1 and one free slot per fill
// the slots go A A B A, A A B A, ...
//
// A queue found drained loses its credit, so an idle queue saves up no
// burst for later; slots of its share it did not use go to the other queues
// (the Dispatcher fills again), so a lone busy queue gets every slot. A
// queue that had more due jobs than it could take (a claim's byte bound)
// keeps the credit of the slots it did not use.
//
// Thread safety: none (the Dispatcher's loop thread).
#ifndef JOBWIRE_BROKER_CORE_FAIR_SHARE_H_
#define JOBWIRE_BROKER_CORE_FAIR_SHARE_H_

#include <cstddef>
#include <vector>

namespace jobwire::core {

class FairShare {
 public:
  // One weight per queue, each >= 1. `max_slots` (the stream's
  // max_in_flight) bounds a queue's credit either way.
  FairShare(std::vector<int> weights, int max_slots);

  // Splits `free` (>= 0) slots over the queues `active` (indexes into the
  // weights, no repeats). Returns the slots of each queue (by index; zero
  // for the others); they add up to `free` when `active` is not empty.
  std::vector<int> Split(int free, const std::vector<size_t>& active);

  // After a fill: queue `queue` used all but `unused` slots of its share;
  // `drained` when its claims found no more due jobs.
  void Settle(size_t queue, int unused, bool drained);

  double credit(size_t queue) const { return credit_[queue]; }

 private:
  std::vector<int> weights_;
  double max_credit_;
  std::vector<double> credit_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_FAIR_SHARE_H_
