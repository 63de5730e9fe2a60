// jobwire-broker: the jobwire job-queue broker. See README.md.
#include <signal.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "broker/base/build_info.h"
#include "broker/base/logging.h"
#include "broker/server/broker_config.h"
#include "broker/server/broker_server.h"
#include "broker/server/embedded_redis.h"
#include "broker/server/grpc_logging.h"
#include "broker/store/redis_client.h"

using jobwire::base::Log;
using jobwire::base::LogLevel;

namespace {

// The Redis URL without its password, for the log.
std::string RedactedRedisUrl(const std::string& url) {
  absl::StatusOr<jobwire::store::RedisAddress> address = jobwire::store::ParseRedisUrl(url);
  return address.ok() ? address->ToString() : "(unparsable)";
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<jobwire::server::BrokerConfig> config = jobwire::server::LoadConfig(argc, argv);
  if (!config.ok()) {
    std::fprintf(stderr, "jobwire-broker: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  LogLevel level;
  if (!jobwire::base::ParseLogLevel(config->log_level, &level)) {
    std::fprintf(stderr, "jobwire-broker: --log_level must be debug, info, warning or error\n");
    return 2;
  }
  jobwire::base::SetLogLevel(level);
  jobwire::server::RouteGrpcLogs();

  // absl::Mutex's deadlock detection (on in Debian's abseil build) keeps a
  // global lock-order graph updated on every lock and Mutex destruction:
  // about 5% of the broker's CPU under load. Lock order is checked by the
  // thread annotations at compile time instead.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  // A peer that closes a socket mid-write (Redis killed or restarted, a
  // client gone) must surface as EPIPE on that connection, not kill the
  // process: libevent writes Redis sockets with writev(2), which raises
  // SIGPIPE.
  signal(SIGPIPE, SIG_IGN);

  // Signals are taken by sigwait below; threads started later inherit the
  // mask. SIGHUP reloads the token file and the TLS files; the others stop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<jobwire::server::EmbeddedRedis> embedded;
  std::string redis_url = config->redis_url;
  if (redis_url.empty()) {
    auto started = jobwire::server::EmbeddedRedis::Start(config->redis_server_path, config->data_dir);
    if (!started.ok()) {
      Log(LogLevel::kError, "cannot start embedded redis", {{"error", started.status().ToString()}});
      return 1;
    }
    embedded = std::move(*started);
    redis_url = embedded->url();
  }

  auto server = jobwire::server::BrokerServer::Start(*config, redis_url);
  if (!server.ok()) {
    Log(LogLevel::kError, "cannot start broker", {{"error", server.status().ToString()}});
    return 1;
  }
  Log(LogLevel::kInfo, "jobwire broker listening",
      {{"version", std::string(jobwire::base::Version())},
       {"commit", std::string(jobwire::base::GitCommit())},
       {"listen", config->listen},
       {"port", (*server)->port()},
       {"tls", config->tls_cert.empty()        ? "off"
               : config->tls_client_ca.empty() ? "on"
                                               : "mutual"},
       {"redis", embedded ? absl::StrCat(redis_url, " (embedded, data in ", config->data_dir, ")")
                          : RedactedRedisUrl(redis_url)}});

  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    Log(LogLevel::kInfo, "reload requested", {{"signal", "SIGHUP"}});
    (*server)->Reload();
  }
  Log(LogLevel::kInfo, "shutting down", {{"signal", sig}});
  (*server)->Shutdown(absl::Milliseconds(config->shutdown_grace_ms));
  server->reset();
  embedded.reset();
  Log(LogLevel::kInfo, "stopped");
  return 0;
}
