#include "broker/core/fair_share.h"

#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace jobwire::core {
namespace {

// Fills of `free` slots each, every queue always busy: the slots each
// queue got over `fills` fills.
std::vector<int> SlotsOverFills(std::vector<int> weights, int free, int fills) {
  std::vector<size_t> all(weights.size());
  std::iota(all.begin(), all.end(), 0);
  FairShare fair(weights, 1000);
  std::vector<int> got(weights.size(), 0);
  for (int f = 0; f < fills; ++f) {
    std::vector<int> share = fair.Split(free, all);
    EXPECT_EQ(std::accumulate(share.begin(), share.end(), 0), free);
    for (size_t q = 0; q < share.size(); ++q) got[q] += share[q];
  }
  return got;
}

TEST(FairShareTest, SlotsFollowTheWeightsWhileEveryQueueIsBusy) {
  struct Case {
    std::vector<int> weights;
    int free;
    int fills;
    std::vector<int> want;
  };
  const std::vector<Case> cases = {
      {{3, 1}, 1, 400, {300, 100}},         // one slot per fill: fractions carry over
      {{3, 1}, 20, 50, {750, 250}},         // a fill of 20 splits 15 / 5
      {{3, 1}, 7, 400, {2100, 700}},        // a share that is never whole
      {{1, 1, 1}, 2, 300, {200, 200, 200}},
      {{5, 3, 2}, 10, 100, {500, 300, 200}},
      {{1000, 1}, 1, 1001, {1000, 1}},      // the limits of a weight
      {{1}, 50, 10, {500}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SlotsOverFills(c.weights, c.free, c.fills), c.want)
        << "weights[0]=" << c.weights[0] << " free=" << c.free;
  }
}

TEST(FairShareTest, OneSlotPerFillAlternatesInTheDocumentedOrder) {
  FairShare fair({3, 1}, 50);
  std::string order;
  for (int f = 0; f < 8; ++f) order += fair.Split(1, {0, 1})[0] == 1 ? 'A' : 'B';
  EXPECT_EQ(order, "AABAAABA");
}

TEST(FairShareTest, ALoneActiveQueueGetsEverySlot) {
  FairShare fair({3, 1}, 50);
  EXPECT_EQ(fair.Split(10, {1}), (std::vector<int>{0, 10}));
  EXPECT_EQ(fair.Split(10, {}), (std::vector<int>{0, 0}));
  EXPECT_EQ(fair.Split(0, {0, 1}), (std::vector<int>{0, 0}));
}

TEST(FairShareTest, ADrainedQueueSavesUpNoCredit) {
  FairShare fair({1, 1}, 50);
  // Queue 1 is drained fill after fill while queue 0 takes everything.
  for (int f = 0; f < 100; ++f) {
    std::vector<int> share = fair.Split(2, {0, 1});
    fair.Settle(1, share[1], /*drained=*/true);
    EXPECT_EQ(fair.credit(1), 0);
  }
  // When queue 1 has jobs again it gets its half, not a burst.
  EXPECT_EQ(fair.Split(10, {0, 1}), (std::vector<int>{5, 5}));
}

TEST(FairShareTest, SlotsLeftUnusedWithMoreDueAreCreditedBack) {
  FairShare fair({1, 1}, 50);
  std::vector<int> share = fair.Split(10, {0, 1});
  ASSERT_EQ(share, (std::vector<int>{5, 5}));
  // Queue 1 could take only 2 of its 5 (the claim's byte bound) and has more.
  fair.Settle(1, 3, /*drained=*/false);
  // 10 more slots: 5 each plus the 3 owed to queue 1 (13 / 2 = 6.5, the tie
  // to the earlier queue).
  EXPECT_EQ(fair.Split(10, {0, 1}), (std::vector<int>{4, 6}));
}

TEST(FairShareTest, CreditIsBounded) {
  FairShare fair({1, 1}, 4);
  for (int i = 0; i < 100; ++i) fair.Settle(0, 1000, /*drained=*/false);
  EXPECT_EQ(fair.credit(0), 4);
  // Bounded credit: queue 1 is not starved for long.
  std::vector<int> share = fair.Split(8, {0, 1});
  EXPECT_GE(share[1], 2);
}

}  // namespace
}  // namespace jobwire::core
