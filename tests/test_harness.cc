#include "tests/test_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "tests/redis_cluster.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"
#include "grpcpp/support/client_interceptor.h"

namespace jobwire::testing {
namespace {

constexpr absl::Duration kStartupTimeout = absl::Seconds(10);
constexpr absl::Duration kStopGrace = absl::Seconds(5);

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

// True when a TCP connection to 127.0.0.1:port succeeds.
bool CanConnect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok =
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::string StatusText(const absl::Status& status) {
  return status.ToString();
}

std::string StatusText(const grpc::Status& status) {
  return absl::StrCat("gRPC code ", static_cast<int>(status.error_code()),
                      ": ", status.error_message());
}

std::string StateName(v1::JobState state) {
  const google::protobuf::EnumValueDescriptor* value =
      google::protobuf::GetEnumDescriptor<v1::JobState>()->FindValueByNumber(
          state);
  return value == nullptr ? absl::StrCat(static_cast<int>(state))
                          : value->name();
}

std::string OutcomeName(FailOutcome outcome) {
  const google::protobuf::EnumValueDescriptor* value =
      google::protobuf::GetEnumDescriptor<FailOutcome>()->FindValueByNumber(
          outcome);
  return value == nullptr ? absl::StrCat(static_cast<int>(outcome))
                          : value->name();
}

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

int BrokerExitCode(const std::string& redis_url, const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {JOBWIRE_BROKER_PATH, "--listen=127.0.0.1:0",
                                   "--redis_url=" + redis_url, "--metrics_listen="};
  argv.insert(argv.end(), flags.begin(), flags.end());
  Subprocess broker;
  if (!broker.Spawn(argv).ok()) return -1;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (broker.Running()) {
    if (absl::Now() >= deadline) return -1;
    absl::SleepFor(absl::Milliseconds(20));
  }
  const int status = broker.last_status();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ------------------------------------------------------------- BrokerProcess

namespace {

// Adds "authorization: Bearer <token>" to every call's metadata.
class BearerInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(std::string value) : value_(std::move(value)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", value_});
    }
    methods->Proceed();
  }

 private:
  const std::string value_;
};

class BearerInterceptorFactory
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerInterceptorFactory(std::string token)
      : value_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(value_);
  }

 private:
  const std::string value_;
};

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(
    const std::string& address,
    std::shared_ptr<grpc::ChannelCredentials> credentials,
    const std::string& token) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  if (credentials == nullptr) credentials = grpc::InsecureChannelCredentials();
  if (token.empty()) return grpc::CreateCustomChannel(address, credentials, args);
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<BearerInterceptorFactory>(token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address, credentials, args, std::move(interceptors));
}

BrokerProcess::BrokerProcess(int redis_port,
                             std::vector<std::string> extra_flags,
                             std::string broker_path)
    : redis_port_(redis_port),
      extra_flags_(std::move(extra_flags)),
      broker_path_(std::move(broker_path)) {}

BrokerProcess::~BrokerProcess() { Stop(); }

absl::Status BrokerProcess::Start() {
  absl::Status status;
  // A second try covers the rare case of the picked port being taken.
  for (int attempt = 0; attempt < 2; ++attempt) {
    status = StartOnce();
    if (status.ok() || process_.Running()) return status;
  }
  return status;
}

absl::Status BrokerProcess::StartOnce() {
  if (broker_path_.empty()) {
    return absl::FailedPreconditionError(
        "no broker path (JOBWIRE_BROKER_PATH)");
  }
  absl::StatusOr<int> port = PickFreePort();
  if (!port.ok()) return port.status();
  address_ = absl::StrCat("127.0.0.1:", *port);
  std::vector<std::string> argv = {
      broker_path_, absl::StrCat("--listen=", address_),
      absl::StrCat("--redis_url=",
                   redis_url_.empty()
                       ? absl::StrCat("redis://127.0.0.1:", redis_port_)
                       : redis_url_),
      "--metrics_listen="};
  argv.insert(argv.end(), extra_flags_.begin(), extra_flags_.end());
  absl::Status spawned = process_.Spawn(argv, "", stderr_path_);
  if (!spawned.ok()) return spawned;

  // Wait for the listening socket first: a channel that fails to connect
  // backs off for seconds, which would dominate every test's startup.
  const absl::Time deadline = absl::Now() + kStartupTimeout;
  while (!CanConnect(*port)) {
    if (!process_.Running()) {
      return absl::UnavailableError(
          absl::StrCat("broker exited before listening on ", address_));
    }
    if (absl::Now() >= deadline) {
      process_.Terminate(kStopGrace);
      return absl::UnavailableError(
          absl::StrCat("broker not listening on ", address_, " after 10 s"));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  channel_ = MakeChannel(address_, security_.credentials, security_.token);
  std::unique_ptr<v1::BrokerService::Stub> stub = v1::BrokerService::NewStub(channel_);
  grpc::Status last(grpc::StatusCode::UNAVAILABLE, "not probed");
  while (absl::Now() < deadline) {
    if (!process_.Running()) {
      return absl::UnavailableError(
          absl::StrCat("broker exited during startup; last probe: ",
                       StatusText(last)));
    }
    grpc::ClientContext context;
    SetDeadline(context, absl::Milliseconds(500));
    v1::GetJobRequest request;
    request.set_queue("probe");
    request.set_job_id("0");
    v1::GetJobResponse response;
    last = stub->GetJob(&context, request, &response);
    // The broker's own answer while it cannot reach Redis.
    if (!wait_for_redis_ &&
        last.error_code() == grpc::StatusCode::UNAVAILABLE &&
        absl::StrContains(last.error_message(), "redis")) {
      return absl::OkStatus();
    }
    if (last.error_code() != grpc::StatusCode::UNAVAILABLE &&
        last.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  process_.Terminate(kStopGrace);
  return absl::UnavailableError(absl::StrCat(
      "broker not serving after 10 s; last probe: ", StatusText(last)));
}

int BrokerProcess::Stop() {
  // Our connection is closed first, as a well-behaved client would.
  // (broker_process_test checks that a client left connected does not delay
  // the broker's exit.)
  channel_.reset();
  return process_.Terminate(kStopGrace);
}

void BrokerProcess::Signal(int sig) {
  if (process_.pid() > 0) kill(process_.pid(), sig);
}

std::unique_ptr<v1::BrokerService::Stub> BrokerProcess::NewStub() const {
  return v1::BrokerService::NewStub(channel_);
}

// --------------------------------------------------------------- ClaimReader

ClaimReader::ClaimReader(std::unique_ptr<v1::BrokerService::Stub> stub,
                         v1::ClaimRequest request)
    : stub_(std::move(stub)) {
  thread_ = std::thread([this, request = std::move(request)] { Run(request); });
}

ClaimReader::~ClaimReader() {
  Cancel();
  if (thread_.joinable()) thread_.join();
}

void ClaimReader::Run(v1::ClaimRequest request) {
  std::unique_ptr<grpc::ClientReader<v1::ClaimResponse>> reader =
      stub_->Claim(&context_, request);
  v1::ClaimResponse message;
  while (reader->Read(&message)) {
    absl::MutexLock lock(&mu_);
    ++messages_;
    const absl::Time now = absl::Now();
    for (v1::ClaimedJob& job : *message.mutable_jobs()) {
      queue_.emplace_back(std::move(job), now);
      ++received_;
    }
    message.Clear();
  }
  grpc::Status status = reader->Finish();
  absl::MutexLock lock(&mu_);
  end_status_ = std::move(status);
}

std::optional<v1::ClaimedJob> ClaimReader::Next(absl::Duration timeout,
                                                absl::Time* received_at) {
  return NextBefore(absl::Now() + timeout, received_at);
}

std::optional<v1::ClaimedJob> ClaimReader::NextBefore(absl::Time deadline,
                                                      absl::Time* received_at) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || end_status_.has_value();
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (queue_.empty()) return std::nullopt;
  v1::ClaimedJob job = std::move(queue_.front().first);
  if (received_at != nullptr) *received_at = queue_.front().second;
  queue_.pop_front();
  return job;
}

std::optional<grpc::Status> ClaimReader::WaitForEnd(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ended = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return end_status_.has_value();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ended), timeout);
  return end_status_;
}

int ClaimReader::received() const {
  absl::MutexLock lock(&mu_);
  return received_;
}

int ClaimReader::messages() const {
  absl::MutexLock lock(&mu_);
  return messages_;
}

void ClaimReader::Cancel() { context_.TryCancel(); }

// ---------------------------------------------------------------- BrokerTest

bool TestRedisIsCluster() {
  const char* mode = getenv("JOBWIRE_TEST_REDIS");
  return mode != nullptr && std::string(mode) == "cluster";
}

namespace {

// The test process's cluster, started by the first test that needs it and
// stopped at exit. Null (and the test failed) when it cannot start.
RedisCluster* SharedCluster() {
  static RedisCluster* cluster = [] {
    auto* c = new RedisCluster();
    absl::Status started = c->Start();
    if (!started.ok()) {
      ADD_FAILURE() << "local Redis Cluster: " << started;
      delete c;
      return static_cast<RedisCluster*>(nullptr);
    }
    return c;
  }();
  return cluster;
}

}  // namespace

void BrokerTest::SetUp() {
  if (TestRedisIsCluster()) {
    cluster_ = SharedCluster();
    ASSERT_NE(cluster_, nullptr);
    auto flushed = RedisCommandOnEveryMaster({"FLUSHALL"});
    JW_ASSERT_OK(flushed.status());
  } else {
    redis_ = std::make_unique<RedisServer>();
    JW_ASSERT_OK(redis_->Start());
  }
  broker_ = AnotherBroker(broker_flags_);
  if (!broker_log_path_.empty()) broker_->set_stderr_path(broker_log_path_);
  JW_ASSERT_OK(broker_->Start());
  stub_ = broker_->NewStub();
}

std::unique_ptr<BrokerProcess> BrokerTest::AnotherBroker(std::vector<std::string> flags) {
  if (cluster_ == nullptr) return std::make_unique<BrokerProcess>(redis_->port(), std::move(flags));
  flags.push_back("--redis_mode=cluster");
  auto broker = std::make_unique<BrokerProcess>(0, std::move(flags));
  broker->set_redis_url(cluster_->url());
  return broker;
}

int64_t BrokerTest::RedisDbSize() {
  if (redis_ != nullptr) return redis_->DbSize();
  absl::StatusOr<std::vector<int>> masters = cluster_->MasterPorts();
  if (!masters.ok()) return -1;
  int64_t total = 0;
  for (int port : *masters) {
    absl::StatusOr<RedisReply> n = cluster_->CommandAt(port, {"DBSIZE"});
    if (!n.ok() || n->is_error()) return -1;
    total += n->integer;
  }
  return total;
}

absl::StatusOr<RedisReply> BrokerTest::RedisCommandFor(const std::string& key,
                                                       const std::vector<std::string>& argv) {
  if (redis_ != nullptr) return redis_->CommandArgv(argv);
  absl::StatusOr<std::vector<int>> masters = cluster_->MasterPorts();
  if (!masters.ok()) return masters.status();
  absl::StatusOr<RedisReply> slot = cluster_->CommandAt(masters->front(), {"CLUSTER", "KEYSLOT", key});
  if (!slot.ok()) return slot.status();
  absl::StatusOr<int> owner = cluster_->MasterOfSlot(static_cast<int>(slot->integer));
  if (!owner.ok()) return owner.status();
  return cluster_->CommandAt(*owner, argv);
}

int64_t BrokerTest::ShardSubscribers(const std::string& channel) {
  absl::StatusOr<RedisReply> reply = RedisCommandFor(channel, {"PUBSUB", "SHARDNUMSUB", channel});
  if (!reply.ok() || reply->elements.size() != 2) return -1;
  return reply->elements[1].integer;
}

absl::StatusOr<RedisReply> BrokerTest::RedisCommandOnEveryMaster(
    const std::vector<std::string>& argv) {
  if (redis_ != nullptr) return redis_->CommandArgv(argv);
  absl::StatusOr<std::vector<int>> masters = cluster_->MasterPorts();
  if (!masters.ok()) return masters.status();
  absl::StatusOr<RedisReply> last = absl::UnavailableError("no master");
  for (int port : *masters) {
    last = cluster_->CommandAt(port, argv);
    if (!last.ok()) return last;
  }
  return last;
}

std::unique_ptr<ClaimReader> BrokerTest::OpenClaim(
    v1::ClaimRequest request) const {
  return std::make_unique<ClaimReader>(broker_->NewStub(), std::move(request));
}

absl::StatusOr<BrokerTest::TwoReplicaStreams> BrokerTest::StreamsOnTwoReplicas(
    const std::string& queue, int max_in_flight) {
  TwoReplicaStreams s;
  s.other = AnotherBroker();
  if (absl::Status started = s.other->Start(); !started.ok()) return started;
  s.other_stub = s.other->NewStub();
  s.readers.push_back(OpenClaim(MakeClaim({queue}, max_in_flight)));
  s.readers.push_back(OpenClaim(MakeClaim({queue}, max_in_flight)));
  s.readers.push_back(
      std::make_unique<ClaimReader>(s.other->NewStub(), MakeClaim({queue}, max_in_flight)));
  absl::SleepFor(absl::Milliseconds(300));
  return s;
}

}  // namespace jobwire::testing
