#include "broker/core/fan_in.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwire::core {
namespace {

using ::testing::ElementsAre;

TEST(FanInTest, AnswersLandInTheCallersOrderAndTheLastOneFinishes) {
  int finished = 0;
  std::vector<std::string> got;
  auto fan_in = std::make_shared<FanIn<std::string>>(
      4, 3, [&](absl::StatusOr<std::vector<std::string>> all) {
        ++finished;
        ASSERT_TRUE(all.ok()) << all.status();
        got = *all;
      });
  fan_in->Add(std::vector<size_t>{3, 0}, std::vector<std::string>{"d", "a"});
  fan_in->Add(2, std::string("c"));
  EXPECT_EQ(finished, 0) << "finished before its last call answered";
  fan_in->Add(1, std::string("b"));
  EXPECT_EQ(finished, 1);
  EXPECT_THAT(got, ElementsAre("a", "b", "c", "d"));
}

TEST(FanInTest, TheFirstErrorWinsAndDoneRunsOnce) {
  int finished = 0;
  absl::Status error;
  auto fan_in = std::make_shared<FanIn<int>>(3, 3, [&](absl::StatusOr<std::vector<int>> all) {
    ++finished;
    error = all.status();
  });
  fan_in->Add(0, absl::UnavailableError("first"));
  fan_in->Add(1, 7);
  fan_in->Add(std::vector<size_t>{2}, absl::InternalError("second"));
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(error, absl::UnavailableError("first"));
}

TEST(FanInTest, CallsAnsweringOnManyThreadsFinishOnceWithEveryAnswer) {
  constexpr int kCalls = 64;
  std::atomic<int> finished{0};
  std::vector<int> got;
  auto fan_in = std::make_shared<FanIn<int>>(kCalls, kCalls,
                                             [&](absl::StatusOr<std::vector<int>> all) {
                                               ++finished;
                                               got = *all;
                                             });
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) threads.emplace_back([fan_in, i] { fan_in->Add(i, i * i); });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(finished.load(), 1);
  ASSERT_EQ(got.size(), static_cast<size_t>(kCalls));
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(got[i], i * i);
}

}  // namespace
}  // namespace jobwire::core
