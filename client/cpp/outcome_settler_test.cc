// OutcomeSettler's rules for an Ack whose lease is known lost, and for one
// answered CANCELLED (docs/clients.md, Worker: Ack / Fail), against the real broker and Redis. The job is claimed
// on a Claim stream and its lease kept by a real LeaseRenewer (1.2 s lease:
// a renewal every 400 ms). Only the AckCoalescer's Send is scripted: the
// first batch may reach the broker, and its answer is then replaced by
// DEADLINE_EXCEEDED once the renewer has learnt the lease lost, as when a
// hung connection loses the answer of a stored ack. Later batches reach the
// broker unchanged.

#include "client/cpp/outcome_settler.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/ack_coalescer.h"
#include "client/cpp/client.h"
#include "client/cpp/lease_renewer.h"
#include "client/cpp/run_signal.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::client {
namespace {

constexpr int64_t kLeaseMs = 1200;

class OutcomeSettlerTest : public ::jobwire::testing::BrokerTest {
 protected:
  void SetUp() override {
    ::jobwire::testing::BrokerTest::SetUp();
    client_ = std::make_unique<Client>(ClientOptions{broker_->address()});
    leases_ = std::make_unique<LeaseRenewer>(client_.get(), [](const std::string&) {});
    leases_->Start();
  }
  void TearDown() override { leases_->Join(); }

  // Enqueues a job on "q", claims it, and keeps its lease.
  OutcomeSettler::Delivery Claim() {
    absl::StatusOr<Enqueued> enqueued = client_->Enqueue("q", "t", "{}");
    EXPECT_TRUE(enqueued.ok()) << enqueued.status();
    reader_ = OpenClaim(::jobwire::testing::MakeClaim({"q"}, 1, kLeaseMs));
    std::optional<v1::ClaimedJob> claimed = reader_->Next(absl::Seconds(10));
    EXPECT_TRUE(claimed.has_value());
    if (!claimed.has_value()) return {};
    auto signal = std::make_shared<RunSignal>();
    leases_->Add(claimed->lease_token(),
                 LeaseRenewer::Lease{"q", claimed->job().id(), absl::Milliseconds(kLeaseMs),
                                     kLeaseMs, claimed->lease_expires_at_ms(), signal},
                 absl::Now());
    return {"q", claimed->job().id(), claimed->lease_token(), signal};
  }

  // A Send whose first batch runs `first` (given the batch; it returns
  // whether the batch reaches the broker), then, once `lost` is raised
  // (within 10 s), is answered DEADLINE_EXCEEDED; later batches reach the
  // broker.
  AckCoalescer::Send ScriptedSend(std::function<bool(const v1::AckBatchRequest&)> first,
                                  std::shared_ptr<const RunSignal> lost) {
    return [this, first = std::move(first), lost](const v1::AckBatchRequest& batch)
               -> absl::StatusOr<std::vector<absl::Status>> {
      if (sends_++ > 0) return client_->AckBatch(batch);
      if (first(batch)) client_->AckBatch(batch).IgnoreError();
      const absl::Time give_up = absl::Now() + absl::Seconds(10);
      while (!lost->Has(StopReason::kLeaseLost) && absl::Now() < give_up) {
        absl::SleepFor(absl::Milliseconds(5));
      }
      EXPECT_TRUE(lost->Has(StopReason::kLeaseLost)) << "the renewer never lost the lease";
      return absl::DeadlineExceededError("stand-in: the answer was lost");
    };
  }

  // Acks `delivery` with result "r" through `settler`, sending it again as
  // the Worker does (RetryAck), and returns the outcome's kind.
  std::string AckOutcome(OutcomeSettler* settler, const OutcomeSettler::Delivery& delivery) {
    std::variant<Outcome, OutcomeSettler::AckRetry> answer;
    settler->Ack(delivery, "r", [&](std::variant<Outcome, OutcomeSettler::AckRetry> a) {
      answer = std::move(a);
    });
    if (const auto* retry = std::get_if<OutcomeSettler::AckRetry>(&answer)) {
      return settler->RetryAck(delivery, *retry).kind;
    }
    return std::get<Outcome>(answer).kind;
  }

  std::unique_ptr<Client> client_;
  std::unique_ptr<LeaseRenewer> leases_;
  std::unique_ptr<::jobwire::testing::ClaimReader> reader_;
  std::atomic<int> sends_{0};
};

// The ack was stored, its answer lost, and the lease lost because of it (the
// job is completed): sent once more at once, it is answered as a repeat.
TEST_F(OutcomeSettlerTest, AStoredAckWhoseAnswerWasLostIsSentOnceMoreWhenTheLeaseIsLost) {
  OutcomeSettler::Delivery delivery = Claim();
  OutcomeSettler settler(client_.get(), leases_.get(),
                         ScriptedSend([](const v1::AckBatchRequest&) { return true; },
                                      delivery.signal));
  EXPECT_EQ(AckOutcome(&settler, delivery), "ack_ok");
  EXPECT_EQ(sends_.load(), 2);
  absl::StatusOr<v1::Job> job = client_->GetJob("q", delivery.job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_COMPLETED);
  EXPECT_EQ(job->result(), "r");
}

// The ack never reached the broker, and the lease was lost to a Fail under
// the same token meanwhile: the ack sent once more is refused.
TEST_F(OutcomeSettlerTest, AnUnsentAckWhoseLeaseWasLostMeanwhileIsRefusedOnceMore) {
  OutcomeSettler::Delivery delivery = Claim();
  OutcomeSettler settler(
      client_.get(), leases_.get(),
      ScriptedSend(
          [&](const v1::AckBatchRequest&) {
            v1::FailRequest fail;
            fail.set_queue(delivery.queue);
            fail.set_job_id(delivery.job_id);
            fail.set_lease_token(delivery.lease_token);
            fail.set_error("failed elsewhere");
            EXPECT_TRUE(client_->Fail(fail).ok());
            return false;
          },
          delivery.signal));
  EXPECT_EQ(AckOutcome(&settler, delivery), "ack_error");
  EXPECT_EQ(sends_.load(), 2);
  absl::StatusOr<v1::Job> job = client_->GetJob("q", delivery.job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_NE(job->state(), v1::JOB_STATE_COMPLETED);
  EXPECT_EQ(job->result(), "");
}

// An ack sent while the lease was already known lost is sent once: its
// unanswered outcome is unknown.
TEST_F(OutcomeSettlerTest, AnAckSentAfterTheLeaseWasLostIsSentOnce) {
  OutcomeSettler::Delivery delivery = Claim();
  auto lost = std::make_shared<RunSignal>();
  lost->Raise(StopReason::kLeaseLost);
  delivery.signal = lost;
  OutcomeSettler settler(client_.get(), leases_.get(),
                         ScriptedSend([](const v1::AckBatchRequest&) { return false; }, lost));
  EXPECT_EQ(AckOutcome(&settler, delivery), "ack_unknown");
  EXPECT_EQ(sends_.load(), 1);
}

// The first batch never reached the broker and was answered CANCELLED, as
// gRPC answers a call that reaches a stopping broker (grpc/grpc#41785): the
// lease still holds, so the ack is sent again, as after UNAVAILABLE, and
// stored.
TEST_F(OutcomeSettlerTest, AnAckAnsweredCancelledIsSentAgainWhileTheLeaseHolds) {
  OutcomeSettler::Delivery delivery = Claim();
  OutcomeSettler settler(client_.get(), leases_.get(),
                         [this](const v1::AckBatchRequest& batch)
                             -> absl::StatusOr<std::vector<absl::Status>> {
                           if (sends_++ > 0) return client_->AckBatch(batch);
                           return absl::CancelledError("CANCELLED");
                         });
  EXPECT_EQ(AckOutcome(&settler, delivery), "ack_ok");
  EXPECT_EQ(sends_.load(), 2);
  absl::StatusOr<v1::Job> job = client_->GetJob("q", delivery.job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_COMPLETED);
  EXPECT_EQ(job->attempts(), 1);
  EXPECT_EQ(job->result(), "r");
}

}  // namespace
}  // namespace jobwire::client
