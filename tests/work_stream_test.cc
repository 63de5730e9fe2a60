// Work streams (BrokerService.Work) against a real broker and Redis: jobs
// are delivered as on a Claim stream, acks sent on the stream are settled
// and answered on it under their ids, and a protocol error or a refused
// batch gets a precise status. Each check reads what the test's own stream
// received (and GetJob for what the acks stored).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

// One Work stream read synchronously: Read blocks, so every test writes
// what it needs first and then reads what it expects, under a 30 s
// deadline for the whole stream.
class WorkStream {
 public:
  explicit WorkStream(std::unique_ptr<v1::BrokerService::Stub> stub) : stub_(std::move(stub)) {
    context_.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    stream_ = stub_->Work(&context_);
  }
  ~WorkStream() { context_.TryCancel(); }

  bool Claim(const v1::ClaimRequest& claim) {
    v1::WorkRequest request;
    *request.mutable_claim() = claim;
    return stream_->Write(request);
  }
  bool Acks(uint64_t id, const std::vector<v1::ClaimedJob>& jobs,
            const std::string& token_suffix = "") {
    v1::WorkRequest request;
    request.mutable_acks()->set_id(id);
    for (const v1::ClaimedJob& job : jobs) {
      v1::AckRequest* ack = request.mutable_acks()->add_acks();
      ack->set_queue(job.job().queue());
      ack->set_job_id(job.job().id());
      ack->set_lease_token(job.lease_token() + token_suffix);
    }
    return stream_->Write(request);
  }
  bool Write(const v1::WorkRequest& request) { return stream_->Write(request); }

  // Reads until `count` jobs have arrived (kept in jobs()); false when the
  // stream ended first.
  bool ReadJobs(size_t count) {
    while (jobs_.size() < count) {
      if (!ReadOne()) return false;
    }
    return true;
  }
  // Reads until the answer to `id` has arrived; nullopt when the stream
  // ended first.
  std::optional<v1::WorkAcksAnswer> ReadAnswer(uint64_t id) {
    while (!answers_.contains(id)) {
      if (!ReadOne()) return std::nullopt;
    }
    v1::WorkAcksAnswer answer = std::move(answers_[id]);
    answers_.erase(id);
    return answer;
  }
  // Reads to the end of the stream; its status.
  grpc::Status Finish() {
    while (ReadOne()) {
    }
    return stream_->Finish();
  }
  void WritesDone() { stream_->WritesDone(); }

  const std::vector<v1::ClaimedJob>& jobs() const { return jobs_; }
  int answers_read() const { return answers_read_; }

 private:
  bool ReadOne() {
    v1::WorkResponse message;
    if (!stream_->Read(&message)) return false;
    for (v1::ClaimedJob& job : *message.mutable_jobs()) jobs_.push_back(std::move(job));
    for (v1::WorkAcksAnswer& answer : *message.mutable_ack_answers()) {
      ++answers_read_;
      EXPECT_FALSE(answers_.contains(answer.id())) << "answered twice: " << answer.id();
      answers_[answer.id()] = std::move(answer);
    }
    return true;
  }

  std::unique_ptr<v1::BrokerService::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkRequest, v1::WorkResponse>> stream_;
  std::vector<v1::ClaimedJob> jobs_;
  absl::flat_hash_map<uint64_t, v1::WorkAcksAnswer> answers_;
  int answers_read_ = 0;
};

class WorkStreamTest : public LifecycleTest {
 protected:
  std::unique_ptr<WorkStream> OpenWork() const {
    return std::make_unique<WorkStream>(broker_->NewStub());
  }
};

TEST_F(WorkStreamTest, AcksOnTheStreamAreStoredAndFreeTheirSlots) {
  const std::string queue = "work-acks";
  for (int i = 0; i < 4; ++i) MustEnqueue(*stub_, MakeJob(queue, "p" + std::to_string(i)));
  auto work = OpenWork();
  ASSERT_TRUE(work->Claim(MakeClaim({queue}, /*max_in_flight=*/2)));
  ASSERT_TRUE(work->ReadJobs(2));
  const std::vector<v1::ClaimedJob> first(work->jobs().begin(), work->jobs().begin() + 2);
  ASSERT_TRUE(work->Acks(7, first));
  std::optional<v1::WorkAcksAnswer> answer = work->ReadAnswer(7);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->code(), 0) << answer->message();
  ASSERT_EQ(answer->results_size(), 2);
  for (const v1::AckResult& result : answer->results()) EXPECT_EQ(result.code(), 0);
  for (const v1::ClaimedJob& job : first) {
    EXPECT_EQ(MustGetJob(*stub_, queue, job.job().id()).state(), v1::JOB_STATE_COMPLETED);
  }
  // The two freed slots take the other two jobs.
  ASSERT_TRUE(work->ReadJobs(4)) << "the acked jobs' slots stayed taken";
  EXPECT_EQ(MustGetJob(*stub_, queue, work->jobs()[2].job().id()).state(), v1::JOB_STATE_ACTIVE);
}

TEST_F(WorkStreamTest, EachAckGetsItsOwnResult) {
  const std::string queue = "work-results";
  MustEnqueue(*stub_, MakeJob(queue));
  MustEnqueue(*stub_, MakeJob(queue));
  auto work = OpenWork();
  ASSERT_TRUE(work->Claim(MakeClaim({queue}, 2)));
  ASSERT_TRUE(work->ReadJobs(2));
  ASSERT_TRUE(work->Acks(1, {work->jobs()[0]}, "-stale"));
  std::optional<v1::WorkAcksAnswer> answer = work->ReadAnswer(1);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->code(), 0);
  ASSERT_EQ(answer->results_size(), 1);
  EXPECT_EQ(answer->results(0).code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION))
      << answer->results(0).message();
  EXPECT_EQ(answer->results(0).reason(), "LEASE_STALE");
  EXPECT_EQ(MustGetJob(*stub_, queue, work->jobs()[0].job().id()).state(), v1::JOB_STATE_ACTIVE);
  // The stream goes on: the right token is accepted.
  ASSERT_TRUE(work->Acks(2, {work->jobs()[0], work->jobs()[1]}));
  answer = work->ReadAnswer(2);
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->results_size(), 2);
  EXPECT_EQ(answer->results(0).code(), 0) << answer->results(0).message();
  EXPECT_EQ(answer->results(1).code(), 0) << answer->results(1).message();
}

TEST_F(WorkStreamTest, ABatchRefusedAsAWholeIsAnsweredAndTheStreamGoesOn) {
  const std::string queue = "work-refused";
  MustEnqueue(*stub_, MakeJob(queue));
  auto work = OpenWork();
  ASSERT_TRUE(work->Claim(MakeClaim({queue}, 1)));
  ASSERT_TRUE(work->ReadJobs(1));
  ASSERT_TRUE(work->Acks(5, {}));  // empty
  std::optional<v1::WorkAcksAnswer> answer = work->ReadAnswer(5);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_NE(answer->message().find("acks"), std::string::npos) << answer->message();
  EXPECT_EQ(answer->results_size(), 0);
  ASSERT_TRUE(work->Acks(6, {work->jobs()[0]}));
  answer = work->ReadAnswer(6);
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->results_size(), 1);
  EXPECT_EQ(answer->results(0).code(), 0) << answer->results(0).message();
}

TEST_F(WorkStreamTest, EveryBatchIsAnsweredOnceWhenMoreThanTheLimitAreSentAtOnce) {
  // More batches than the broker settles at a time: it stops reading until
  // some are answered, and still answers each exactly once.
  const std::string queue = "work-many";
  constexpr int kJobs = 40;
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < kJobs; ++i) *batch.add_jobs() = MakeJob(queue);
  v1::EnqueueBatchResponse enqueued;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));
  auto work = OpenWork();
  ASSERT_TRUE(work->Claim(MakeClaim({queue}, kJobs)));
  ASSERT_TRUE(work->ReadJobs(kJobs));
  for (int i = 0; i < kJobs; ++i) ASSERT_TRUE(work->Acks(100 + i, {work->jobs()[i]}));
  for (int i = 0; i < kJobs; ++i) {
    std::optional<v1::WorkAcksAnswer> answer = work->ReadAnswer(100 + i);
    ASSERT_TRUE(answer) << "batch " << i << " never answered";
    ASSERT_EQ(answer->results_size(), 1);
    EXPECT_EQ(answer->results(0).code(), 0) << answer->results(0).message();
  }
  EXPECT_EQ(work->answers_read(), kJobs);
  for (const v1::ClaimedJob& job : work->jobs()) {
    EXPECT_EQ(MustGetJob(*stub_, queue, job.job().id()).state(), v1::JOB_STATE_COMPLETED);
  }
}

TEST_F(WorkStreamTest, ProtocolErrorsEndTheStreamWithInvalidArgument) {
  struct Case {
    std::string name;
    bool claim_first;
    v1::WorkRequest next;
    std::string message;
  };
  v1::WorkRequest acks;
  acks.mutable_acks()->set_id(1);
  v1::WorkRequest claim;
  *claim.mutable_claim() = MakeClaim({"work-protocol"}, 1);
  v1::WorkRequest invalid_claim;
  *invalid_claim.mutable_claim() = MakeClaim({"work-protocol"}, 5000);
  const std::vector<Case> cases = {
      {"acks first", false, acks, "must hold one"},
      {"a second claim", true, claim, "only the first message"},
      {"an invalid claim", false, invalid_claim, "max_in_flight"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto work = OpenWork();
    if (c.claim_first) {
      ASSERT_TRUE(work->Write(claim));
    }
    work->Write(c.next);
    grpc::Status status = work->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find(c.message), std::string::npos) << status.error_message();
  }
}

TEST_F(WorkStreamTest, HalfClosingEndsTheStreamAndGivesBackWhatWasNotSent) {
  const std::string queue = "work-half-close";
  auto work = OpenWork();
  ASSERT_TRUE(work->Claim(MakeClaim({queue}, 1)));
  work->WritesDone();
  EXPECT_TRUE(work->Finish().ok());
  // The stream's session is closed: a job enqueued now waits for another
  // stream, which gets it.
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->job().id(), id);
}

}  // namespace
}  // namespace jobwire::testing
