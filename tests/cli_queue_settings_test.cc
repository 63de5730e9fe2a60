// The CLI's queue settings end to end (create-queue / update-queue / stats):
// a default job timeout, a rate limit, max active per key; the real binary
// against the real broker and a real Redis.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

using ::testing::HasSubstr;

// create-queue / update-queue with a default job timeout, shown by stats
// and given to a job enqueued without one; update-queue with nothing to
// change is refused.
TEST_F(CliTest, QueueDefaultJobTimeout) {
  CliResult r = Cli({"create-queue", "timed", "--default-job-timeout-ms", "5000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "created queue timed with 1 partition(s), default job timeout 5000 ms\n");
  v1::Job job;
  ASSERT_TRUE(GetJob(*stub_, "timed", MustEnqueue(*stub_, MakeJob("timed")), &job).ok());
  EXPECT_EQ(job.timeout_ms(), 5000);
  EXPECT_THAT(Cli({"stats", "timed"}).out, HasSubstr("default job timeout: 5000 ms\n"));

  r = Cli({"update-queue", "timed", "--default-job-timeout-ms", "0"});
  EXPECT_EQ(r.out, "queue timed: 1 -> 1 partition(s), default job timeout no limit\n") << r.err;
  r = Cli({"update-queue", "timed", "--default-job-timeout-ms", "-1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(Cli({"stats", "timed"}).out, HasSubstr("default job timeout: the broker's\n"));

  r = Cli({"update-queue", "timed"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("partitions, default_job_timeout_ms, rate_limit, max_active, "
                               "max_active_per_key or key_rate_limit must be given"));
}

// create-queue / update-queue with a rate limit, shown by stats; off
// removes it; a malformed flag is refused naming it, a partitioned one by
// the broker naming rate_limit.
TEST_F(CliTest, QueueRateLimit) {
  CliResult r = Cli({"create-queue", "metered", "--rate-limit", "5/1000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "created queue metered with 1 partition(s), rate limit 5 per 1000 ms, burst 5\n");
  EXPECT_THAT(Cli({"stats", "metered"}).out, HasSubstr("rate limit:          5 per 1000 ms, burst 5\n"));
  r = Cli({"update-queue", "metered", "--rate-limit", "10/60000/2"});
  EXPECT_EQ(r.out, "queue metered: 1 -> 1 partition(s), rate limit 10 per 60000 ms, burst 2\n")
      << r.err;
  r = Cli({"update-queue", "metered", "--rate-limit", "off"});
  EXPECT_EQ(r.out, "queue metered: 1 -> 1 partition(s), rate limit removed\n") << r.err;
  EXPECT_THAT(Cli({"stats", "metered"}).out, HasSubstr("rate limit:          none\n"));

  r = Cli({"create-queue", "other", "--rate-limit", "5 per second"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--rate-limit: must be COUNT/INTERVAL_MS[/BURST], got 5 per second"));
  r = Cli({"create-queue", "other", "--partitions", "4", "--rate-limit", "5/1000"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("rate_limit: a queue with rate_limit has one partition"));

  r = Cli({"update-queue", "metered", "--max-active", "3"});
  EXPECT_EQ(r.out, "queue metered: 1 -> 1 partition(s), max active 3\n") << r.err;
  EXPECT_THAT(Cli({"stats", "metered"}).out, HasSubstr("max active:          3\n"));
  r = Cli({"update-queue", "metered", "--max-active", "0"});
  EXPECT_EQ(r.out, "queue metered: 1 -> 1 partition(s), max active none\n") << r.err;
  EXPECT_THAT(Cli({"stats", "metered"}).out, HasSubstr("max active:          none\n"));
}

// create-queue / update-queue with a rate limit per concurrency key, shown
// by stats; off removes it; a malformed flag is refused naming it, a
// partitioned queue by the broker naming key_rate_limit.
TEST_F(CliTest, QueueKeyRateLimit) {
  CliResult r = Cli({"create-queue", "tenants", "--key-rate-limit", "2/1000"});
  EXPECT_EQ(r.out,
            "created queue tenants with 1 partition(s), rate limit per key 2 per 1000 ms, "
            "burst 2\n")
      << r.err;
  EXPECT_THAT(Cli({"stats", "tenants"}).out,
              HasSubstr("rate limit per key:  2 per 1000 ms, burst 2\n"));
  r = Cli({"update-queue", "tenants", "--key-rate-limit", "10/60000/3"});
  EXPECT_EQ(r.out, "queue tenants: 1 -> 1 partition(s), rate limit per key 10 per 60000 ms, "
                   "burst 3\n")
      << r.err;
  r = Cli({"update-queue", "tenants", "--key-rate-limit", "off"});
  EXPECT_EQ(r.out, "queue tenants: 1 -> 1 partition(s), rate limit per key removed\n") << r.err;
  EXPECT_THAT(Cli({"stats", "tenants"}).out, HasSubstr("rate limit per key:  none\n"));

  r = Cli({"create-queue", "other", "--key-rate-limit", "2 a second"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err,
              HasSubstr("--key-rate-limit: must be COUNT/INTERVAL_MS[/BURST], got 2 a second"));
  r = Cli({"create-queue", "other", "--partitions", "4", "--key-rate-limit", "2/1000"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("key_rate_limit: a queue with key_rate_limit has one partition"));
}

// --max-active-per-key on create-queue / update-queue, shown by stats; 0
// removes it; enqueue --concurrency-key stores the key, which job shows.
TEST_F(CliTest, QueueMaxActivePerKey) {
  CliResult r = Cli({"create-queue", "tenants", "--max-active-per-key", "2"});
  EXPECT_EQ(r.out, "created queue tenants with 1 partition(s), max active per key 2\n") << r.err;
  EXPECT_THAT(Cli({"stats", "tenants"}).out, HasSubstr("max active per key:  2\n"));
  r = Cli({"update-queue", "tenants", "--max-active-per-key", "0"});
  EXPECT_EQ(r.out, "queue tenants: 1 -> 1 partition(s), max active per key none\n") << r.err;
  EXPECT_THAT(Cli({"stats", "tenants"}).out, HasSubstr("max active per key:  none\n"));
  r = Cli({"create-queue", "wide", "--partitions", "2", "--max-active-per-key", "1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("max_active_per_key: a queue with max_active_per_key has one "
                               "partition"));

  r = Cli({"enqueue", "tenants", "t", "--payload", "x", "--concurrency-key", "customer-7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_THAT(Cli({"job", "tenants", id}).out, HasSubstr("concurrency key: customer-7\n"));
}

}  // namespace
}  // namespace jobwire::testing
