#include "tests/test_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"
#include "grpcpp/support/client_interceptor.h"
#include "hiredis/hiredis.h"

namespace jobwire::testing {
namespace {

constexpr absl::Duration kRpcDeadline = absl::Seconds(10);
constexpr absl::Duration kStartupTimeout = absl::Seconds(10);
constexpr absl::Duration kStopGrace = absl::Seconds(5);

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

RedisReply CopyReply(const redisReply& reply) {
  RedisReply out;
  out.type = reply.type;
  out.integer = reply.integer;
  if (reply.str != nullptr) out.str.assign(reply.str, reply.len);
  for (size_t i = 0; i < reply.elements; ++i) {
    out.elements.push_back(CopyReply(*reply.element[i]));
  }
  return out;
}

// AUTH `password` on `c` when it is not empty; true when that succeeded.
bool Authenticate(redisContext* c, const std::string& password) {
  if (password.empty()) return true;
  auto* reply = static_cast<redisReply*>(
      redisCommand(c, "AUTH %b", password.data(), password.size()));
  const bool ok = reply != nullptr && reply->type != REDIS_REPLY_ERROR;
  if (reply != nullptr) freeReplyObject(reply);
  return ok;
}

// PING on a fresh connection; true when the answer is PONG.
bool Ping(int port, const std::string& password) {
  timeval timeout{0, 200 * 1000};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeout);
  bool ok = false;
  if (c != nullptr && c->err == 0) {
    redisSetTimeout(c, timeout);
    Authenticate(c, password);
    auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS &&
         std::string(reply->str, reply->len) == "PONG";
    if (reply != nullptr) freeReplyObject(reply);
  }
  if (c != nullptr) redisFree(c);
  return ok;
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

absl::StatusOr<int> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::string error = strerror(errno);
    close(fd);
    return absl::InternalError(error);
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::StatusOr<RedisReply> RedisCommandAt(int port, const std::string& password,
                                          const std::vector<std::string>& argv) {
  timeval timeout{5, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeout);
  if (c == nullptr || c->err != 0) {
    std::string error = c == nullptr ? "out of memory" : c->errstr;
    if (c != nullptr) redisFree(c);
    return absl::UnavailableError(error);
  }
  redisSetTimeout(c, timeout);
  if (!Authenticate(c, password)) {
    redisFree(c);
    return absl::UnauthenticatedError("redis AUTH failed");
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& arg : argv) {
    args.push_back(arg.data());
    lens.push_back(arg.size());
  }
  auto* reply = static_cast<redisReply*>(redisCommandArgv(
      c, static_cast<int>(args.size()), args.data(), lens.data()));
  if (reply == nullptr) {
    std::string error = c->errstr;
    redisFree(c);
    return absl::UnavailableError(error);
  }
  RedisReply out = CopyReply(*reply);
  freeReplyObject(reply);
  redisFree(c);
  return out;
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---------------------------------------------------------------- Subprocess

Subprocess::~Subprocess() { Terminate(kStopGrace); }

absl::Status Subprocess::Spawn(const std::vector<std::string>& argv,
                               const std::string& stdout_path,
                               const std::string& stderr_path) {
  if (pid_ > 0) return absl::FailedPreconditionError("already running");
  // Everything the child needs is prepared before fork: after fork only
  // async-signal-safe calls are allowed (the parent has gRPC threads).
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    cargv.push_back(const_cast<char*>(arg.c_str()));
  }
  cargv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    // Do not let the child inherit blocked signals from the parent.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!stdout_path.empty()) {
      const int fd =
          open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
      }
    }
    if (!stderr_path.empty()) {
      const int fd =
          open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
    }
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  pid_ = pid;
  return absl::OkStatus();
}

bool Subprocess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) last_status_ = status;
  pid_ = -1;
  return false;
}

int Subprocess::Terminate(absl::Duration grace) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + grace;
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) break;
    if (absl::Now() >= deadline) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  pid_ = -1;
  last_status_ = status;
  return status;
}

// --------------------------------------------------------------- RedisServer

bool RedisReply::is_error() const { return type == REDIS_REPLY_ERROR; }

RedisServer::RedisServer(std::string requirepass,
                         std::optional<RedisServerTls> tls)
    : requirepass_(std::move(requirepass)), tls_(std::move(tls)) {
  char tmpl[] = "/tmp/jobwire-redis-XXXXXX";
  if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
}

RedisServer::~RedisServer() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::string RedisServer::url() const {
  return absl::StrCat(tls_ ? "rediss" : "redis", "://127.0.0.1:", port_);
}

absl::Status RedisServer::Start() {
  if (dir_.empty()) return absl::InternalError("mkdtemp failed");
  if (port_ != 0) return StartOnce();
  absl::Status status;
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    port_ = *port;
    status = StartOnce();
    if (status.ok()) return status;
  }
  port_ = 0;
  return status;
}

absl::Status RedisServer::StartOnce() {
  const std::string port = absl::StrCat(port_);
  std::vector<std::string> argv = {"redis-server", "--port", port,
                                   "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", dir_,
                                   "--loglevel", "warning"};
  if (tls_) {
    argv[2] = "0";
    argv.insert(argv.end(),
                {"--tls-port", port, "--tls-cert-file", tls_->cert,
                 "--tls-key-file", tls_->key, "--tls-ca-cert-file", tls_->ca,
                 "--tls-auth-clients", tls_->auth_clients ? "yes" : "no"});
  }
  if (!requirepass_.empty()) {
    argv.insert(argv.end(), {"--requirepass", requirepass_});
  }
  absl::Status spawned =
      process_.Spawn(argv, absl::StrCat(dir_, "/redis.log"));
  if (!spawned.ok()) return spawned;
  const absl::Time deadline = absl::Now() + kStartupTimeout;
  while (absl::Now() < deadline) {
    if (!process_.Running()) {
      return absl::UnavailableError(
          absl::StrCat("redis-server exited on port ", port));
    }
    if (Ready()) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(20));
  }
  process_.Terminate(kStopGrace);
  return absl::UnavailableError(
      absl::StrCat("redis-server did not answer PING on port ", port));
}

void RedisServer::Stop() { process_.Terminate(kStopGrace); }

absl::Status RedisServer::Restart() {
  Stop();
  return Start();
}

bool RedisServer::Ready() {
  if (!tls_) return Ping(port_, requirepass_);
  absl::StatusOr<std::string> out = RedisCli({"PING"});
  return out.ok() && *out == "PONG";
}

absl::StatusOr<std::string> RedisServer::RedisCli(
    const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"redis-cli", "--tls", "--cacert", tls_->ca,
                                   "-h", "127.0.0.1", "-p",
                                   absl::StrCat(port_)};
  if (!tls_->client_cert.empty()) {
    argv.insert(argv.end(),
                {"--cert", tls_->client_cert, "--key", tls_->client_key});
  }
  if (!requirepass_.empty()) {
    argv.insert(argv.end(), {"--no-auth-warning", "-a", requirepass_});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out_path = absl::StrCat(dir_, "/redis-cli.out");
  Subprocess cli;
  absl::Status spawned = cli.Spawn(argv, out_path, "/dev/null");
  if (!spawned.ok()) return spawned;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (cli.Running()) {
    if (absl::Now() >= deadline) {
      cli.Terminate(absl::Seconds(1));
      return absl::UnavailableError("redis-cli --tls timed out");
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  std::ifstream in(out_path);
  std::string out((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  if (cli.last_status() != 0 || absl::StartsWith(out, "Could not connect")) {
    return absl::UnavailableError(absl::StrCat("redis-cli --tls: ", out));
  }
  return out;
}

absl::StatusOr<RedisReply> RedisServer::CommandArgv(
    const std::vector<std::string>& argv) {
  if (tls_) {
    absl::StatusOr<std::string> out = RedisCli(argv);
    if (!out.ok()) return out.status();
    RedisReply reply;
    reply.str = *out;
    if (absl::SimpleAtoi(*out, &reply.integer)) {
      reply.type = REDIS_REPLY_INTEGER;
    } else {
      reply.type = absl::StartsWith(*out, "ERR") || absl::StartsWith(*out, "NOAUTH") ||
                           absl::StartsWith(*out, "WRONGPASS")
                       ? REDIS_REPLY_ERROR
                       : REDIS_REPLY_STRING;
    }
    return reply;
  }
  return RedisCommandAt(port_, requirepass_, argv);
}

int64_t RedisServer::DbSize() {
  absl::StatusOr<RedisReply> reply = Command("DBSIZE");
  if (!reply.ok() || reply->type != REDIS_REPLY_INTEGER) return -1;
  return reply->integer;
}

int64_t RedisServer::UsedMemory() {
  absl::StatusOr<RedisReply> info = Command("INFO", "memory");
  if (!info.ok() || info->is_error()) return -1;
  for (absl::string_view line : absl::StrSplit(info->str, "\r\n")) {
    int64_t value;
    if (absl::ConsumePrefix(&line, "used_memory:") && absl::SimpleAtoi(line, &value)) return value;
  }
  return -1;
}

absl::Status RedisServer::FillToMaxmemory() {
  auto config_set = [this](const std::string& name, int64_t value) -> absl::Status {
    absl::StatusOr<RedisReply> reply = Command("CONFIG", "SET", name, value);
    if (!reply.ok()) return reply.status();
    if (reply->is_error()) return absl::InternalError(reply->str);
    return absl::OkStatus();
  };
  absl::StatusOr<RedisReply> policy = Command("CONFIG", "SET", "maxmemory-policy", "noeviction");
  if (!policy.ok()) return policy.status();
  const int64_t used = UsedMemory();
  if (used <= 0) return absl::InternalError("no used_memory in INFO memory");
  if (absl::Status s = config_set("maxmemory", used + 512 * 1024); !s.ok()) return s;
  const std::string filler(4096, 'x');
  bool refused = false;
  for (int i = 0; i < 10000 && !refused; ++i) {
    absl::StatusOr<RedisReply> reply = Command("SET", absl::StrCat("filler:", i), filler);
    if (!reply.ok()) return reply.status();
    if (reply->is_error()) {
      if (!absl::StartsWith(reply->str, "OOM")) return absl::InternalError(reply->str);
      refused = true;
    }
  }
  if (!refused) return absl::InternalError("filler writes were never refused");
  if (absl::Status s = config_set("maxmemory", UsedMemory() - 256 * 1024); !s.ok()) return s;
  absl::StatusOr<RedisReply> probe = Command("SET", "filler:probe", "x");
  if (!probe.ok()) return probe.status();
  if (!probe->is_error() || !absl::StartsWith(probe->str, "OOM")) {
    return absl::InternalError("a plain SET is not refused after the fill");
  }
  return absl::OkStatus();
}

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
  std::unique_ptr<v1::Broker::Stub> stub = v1::Broker::NewStub(channel_);
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
    v1::Job job;
    last = stub->GetJob(&context, request, &job);
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

std::unique_ptr<v1::Broker::Stub> BrokerProcess::NewStub() const {
  return v1::Broker::NewStub(channel_);
}

// --------------------------------------------------------------- ClaimReader

ClaimReader::ClaimReader(std::unique_ptr<v1::Broker::Stub> stub,
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

void BrokerTest::SetUp() {
  redis_ = std::make_unique<RedisServer>();
  JW_ASSERT_OK(redis_->Start());
  broker_ = std::make_unique<BrokerProcess>(redis_->port(), broker_flags_);
  JW_ASSERT_OK(broker_->Start());
  stub_ = broker_->NewStub();
}

std::unique_ptr<ClaimReader> BrokerTest::OpenClaim(
    v1::ClaimRequest request) const {
  return std::make_unique<ClaimReader>(broker_->NewStub(), std::move(request));
}

// ------------------------------------------------------------ client helpers

v1::ClaimRequest MakeClaim(std::vector<std::string> queues, int max_in_flight,
                           int64_t lease_ms, const std::string& worker_id) {
  v1::ClaimRequest request;
  for (std::string& queue : queues) request.add_queues(std::move(queue));
  request.set_max_in_flight(max_in_flight);
  request.set_lease_ms(lease_ms);
  request.set_worker_id(worker_id);
  return request;
}

v1::EnqueueRequest MakeJob(const std::string& queue, const std::string& payload,
                           int32_t priority) {
  v1::EnqueueRequest request;
  request.set_queue(queue);
  request.set_type("test");
  request.set_payload(payload);
  request.set_priority(priority);
  return request;
}

grpc::Status Enqueue(v1::Broker::StubInterface& stub,
                     const v1::EnqueueRequest& request,
                     v1::EnqueueResponse* response) {
  grpc::ClientContext context;
  SetDeadline(context, kRpcDeadline);
  return stub.Enqueue(&context, request, response);
}

grpc::Status EnqueueBatch(v1::Broker::StubInterface& stub,
                          const v1::EnqueueBatchRequest& request,
                          v1::EnqueueBatchResponse* response) {
  grpc::ClientContext context;
  SetDeadline(context, kRpcDeadline);
  return stub.EnqueueBatch(&context, request, response);
}

grpc::Status GetJob(v1::Broker::StubInterface& stub, const std::string& queue,
                    const std::string& job_id, v1::Job* job) {
  grpc::ClientContext context;
  SetDeadline(context, kRpcDeadline);
  v1::GetJobRequest request;
  request.set_queue(queue);
  request.set_job_id(job_id);
  return stub.GetJob(&context, request, job);
}

grpc::Status Ack(v1::Broker::StubInterface& stub, const std::string& queue,
                 const std::string& job_id, const std::string& lease_token,
                 const std::string& result) {
  grpc::ClientContext context;
  SetDeadline(context, kRpcDeadline);
  v1::AckRequest request;
  request.set_queue(queue);
  request.set_job_id(job_id);
  request.set_lease_token(lease_token);
  request.set_result(result);
  v1::AckResponse response;
  return stub.Ack(&context, request, &response);
}

grpc::Status Ack(v1::Broker::StubInterface& stub, const v1::ClaimedJob& claimed,
                 const std::string& result) {
  return Ack(stub, claimed.job().queue(), claimed.job().id(),
             claimed.lease_token(), result);
}

grpc::Status AckBatch(v1::Broker::StubInterface& stub,
                      const v1::AckBatchRequest& request,
                      v1::AckBatchResponse* response) {
  grpc::ClientContext context;
  SetDeadline(context, kRpcDeadline);
  return stub.AckBatch(&context, request, response);
}

grpc::Status Fail(v1::Broker::StubInterface& stub,
                  const v1::FailRequest& request, v1::FailResponse* response) {
  grpc::ClientContext context;
  SetDeadline(context, kRpcDeadline);
  return stub.Fail(&context, request, response);
}

grpc::Status ExtendLease(v1::Broker::StubInterface& stub,
                         const v1::ExtendLeaseRequest& request,
                         v1::ExtendLeaseResponse* response) {
  grpc::ClientContext context;
  SetDeadline(context, kRpcDeadline);
  return stub.ExtendLease(&context, request, response);
}

grpc::Status Cancel(v1::Broker::StubInterface& stub, const std::string& queue,
                    const std::string& job_id) {
  grpc::ClientContext context;
  SetDeadline(context, kRpcDeadline);
  v1::CancelRequest request;
  request.set_queue(queue);
  request.set_job_id(job_id);
  v1::CancelResponse response;
  return stub.Cancel(&context, request, &response);
}

v1::FailRequest MakeFail(const v1::ClaimedJob& claimed,
                         const std::string& error, bool non_retryable,
                         int64_t retry_after_ms) {
  v1::FailRequest request;
  request.set_queue(claimed.job().queue());
  request.set_job_id(claimed.job().id());
  request.set_lease_token(claimed.lease_token());
  request.set_error(error);
  request.set_non_retryable(non_retryable);
  request.set_retry_after_ms(retry_after_ms);
  return request;
}

std::string MustEnqueue(v1::Broker::StubInterface& stub,
                        const v1::EnqueueRequest& request) {
  v1::EnqueueResponse response;
  grpc::Status status = Enqueue(stub, request, &response);
  EXPECT_TRUE(status.ok()) << "Enqueue on " << request.queue() << ": "
                           << StatusText(status);
  if (!status.ok()) return "";
  EXPECT_FALSE(response.job_id().empty());
  return response.job_id();
}

}  // namespace jobwire::testing
