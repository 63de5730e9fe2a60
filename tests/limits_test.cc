// Resource limits of the broker against a real redis-server and the real
// broker binary: the gRPC receive limit, the Claim stream limits (global and
// per client connection), and a client that opens a stream and never reads.
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// A channel with its own connection: gRPC shares connections between
// channels to the same address unless the channel asks for its own pool.
std::shared_ptr<grpc::Channel> OwnConnection(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// VmRSS of `pid` in KiB, or -1.
int64_t RssKib(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "VmRSS:")) continue;
    std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t kib = -1;
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib)) return kib;
  }
  return -1;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // quarantine and shadow memory skew RSS
#else
constexpr bool kSanitized = false;
#endif

// --- the gRPC receive limit ------------------------------------------------

// The broker's receive limit is max(64 MiB, --max_payload_bytes + 1 MiB).
constexpr int64_t kReceiveLimit = 64 << 20;

class ReceiveLimitTest : public BrokerTest {};

TEST_F(ReceiveLimitTest, OversizedEnqueueIsResourceExhaustedAndChangesNothing) {
  const int64_t before = RedisDbSize();
  v1::EnqueueRequest request = MakeJob("big", std::string(kReceiveLimit + 1, 'x'));
  v1::EnqueueResponse response;
  grpc::Status status = Enqueue(*stub_, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << StatusText(status);
  EXPECT_EQ(RedisDbSize(), before);

  // Under the receive limit but over --max_payload_bytes: the validator's
  // INVALID_ARGUMENT, nothing stored either.
  request = MakeJob("big", std::string((1 << 20) + 1, 'x'));
  status = Enqueue(*stub_, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << StatusText(status);
  EXPECT_EQ(RedisDbSize(), before);

  // The broker still serves.
  EXPECT_NE(MustEnqueue(*stub_, MakeJob("big", "small")), "");
}

TEST_F(ReceiveLimitTest, OversizedBatchIsResourceExhaustedAndChangesNothing) {
  const int64_t before = RedisDbSize();
  v1::EnqueueBatchRequest request;
  // 65 jobs of 1 MiB each: every job is valid, the message is not.
  for (int i = 0; i < 65; ++i) *request.add_jobs() = MakeJob("big", std::string(1 << 20, 'x'));
  ASSERT_GT(static_cast<int64_t>(request.ByteSizeLong()), kReceiveLimit);
  v1::EnqueueBatchResponse response;
  grpc::Status status = EnqueueBatch(*stub_, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << StatusText(status);
  EXPECT_EQ(RedisDbSize(), before);
}

// --- Claim stream limits ---------------------------------------------------

class StreamLimitTest : public BrokerTest {
 protected:
  StreamLimitTest()
      : BrokerTest({"--max_claim_streams=3", "--max_claim_streams_per_peer=2"}) {}

  // A stream on `channel` whose registration is proven: a job enqueued on
  // `queue` reached it (and stays unacked on it).
  std::unique_ptr<ClaimReader> OpenProven(std::shared_ptr<grpc::Channel> channel,
                                          const std::string& queue) {
    auto reader = std::make_unique<ClaimReader>(v1::BrokerService::NewStub(channel), MakeClaim({queue}));
    MustEnqueue(*stub_, MakeJob(queue));
    EXPECT_TRUE(reader->Next(absl::Seconds(10)).has_value()) << "stream on " << queue;
    return reader;
  }

  // The final status of a stream on `channel` that the broker ends within
  // `timeout`, or nullopt when it stays open.
  std::optional<grpc::Status> EndOfNewStream(std::shared_ptr<grpc::Channel> channel,
                                             absl::Duration timeout) {
    ClaimReader reader(v1::BrokerService::NewStub(channel), MakeClaim({"other"}));
    return reader.WaitForEnd(timeout);
  }
};

TEST_F(StreamLimitTest, PerConnectionLimitRefusesAtOnceAndFreesOnClose) {
  auto a = OwnConnection(broker_->address());
  auto first = OpenProven(a, "q1");
  auto second = OpenProven(a, "q2");

  std::optional<grpc::Status> end = EndOfNewStream(a, absl::Seconds(5));
  ASSERT_TRUE(end.has_value()) << "third stream on one connection stayed open";
  EXPECT_EQ(end->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << StatusText(*end);
  EXPECT_TRUE(absl::StrContains(end->error_message(), "--max_claim_streams_per_peer=2"))
      << end->error_message();

  // Another connection is not affected by this one's count.
  auto b = OwnConnection(broker_->address());
  EXPECT_FALSE(EndOfNewStream(b, absl::Milliseconds(500)).has_value());

  // Ending a stream frees its place (the broker learns of it shortly after).
  first->Cancel();
  ASSERT_TRUE(first->WaitForEnd(absl::Seconds(5)).has_value());
  bool reopened = false;
  for (absl::Time deadline = absl::Now() + absl::Seconds(5); !reopened && absl::Now() < deadline;) {
    reopened = !EndOfNewStream(a, absl::Milliseconds(300)).has_value();
  }
  EXPECT_TRUE(reopened) << "a stream closed on the connection still counts";
}

TEST_F(StreamLimitTest, GlobalLimitRefusesAtOnce) {
  auto a = OwnConnection(broker_->address());
  auto b = OwnConnection(broker_->address());
  auto c = OwnConnection(broker_->address());
  auto s1 = OpenProven(a, "q1");
  auto s2 = OpenProven(b, "q2");
  auto s3 = OpenProven(c, "q3");

  const absl::Time start = absl::Now();
  std::optional<grpc::Status> end = EndOfNewStream(OwnConnection(broker_->address()),
                                                   absl::Seconds(5));
  ASSERT_TRUE(end.has_value()) << "fourth stream stayed open";
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(end->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << StatusText(*end);
  EXPECT_TRUE(absl::StrContains(end->error_message(), "--max_claim_streams=3"))
      << end->error_message();

  // The refused streams took nothing: the held jobs are still on s1..s3 and
  // a job on a queue nobody reads stays pending.
  std::string id = MustEnqueue(*stub_, MakeJob("other"));
  absl::SleepFor(absl::Milliseconds(300));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, "other", id, &job));
  EXPECT_EQ(job.state(), kPending);

  s3->Cancel();
  ASSERT_TRUE(s3->WaitForEnd(absl::Seconds(5)).has_value());
  bool reopened = false;
  for (absl::Time deadline = absl::Now() + absl::Seconds(5); !reopened && absl::Now() < deadline;) {
    reopened = !EndOfNewStream(c, absl::Milliseconds(300)).has_value();
  }
  EXPECT_TRUE(reopened) << "a closed stream still counts against --max_claim_streams";
}

// --- a client that never reads -----------------------------------------------

// The broker's jemalloc returns freed pages at once (MALLOC_CONF is read at
// its start), so that its RSS follows the memory it holds rather than the
// peak of one claim of max_in_flight large jobs (reply, parsed reply and
// messages at once, up to ~3 x 16 MiB here), which jemalloc would otherwise
// keep for seconds.
class SlowReaderTest : public BrokerTest {
 protected:
  void SetUp() override {
    setenv("MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0", 1);
    BrokerTest::SetUp();
    unsetenv("MALLOC_CONF");
  }
};

// A stream whose client never reads holds up to max_in_flight jobs; HTTP/2
// flow control stalls only that stream, so a worker on another connection
// keeps getting and acking jobs promptly. While the stalled stream's leases
// run out and its jobs are claimed for it again, the broker keeps at most
// max_in_flight of them in memory (its memory does not grow lease after
// lease).
TEST_F(SlowReaderTest, NonReadingStreamStallsOnlyItself) {
  constexpr int kJobs = 1000;
  constexpr int kPayload = 16 << 10;  // 16 MiB in all: far past any flow-control window
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < kJobs; ++i) {
    v1::EnqueueRequest* job = batch.add_jobs();
    *job = MakeJob("flood", std::string(kPayload, 'p'));
    // Each expired lease puts the job straight back, for many rounds.
    job->set_max_attempts(1000);
    job->set_backoff_base_ms(1);
    job->set_backoff_max_ms(1);
  }
  v1::EnqueueBatchResponse batch_response;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &batch_response));

  // The stream that never reads, on its own connection; leases of 1 s so
  // that its jobs come back and are claimed for it again and again.
  auto stalled_stub = v1::BrokerService::NewStub(OwnConnection(broker_->address()));
  grpc::ClientContext stalled_context;
  std::unique_ptr<grpc::ClientReader<v1::ClaimResponse>> stalled =
      stalled_stub->Claim(&stalled_context, MakeClaim({"flood"}, kJobs, /*lease_ms=*/1000));

  // Wait until the broker has claimed all of them for it.
  v1::BrokerService::Stub& stub = *stub_;
  auto all_active = [&] {
    v1::Job job;
    return GetJob(stub, "flood", batch_response.results(kJobs - 1).job_id(), &job).ok() &&
           job.state() == kActive;
  };
  for (absl::Time deadline = absl::Now() + absl::Seconds(10);
       !all_active() && absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_TRUE(all_active());
  absl::SleepFor(absl::Milliseconds(500));
  const int64_t rss_start = RssKib(broker_->pid());

  // A worker on another connection gets each job promptly, for 6 s (six
  // lease periods of the stalled stream).
  auto worker = std::make_unique<ClaimReader>(
      v1::BrokerService::NewStub(OwnConnection(broker_->address())), MakeClaim({"work"}));
  int done = 0;
  absl::Duration slowest;
  for (absl::Time end = absl::Now() + absl::Seconds(6); absl::Now() < end; ++done) {
    const absl::Time sent = absl::Now();
    std::string id = MustEnqueue(*stub_, MakeJob("work", "w"));
    std::optional<v1::ClaimedJob> job = worker->Next(absl::Seconds(5));
    ASSERT_TRUE(job.has_value()) << "worker starved after " << done << " jobs";
    EXPECT_EQ(job->job().id(), id);
    JW_ASSERT_OK(Ack(*stub_, *job));
    slowest = std::max(slowest, absl::Now() - sent);
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GT(done, 20);
  EXPECT_LT(slowest, absl::Seconds(1)) << "slowest enqueue-to-ack";

  const int64_t rss_end = RssKib(broker_->pid());
  ASSERT_GT(rss_start, 0);
  // Unbounded, every lease period would queue another 16 MiB of jobs (six
  // periods: ~96 MiB); bounded, it grows by a few MiB.
  if (!kSanitized) {
    EXPECT_LT(rss_end - rss_start, 24 << 10)
        << "broker RSS grew from " << rss_start << " KiB to " << rss_end << " KiB";
  }
  v1::Job first;
  JW_EXPECT_OK(GetJob(*stub_, "flood", batch_response.results(0).job_id(), &first));
  EXPECT_GE(first.attempts(), 4) << "the stalled stream's jobs were not claimed again";
  std::cerr << "broker RSS " << rss_start << " KiB -> " << rss_end << " KiB; worker acked " << done
            << " jobs, slowest " << slowest << "; flood job attempts " << first.attempts() << "\n";

  stalled_context.TryCancel();
  grpc::Status status = stalled->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << StatusText(status);
}

}  // namespace
}  // namespace jobwire::testing
