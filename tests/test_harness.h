// Cross-process test harness: a real redis-server, the real jobwire-broker
// binary, and small gRPC client helpers for the tests in this folder.
//
// Every process started here is a child of the test process with
// PR_SET_PDEATHSIG = SIGKILL, so nothing outlives a crashed test. Nothing in
// this file mocks Redis or the broker.
//
// Most tests derive their fixture from BrokerTest, which does this per test:
//
//   redis_ = std::make_unique<RedisServer>();
//   JW_ASSERT_OK(redis_->Start());
//   broker_ = std::make_unique<BrokerProcess>(redis_->port(), flags);
//   JW_ASSERT_OK(broker_->Start());
//   stub_ = broker_->NewStub();
//
// and then talk to the broker with the client helpers at the end of this
// file (Enqueue, GetJob, Ack, ... and ClaimReader for Claim streams).
//
// With JOBWIRE_TEST_REDIS=cluster in the environment, BrokerTest runs the
// broker with --redis_mode=cluster on a local Redis Cluster of 3 masters and
// 3 replicas (tests/redis_cluster.h) instead, one per test process, flushed
// before each test; redis_ is then null, and tests that look into Redis use
// RedisDbSize / RedisCommandFor / RedisCommandOnEveryMaster, which work in
// both modes. tests/CMakeLists.txt runs some suites a second time so.
#ifndef JOBWIRE_TESTS_TEST_HARNESS_H_
#define JOBWIRE_TESTS_TEST_HARNESS_H_

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "jobwire/v1/broker.grpc.pb.h"
#include "jobwire/v1/broker.pb.h"
#include "tests/redis_server.h"
#include "tests/subprocess.h"

// Assertions on absl::Status and grpc::Status values. On failure they print
// the status code and message.
#define JW_ASSERT_OK(expr)                                          \
  do {                                                              \
    const auto jw_status_ = (expr);                                 \
    ASSERT_TRUE(jw_status_.ok()) << ::jobwire::testing::StatusText( \
        jw_status_);                                                \
  } while (0)
#define JW_EXPECT_OK(expr)                                          \
  do {                                                              \
    const auto jw_status_ = (expr);                                 \
    EXPECT_TRUE(jw_status_.ok()) << ::jobwire::testing::StatusText( \
        jw_status_);                                                \
  } while (0)

// The broker binary, set by tests/CMakeLists.txt for the harness and every
// test target alike.
#ifndef JOBWIRE_BROKER_PATH
#define JOBWIRE_BROKER_PATH ""
#endif

namespace jobwire::testing {

namespace v1 = ::jobwire::v1;

// The outcome enum of FailResponse, whatever the generated type is called.
using FailOutcome = decltype(v1::FailResponse().outcome());

// The numeric values of the contract's enums (proto/jobwire/v1/broker.proto).
// Tests compare against these so they do not depend on the spelling of the
// generated enumerator names, only on the wire values.
inline constexpr v1::JobState kPending = static_cast<v1::JobState>(1);
inline constexpr v1::JobState kActive = static_cast<v1::JobState>(2);
inline constexpr v1::JobState kCompleted = static_cast<v1::JobState>(3);
inline constexpr v1::JobState kDead = static_cast<v1::JobState>(4);
inline constexpr FailOutcome kRetryScheduled = static_cast<FailOutcome>(1);
inline constexpr FailOutcome kOutcomeDead = static_cast<FailOutcome>(2);

// "CODE: message" for failure output.
std::string StatusText(const absl::Status& status);
std::string StatusText(const grpc::Status& status);
// The enum's name, or its number when unknown.
std::string StateName(v1::JobState state);
std::string OutcomeName(v1::FailResponse::Outcome outcome);

// Milliseconds since the Unix epoch on this machine's clock (the same clock
// the local Redis server reads).
int64_t NowMs();

// Runs the broker binary with --listen=127.0.0.1:0, --redis_url=`redis_url`,
// no metrics listener and `flags`, and returns its exit code once it exits by
// itself within 10 s; -1 when it is still running then (it is killed), died
// by a signal or could not start.
int BrokerExitCode(const std::string& redis_url, const std::vector<std::string>& flags);

// How a test client reaches the broker: channel credentials (null:
// plaintext) and a bearer token sent as "authorization: Bearer <token>" on
// every call (empty: none).
struct ClientSecurity {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::string token;
};

// The real broker binary (JOBWIRE_BROKER_PATH) pointed at a RedisServer.
// Not thread-safe; NewStub() may be called from any thread.
class BrokerProcess {
 public:
  // `extra_flags` are appended to --listen, --redis_url and
  // --metrics_listen= (no metrics endpoint unless a test sets one), e.g.
  // {"--completed_retention_ms=500"}. `broker_path` defaults to the binary
  // built by this tree.
  explicit BrokerProcess(int redis_port,
                         std::vector<std::string> extra_flags = {},
                         std::string broker_path = JOBWIRE_BROKER_PATH);
  BrokerProcess(const BrokerProcess&) = delete;
  BrokerProcess& operator=(const BrokerProcess&) = delete;
  ~BrokerProcess();

  // Set before Start(). The credentials (and token) of channel() and of the
  // startup probe; default plaintext without a token.
  void set_client_security(ClientSecurity security) {
    security_ = std::move(security);
  }
  // The --redis_url passed to the broker; default redis://127.0.0.1:<port>.
  void set_redis_url(std::string url) { redis_url_ = std::move(url); }
  // Where the broker's stderr (its log) goes; default ours.
  void set_stderr_path(std::string path) { stderr_path_ = std::move(path); }
  // With false, Start() returns once the broker listens and answers the
  // health service at all, without waiting for it to reach Redis (for tests
  // of a broker that cannot). Default true.
  void set_wait_for_redis(bool wait) { wait_for_redis_ = wait; }

  // Starts the broker on a free port and waits up to 10 s until GetJob on
  // queue "probe", job "0" answers anything but UNAVAILABLE /
  // DEADLINE_EXCEEDED. Returns UNAVAILABLE (with the last probe status) when
  // it does not, or when the broker exits early.
  absl::Status Start();

  // Drops this object's channel, then SIGTERM, then SIGKILL after 5 s.
  // Returns the wait status (-1 when not running). Stubs from NewStub() keep
  // their channel: destroy them first or the broker waits for them.
  int Stop();

  bool Running() { return process_.Running(); }

  // The broker's process id (e.g. to read /proc/<pid>/status), or -1.
  pid_t pid() const { return process_.pid(); }

  // Sends `sig` to the broker without waiting (e.g. SIGTERM to watch the
  // drain). Stop() still reaps it.
  void Signal(int sig);

  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }
  // REQUIRES: Start() succeeded and Stop() was not called since.
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // A stub on channel(). REQUIRES: as for channel().
  std::unique_ptr<v1::BrokerService::Stub> NewStub() const;

 private:
  absl::Status StartOnce();

  int redis_port_;
  std::vector<std::string> extra_flags_;
  ClientSecurity security_;
  std::string redis_url_;
  std::string stderr_path_;
  bool wait_for_redis_ = true;
  std::string broker_path_;
  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  Subprocess process_;
};

// A channel with short reconnect backoff (the defaults wait up to 2 minutes
// between attempts, which makes startup probes slow).
// `credentials` null means plaintext; a non-empty `token` is sent as
// "authorization: Bearer <token>" on every call (by a client interceptor).
std::shared_ptr<grpc::Channel> MakeChannel(
    const std::string& address,
    std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr,
    const std::string& token = "");

// A Claim stream read on a background thread. Received jobs queue up until
// Next() takes them. Thread-safe.
class ClaimReader {
 public:
  // Opens the stream at once. Owns `stub`.
  ClaimReader(std::unique_ptr<v1::BrokerService::Stub> stub,
              v1::ClaimRequest request);
  ClaimReader(const ClaimReader&) = delete;
  ClaimReader& operator=(const ClaimReader&) = delete;
  // Cancel() and join the reader thread.
  ~ClaimReader();

  // The next received job, waiting up to `timeout`; nullopt when none
  // arrived in time (or the stream ended and nothing is queued). When
  // `received_at` is not null it is set to the time the job was read off
  // the stream.
  std::optional<v1::ClaimedJob> Next(absl::Duration timeout,
                                     absl::Time* received_at = nullptr);

  // Like Next(), but waits until the absolute `deadline`.
  std::optional<v1::ClaimedJob> NextBefore(absl::Time deadline,
                                           absl::Time* received_at = nullptr);

  // Waits up to `timeout` for the stream to end; its final status, or
  // nullopt when it is still open.
  std::optional<grpc::Status> WaitForEnd(absl::Duration timeout);

  // Number of jobs received so far (taken or not).
  int received() const;
  // Number of stream messages received so far (each carries 1+ jobs).
  int messages() const;

  // Cancels the call (ClientContext::TryCancel). The thread ends soon after.
  void Cancel();

 private:
  void Run(v1::ClaimRequest request);

  std::unique_ptr<v1::BrokerService::Stub> stub_;
  grpc::ClientContext context_;
  mutable absl::Mutex mu_;
  std::deque<std::pair<v1::ClaimedJob, absl::Time>> queue_
      ABSL_GUARDED_BY(mu_);
  int received_ ABSL_GUARDED_BY(mu_) = 0;
  int messages_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<grpc::Status> end_status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// A fixture with a fresh RedisServer and BrokerProcess per test, and a stub.
// Subclasses pass extra broker flags to the constructor.
class RedisCluster;

// True when JOBWIRE_TEST_REDIS=cluster (see above).
bool TestRedisIsCluster();

class BrokerTest : public ::testing::Test {
 protected:
  explicit BrokerTest(std::vector<std::string> broker_flags = {})
      : broker_flags_(std::move(broker_flags)) {}

  void SetUp() override;

  // Another broker (not started) on the same Redis as broker_, in the same
  // mode, with `flags`.
  std::unique_ptr<BrokerProcess> AnotherBroker(std::vector<std::string> flags = {});

  // The number of keys in the Redis under test (every master's DBSIZE
  // summed in cluster mode); -1 when a server does not answer.
  int64_t RedisDbSize();
  // `argv` on the server holding `key` (its slot's master in cluster mode).
  absl::StatusOr<RedisReply> RedisCommandFor(const std::string& key,
                                             const std::vector<std::string>& argv);
  // Subscribers of sharded pub/sub `channel` (PUBSUB SHARDNUMSUB on the
  // server holding it); -1 when it does not answer.
  int64_t ShardSubscribers(const std::string& channel);
  // `argv` on the server, or on every master in cluster mode: the first
  // failure, else the last reply.
  absl::StatusOr<RedisReply> RedisCommandOnEveryMaster(const std::vector<std::string>& argv);

  // A ClaimReader on a new stub of this broker.
  std::unique_ptr<ClaimReader> OpenClaim(v1::ClaimRequest request) const;

  // Claim streams spread over two replicas, for the limits that must hold
  // across them: another broker on the same Redis (started), a stub of it,
  // and three streams on `queue` of `max_in_flight` each, two on broker_
  // and one on the other, given 300 ms to be waiting.
  struct TwoReplicaStreams {
    std::unique_ptr<BrokerProcess> other;
    std::unique_ptr<v1::BrokerService::Stub> other_stub;
    std::vector<std::unique_ptr<ClaimReader>> readers;
  };
  absl::StatusOr<TwoReplicaStreams> StreamsOnTwoReplicas(const std::string& queue,
                                                         int max_in_flight);

  std::vector<std::string> broker_flags_;
  // Where broker_'s stderr (its log) goes when not empty; set before SetUp.
  std::string broker_log_path_;
  std::unique_ptr<RedisServer> redis_;  // null in cluster mode
  RedisCluster* cluster_ = nullptr;     // cluster mode: the process's cluster
  std::unique_ptr<BrokerProcess> broker_;
  std::unique_ptr<v1::BrokerService::Stub> stub_;
};

// A ClaimRequest on `queues`.
v1::ClaimRequest MakeClaim(std::vector<std::string> queues,
                           int max_in_flight = 1, int64_t lease_ms = 0,
                           const std::string& worker_id = "test-worker");

// An EnqueueRequest with type "test" and the given fields; other fields
// stay at their defaults and can be set on the result.
v1::EnqueueRequest MakeJob(const std::string& queue,
                           const std::string& payload = "",
                           int32_t priority = 0);

// Client calls with a 10 s deadline. They return the gRPC status and fill
// the response.
grpc::Status Enqueue(v1::BrokerService::StubInterface& stub,
                     const v1::EnqueueRequest& request,
                     v1::EnqueueResponse* response);
grpc::Status EnqueueBatch(v1::BrokerService::StubInterface& stub,
                          const v1::EnqueueBatchRequest& request,
                          v1::EnqueueBatchResponse* response);
grpc::Status GetJob(v1::BrokerService::StubInterface& stub, const std::string& queue,
                    const std::string& job_id, v1::Job* job);
grpc::Status GetJob(v1::BrokerService::StubInterface& stub, const v1::GetJobRequest& request,
                    v1::Job* job);
grpc::Status GetJobByIdempotencyKey(v1::BrokerService::StubInterface& stub,
                                    const std::string& queue, const std::string& key,
                                    v1::Job* job);
grpc::Status Ack(v1::BrokerService::StubInterface& stub, const std::string& queue,
                 const std::string& job_id, const std::string& lease_token,
                 const std::string& result = "");
grpc::Status Ack(v1::BrokerService::StubInterface& stub, const v1::ClaimedJob& claimed,
                 const std::string& result = "");
grpc::Status AckBatch(v1::BrokerService::StubInterface& stub,
                      const v1::AckBatchRequest& request,
                      v1::AckBatchResponse* response);
grpc::Status Fail(v1::BrokerService::StubInterface& stub,
                  const v1::FailRequest& request, v1::FailResponse* response);
grpc::Status ExtendLease(v1::BrokerService::StubInterface& stub,
                         const v1::ExtendLeaseRequest& request,
                         v1::ExtendLeaseResponse* response);
grpc::Status Cancel(v1::BrokerService::StubInterface& stub, const std::string& queue,
                    const std::string& job_id);

// A FailRequest for `claimed`.
v1::FailRequest MakeFail(const v1::ClaimedJob& claimed,
                         const std::string& error, bool non_retryable = false,
                         int64_t retry_after_ms = 0);

// Enqueues `request` and returns the job id; "" (and a gtest failure) when
// the call fails.
std::string MustEnqueue(v1::BrokerService::StubInterface& stub,
                        const v1::EnqueueRequest& request);

// GetJob of `job_id`; an empty Job (and a gtest failure) when the call fails.
v1::Job MustGetJob(v1::BrokerService::StubInterface& stub, const std::string& queue,
                   const std::string& job_id);

// GetQueueStats of `queue`; empty stats (and a gtest failure) when the call
// fails.
v1::QueueStats MustGetQueueStats(v1::AdminService::StubInterface& admin, const std::string& queue);

// Waits (up to 10 s) until the broker that `admin` talks to lists no Claim
// stream of its own (ListWorkers answers its own streams live): a stream a
// test closed is then gone on the broker too, and claims nothing more. A
// gtest failure when streams are still listed.
void WaitNoClaimStreams(v1::AdminService::StubInterface& admin);

// A ClientContext with the helpers' 10 s deadline, for calls they do not wrap.
std::unique_ptr<grpc::ClientContext> RpcContext();

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_TEST_HARNESS_H_
