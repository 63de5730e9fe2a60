// The Admin service through the real broker and a real Redis: queue stats,
// job listings, redriving and purging dead jobs, deleting jobs, pausing.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AdminTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  static std::unique_ptr<grpc::ClientContext> Context() { return RpcContext(); }

  v1::QueueStats Stats(const std::string& queue) { return MustGetQueueStats(*admin_, queue); }

  // Ids of one page, and its next_page_token in `token`.
  std::vector<std::string> Page(v1::ListJobsRequest request, std::string* token = nullptr) {
    v1::ListJobsResponse response;
    grpc::Status status = admin_->ListJobs(Context().get(), request, &response);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    std::vector<std::string> ids;
    for (const v1::Job& job : response.jobs()) ids.push_back(job.id());
    if (token != nullptr) *token = response.next_page_token();
    return ids;
  }

  std::string EnqueueTyped(const std::string& queue, const std::string& type,
                           int64_t delay_ms = 0) {
    v1::EnqueueRequest request = MakeJob(queue);
    request.set_type(type);
    request.set_delay_ms(delay_ms);
    return MustEnqueue(*stub_, request);
  }

  // A dead job of `type`: enqueued, then cancelled.
  std::string DeadJob(const std::string& queue, const std::string& type) {
    std::string id = EnqueueTyped(queue, type);
    grpc::Status status = Cancel(*stub_, queue, id);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    return id;
  }

  v1::JobState State(const std::string& queue, const std::string& id) {
    v1::Job job;
    grpc::Status status = GetJob(*stub_, queue, id, &job);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    return job.state();
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(AdminTest, StatsCountEveryStateAndListQueuesShowsThem) {
  const std::string queue = "stats";
  EnqueueTyped(queue, "t");
  EnqueueTyped(queue, "t", /*delay_ms=*/60000);
  DeadJob(queue, "t");
  const std::string to_complete = EnqueueTyped(queue, "t");
  auto reader = OpenClaim(MakeClaim({queue}, 2, 30000));
  // Claim order: the two due jobs (the first enqueued, then to_complete).
  std::optional<v1::ClaimedJob> first = reader->Next(absl::Seconds(5));
  std::optional<v1::ClaimedJob> second = reader->Next(absl::Seconds(5));
  ASSERT_TRUE(first.has_value() && second.has_value());
  JW_ASSERT_OK(Ack(*stub_, *second));
  reader->Cancel();
  // Paused, so that the cancelled stream (which the broker may not have seen
  // end yet) cannot claim the next job.
  v1::PauseQueueRequest pause;
  pause.set_queue(queue);
  v1::PauseQueueResponse paused;
  JW_ASSERT_OK(admin_->PauseQueue(Context().get(), pause, &paused));
  EnqueueTyped(queue, "t");  // due, pending

  v1::QueueStats stats = Stats(queue);
  EXPECT_EQ(stats.queue(), queue);
  EXPECT_EQ(stats.pending_due(), 1);
  EXPECT_EQ(stats.pending_scheduled(), 1);
  EXPECT_EQ(stats.active(), 1);
  EXPECT_EQ(stats.completed(), 1);
  EXPECT_EQ(stats.dead(), 1);
  EXPECT_TRUE(stats.paused());

  EnqueueTyped("other", "t");
  v1::ListQueuesResponse queues;
  JW_ASSERT_OK(admin_->ListQueues(Context().get(), v1::ListQueuesRequest(), &queues));
  ASSERT_EQ(queues.queues_size(), 2);
  EXPECT_EQ(queues.queues(0).queue(), "other");
  EXPECT_EQ(queues.queues(0).pending_due(), 1);
  EXPECT_EQ(queues.queues(1).queue(), queue);
  EXPECT_EQ(queues.queues(1).dead(), 1);

  // A queue that never had jobs: zeros, not an error.
  EXPECT_EQ(Stats("never.used").pending_due(), 0);
}

// The oldest due job is not the first in claim order when a higher priority
// job arrived later; the age must still be the older one's.
TEST_F(AdminTest, OldestDueAgeLooksAcrossPriorities) {
  const std::string queue = "age";
  EXPECT_EQ(Stats(queue).oldest_due_age_ms(), 0);
  v1::EnqueueRequest low = MakeJob(queue, "", -5);
  MustEnqueue(*stub_, low);
  absl::SleepFor(absl::Milliseconds(400));
  v1::EnqueueRequest high = MakeJob(queue, "", 10);
  MustEnqueue(*stub_, high);
  int64_t age = Stats(queue).oldest_due_age_ms();
  EXPECT_GE(age, 380);
  EXPECT_LT(age, 5000);
}

TEST_F(AdminTest, ListJobsPagesInBothOrdersAndFiltersByType) {
  const std::string queue = "list";
  std::vector<std::string> ids;
  for (const char* type : {"a", "b", "a", "b", "a"}) ids.push_back(EnqueueTyped(queue, type));

  v1::ListJobsRequest request;
  request.set_queue(queue);
  request.set_state(v1::JOB_STATE_PENDING);
  request.set_page_size(2);
  request.set_oldest_first(true);
  std::string token;
  EXPECT_THAT(Page(request, &token), ElementsAre(ids[0], ids[1]));
  request.set_page_token(token);
  EXPECT_THAT(Page(request, &token), ElementsAre(ids[2], ids[3]));
  request.set_page_token(token);
  EXPECT_THAT(Page(request, &token), ElementsAre(ids[4]));
  EXPECT_EQ(token, "");

  request.set_oldest_first(false);
  request.set_page_token("");
  EXPECT_THAT(Page(request, &token), ElementsAre(ids[4], ids[3]));

  request.set_type("b");
  request.set_page_size(10);
  EXPECT_THAT(Page(request, &token), ElementsAre(ids[3], ids[1]));
  EXPECT_EQ(token, "");

  // Scheduled jobs come after the due ones in claim order.
  const std::string later = EnqueueTyped(queue, "a", 60000);
  request.set_type("");
  request.set_oldest_first(true);
  request.set_page_size(10);
  std::vector<std::string> all = Page(request);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all.back(), later);

  v1::ListJobsRequest dead;
  dead.set_queue(queue);
  dead.set_state(v1::JOB_STATE_DEAD);
  EXPECT_TRUE(Page(dead).empty());
}

TEST_F(AdminTest, RetryDeadMovesListedOrAllDeadJobs) {
  const std::string queue = "redrive";
  const std::string a1 = DeadJob(queue, "a");
  const std::string a2 = DeadJob(queue, "a");
  const std::string b1 = DeadJob(queue, "b");
  const std::string pending = EnqueueTyped(queue, "a", 60000);

  v1::RetryDeadRequest by_id;
  by_id.set_queue(queue);
  by_id.add_job_ids(a1);
  by_id.add_job_ids(pending);  // not dead: skipped
  v1::RetryDeadResponse response;
  JW_ASSERT_OK(admin_->RetryDead(Context().get(), by_id, &response));
  EXPECT_EQ(response.moved(), 1);
  EXPECT_EQ(State(queue, a1), kPending);

  v1::RetryDeadRequest all_b;
  all_b.set_queue(queue);
  all_b.set_all(true);
  all_b.set_type("b");
  JW_ASSERT_OK(admin_->RetryDead(Context().get(), all_b, &response));
  EXPECT_EQ(response.moved(), 1);
  EXPECT_EQ(State(queue, a2), kDead);
  EXPECT_EQ(State(queue, b1), kPending);

  v1::RetryDeadRequest all;
  all.set_queue(queue);
  all.set_all(true);
  JW_ASSERT_OK(admin_->RetryDead(Context().get(), all, &response));
  EXPECT_EQ(response.moved(), 1);
  EXPECT_EQ(Stats(queue).dead(), 0);

  // Redriven jobs are due now and start over at attempt 1.
  auto reader = OpenClaim(MakeClaim({queue}, 3, 30000));
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::ClaimedJob> claimed = reader->Next(absl::Seconds(5));
    ASSERT_TRUE(claimed.has_value());
    EXPECT_EQ(claimed->job().attempts(), 1);
    EXPECT_EQ(claimed->job().error(), "cancelled");  // the last error is kept
  }
}

TEST_F(AdminTest, RetryDeadAllCrossesBatches) {
  const std::string queue = "redrive.many";
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < 1000; ++i) {
    v1::EnqueueRequest* job = batch.add_jobs();
    *job = MakeJob(queue);
    job->set_type(i % 3 == 0 ? "keep" : "move");
  }
  v1::EnqueueBatchResponse enqueued;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &enqueued));
  for (const v1::EnqueueResult& result : enqueued.results()) {
    JW_ASSERT_OK(Cancel(*stub_, queue, result.job_id()));
  }
  v1::RetryDeadRequest request;
  request.set_queue(queue);
  request.set_all(true);
  request.set_type("move");
  v1::RetryDeadResponse response;
  JW_ASSERT_OK(admin_->RetryDead(Context().get(), request, &response));
  EXPECT_EQ(response.moved(), 666);
  v1::QueueStats stats = Stats(queue);
  EXPECT_EQ(stats.dead(), 334);
  EXPECT_EQ(stats.pending_due(), 666);
}

TEST_F(AdminTest, DeleteJobRemovesItAndFreesItsIdempotencyKey) {
  const std::string queue = "delete";
  v1::EnqueueRequest request = MakeJob(queue);
  request.set_idempotency_key("order-7");
  const std::string id = MustEnqueue(*stub_, request);

  v1::DeleteJobRequest del;
  del.set_queue(queue);
  del.set_job_id(id);
  v1::DeleteJobResponse response;
  JW_ASSERT_OK(admin_->DeleteJob(Context().get(), del, &response));
  v1::Job job;
  EXPECT_EQ(GetJob(*stub_, queue, id, &job).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Stats(queue).pending_due(), 0);
  EXPECT_EQ(admin_->DeleteJob(Context().get(), del, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);

  v1::EnqueueResponse again;
  JW_ASSERT_OK(Enqueue(*stub_, request, &again));
  EXPECT_FALSE(again.duplicate());
  EXPECT_NE(again.job_id(), id);
}

TEST_F(AdminTest, PurgeDeadRemovesOnlyJobsDeadLongEnough) {
  const std::string queue = "purge";
  const std::string old1 = DeadJob(queue, "t");
  const std::string old2 = DeadJob(queue, "t");
  absl::SleepFor(absl::Milliseconds(400));
  const std::string recent = DeadJob(queue, "t");

  v1::PurgeDeadRequest request;
  request.set_queue(queue);
  request.set_older_than_ms(300);
  v1::PurgeDeadResponse response;
  JW_ASSERT_OK(admin_->PurgeDead(Context().get(), request, &response));
  EXPECT_EQ(response.purged(), 2);
  EXPECT_EQ(State(queue, recent), kDead);
  v1::Job job;
  EXPECT_EQ(GetJob(*stub_, queue, old1, &job).error_code(), grpc::StatusCode::NOT_FOUND);

  request.set_older_than_ms(0);
  JW_ASSERT_OK(admin_->PurgeDead(Context().get(), request, &response));
  EXPECT_EQ(response.purged(), 1);
  EXPECT_EQ(Stats(queue).dead(), 0);
}

TEST_F(AdminTest, PausedQueueAcceptsJobsButDeliversNoneUntilResumed) {
  const std::string queue = "paused";
  auto reader = OpenClaim(MakeClaim({queue}, 1, 30000));
  v1::PauseQueueRequest pause;
  pause.set_queue(queue);
  v1::PauseQueueResponse paused;
  JW_ASSERT_OK(admin_->PauseQueue(Context().get(), pause, &paused));
  JW_ASSERT_OK(admin_->PauseQueue(Context().get(), pause, &paused));  // idempotent

  const std::string id = EnqueueTyped(queue, "t");
  EXPECT_FALSE(reader->Next(absl::Milliseconds(500)).has_value());
  v1::QueueStats stats = Stats(queue);
  EXPECT_TRUE(stats.paused());
  EXPECT_EQ(stats.pending_due(), 1);

  v1::ResumeQueueRequest resume;
  resume.set_queue(queue);
  v1::ResumeQueueResponse resumed;
  const absl::Time resumed_at = absl::Now();
  JW_ASSERT_OK(admin_->ResumeQueue(Context().get(), resume, &resumed));
  std::optional<v1::ClaimedJob> claimed = reader->Next(absl::Seconds(5));
  ASSERT_TRUE(claimed.has_value()) << "open stream did not resume";
  EXPECT_EQ(claimed->job().id(), id);
  EXPECT_LT(absl::Now() - resumed_at, absl::Seconds(1));
  EXPECT_FALSE(Stats(queue).paused());
}

// Bad requests get INVALID_ARGUMENT naming the field, and change nothing.
TEST_F(AdminTest, InvalidRequestsNameTheFieldAndChangeNothing) {
  const std::string queue = "invalid";
  const std::string dead = DeadJob(queue, "t");
  struct Case {
    std::string name;
    std::function<grpc::Status()> call;
    std::string field;
  };
  auto list = [&](auto edit) {
    return [this, queue, edit] {
      v1::ListJobsRequest r;
      r.set_queue(queue);
      r.set_state(v1::JOB_STATE_DEAD);
      edit(r);
      v1::ListJobsResponse resp;
      return admin_->ListJobs(Context().get(), r, &resp);
    };
  };
  auto retry = [&](auto edit) {
    return [this, queue, edit] {
      v1::RetryDeadRequest r;
      r.set_queue(queue);
      edit(r);
      v1::RetryDeadResponse resp;
      return admin_->RetryDead(Context().get(), r, &resp);
    };
  };
  std::vector<Case> cases = {
      {"bad queue", list([](v1::ListJobsRequest& r) { r.set_queue("no spaces"); }), "queue"},
      {"no state", list([](v1::ListJobsRequest& r) { r.set_state(v1::JOB_STATE_UNSPECIFIED); }),
       "state"},
      {"page too big", list([](v1::ListJobsRequest& r) { r.set_page_size(1001); }), "page_size"},
      {"forged token", list([](v1::ListJobsRequest& r) { r.set_page_token("x1"); }),
       "page_token"},
      {"ids and all", retry([&](v1::RetryDeadRequest& r) {
         r.add_job_ids(dead);
         r.set_all(true);
       }),
       "job_ids"},
      {"neither", retry([](v1::RetryDeadRequest&) {}), "job_ids"},
      {"bad id", retry([](v1::RetryDeadRequest& r) { r.add_job_ids("a b"); }), "job_ids[0]"},
      {"negative age",
       [this, queue] {
         v1::PurgeDeadRequest r;
         r.set_queue(queue);
         r.set_older_than_ms(-1);
         v1::PurgeDeadResponse resp;
         return admin_->PurgeDead(Context().get(), r, &resp);
       },
       "older_than_ms"},
      {"pause bad queue",
       [this] {
         v1::PauseQueueRequest r;
         v1::PauseQueueResponse resp;
         return admin_->PauseQueue(Context().get(), r, &resp);
       },
       "queue"},
  };
  for (const Case& c : cases) {
    grpc::Status status = c.call();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.name;
    EXPECT_THAT(status.error_message(), HasSubstr(c.field + ":")) << c.name;
  }
  EXPECT_EQ(State(queue, dead), kDead);
  EXPECT_EQ(Stats(queue).dead(), 1);
}

}  // namespace
}  // namespace jobwire::testing
