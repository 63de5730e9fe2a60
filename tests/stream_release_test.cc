// Jobs a Claim stream claimed but never wrote to its client go back to their
// queue when the stream ends, however it ends: the client cancels, the
// stream reaches its maximum age, the broker drains. They are pending and
// due again at once, with their attempt given back, instead of sitting
// ACTIVE until their lease runs out (and, with max_attempts 1, going DEAD
// without ever running).
//
// Each test fills a stream whose client never reads (HTTP/2 flow control
// holds the broker's write, so the other jobs wait behind it in the
// broker), then ends the stream and watches the jobs' states in Redis.
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/job_record.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr int kJobs = 24;
constexpr int kPayload = 512 << 10;   // 12 MiB in all: far past any flow-control window
constexpr int64_t kLeaseMs = 120000;  // never runs out during a test

std::shared_ptr<grpc::Channel> OwnConnection(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

class StreamReleaseTest : public BrokerTest {
 protected:
  explicit StreamReleaseTest(std::vector<std::string> flags = {}) : BrokerTest(std::move(flags)) {}

  // Enqueues kJobs jobs with max_attempts 1 and opens a stream for all of
  // them that never reads; returns when every job is ACTIVE.
  void FillStalledStream() {
    v1::EnqueueBatchRequest batch;
    for (int i = 0; i < kJobs; ++i) {
      v1::EnqueueRequest* job = batch.add_jobs();
      *job = MakeJob("held", std::string(kPayload, 'p'));
      job->set_max_attempts(1);
    }
    v1::EnqueueBatchResponse response;
    JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &response));
    for (const auto& result : response.results()) ids_.push_back(result.job_id());

    stalled_stub_ = v1::BrokerService::NewStub(OwnConnection(broker_->address()));
    stalled_ = stalled_stub_->Claim(&stalled_context_, MakeClaim({"held"}, kJobs, kLeaseMs));
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (CountIn(kActive) < kJobs && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    ASSERT_EQ(CountIn(kActive), kJobs);
  }

  int CountIn(v1::JobState state) {
    int n = 0;
    for (const std::string& id : ids_) {
      v1::Job job;
      if (GetJob(*stub_, "held", id, &job).ok() && job.state() == state) ++n;
    }
    return n;
  }

  // Waits up to `timeout` until no job is ACTIVE but the few the stream may
  // have written, then checks every job that is not ACTIVE: pending, its
  // attempt given back, never dead.
  void ExpectUnsentJobsReleased(absl::Duration timeout) {
    // The client's transport may have taken a few messages (each at least
    // one 512 KiB job) into its flow-control window before the write
    // stalled: those jobs may have reached it and keep their leases.
    constexpr int kMaySent = kJobs / 2;
    const absl::Time deadline = absl::Now() + timeout;
    while (CountIn(kPending) < kJobs - kMaySent && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    int pending = 0;
    for (const std::string& id : ids_) {
      v1::Job job;
      JW_ASSERT_OK(GetJob(*stub_, "held", id, &job));
      EXPECT_NE(job.state(), kDead) << id << ": " << job.error();
      if (job.state() == kPending) {
        ++pending;
        EXPECT_EQ(job.attempts(), 0) << id;
      }
    }
    EXPECT_GE(pending, kJobs - kMaySent) << "jobs left ACTIVE behind an ended stream";
  }

  std::vector<std::string> ids_;
  std::unique_ptr<v1::BrokerService::Stub> stalled_stub_;
  grpc::ClientContext stalled_context_;
  std::unique_ptr<grpc::ClientReader<v1::ClaimResponse>> stalled_;
};

TEST_F(StreamReleaseTest, ClientCancelGivesBackTheJobsItWasNeverSent) {
  FillStalledStream();
  stalled_context_.TryCancel();
  ExpectUnsentJobsReleased(absl::Seconds(10));

  // The released jobs run on the next stream, as their first attempt.
  ClaimReader worker(broker_->NewStub(), MakeClaim({"held"}, 1));
  std::optional<v1::ClaimedJob> next = worker.Next(absl::Seconds(5));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->job().attempts(), 1);
  JW_EXPECT_OK(Ack(*stub_, *next));
}

class StreamAgeReleaseTest : public StreamReleaseTest {
 protected:
  // The stream ends 1.8 .. 2.2 s after it opened.
  StreamAgeReleaseTest() : StreamReleaseTest({"--max_stream_age_ms=2000"}) {}
};

// The broker ends the stream itself while its client still holds the
// connection open without reading: the jobs must come back without waiting
// for the client.
TEST_F(StreamAgeReleaseTest, MaxStreamAgeGivesBackTheJobsItWasNeverSent) {
  FillStalledStream();
  ExpectUnsentJobsReleased(absl::Seconds(10));
  stalled_context_.TryCancel();
}

// A draining broker (SIGTERM) ends its streams; the jobs they never wrote
// are pending again before it exits.
TEST_F(StreamReleaseTest, DrainGivesBackTheJobsItWasNeverSent) {
  FillStalledStream();
  broker_->Signal(SIGTERM);
  // Read the states straight from Redis: the broker is going away.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  int pending = 0;
  while (absl::Now() < deadline) {
    pending = 0;
    for (const std::string& id : ids_) {
      const std::string jobs = testing::JobsKey("jw", "held");
      auto state = RedisCommandFor(jobs, testing::ReadJobFieldArgv(jobs, id, "state"));
      if (state.ok() && state->str == "pending") ++pending;
    }
    if (pending >= kJobs / 2) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_GE(pending, kJobs / 2) << "jobs left ACTIVE behind a drained stream";
  for (const std::string& id : ids_) {
    const std::string jobs = testing::JobsKey("jw", "held");
    auto state = RedisCommandFor(jobs, testing::ReadJobFieldArgv(jobs, id, "state"));
    ASSERT_TRUE(state.ok());
    EXPECT_NE(state->str, "dead") << id;
  }
  stalled_context_.TryCancel();
}

}  // namespace
}  // namespace jobwire::testing
