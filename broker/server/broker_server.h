// BrokerServer: one running broker. Owns, in start order, the metrics, the
// event loop, the Redis connections (commands and pub/sub), the stores, the
// dispatcher, the lifecycle layer, the background loops (lease reaper, queue
// stats refresher), the gRPC server (with health and reflection), the
// metrics HTTP endpoint and the ConfigReloader (token file and TLS files).
#ifndef JOBWIRE_BROKER_SERVER_BROKER_SERVER_H_
#define JOBWIRE_BROKER_SERVER_BROKER_SERVER_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <prometheus/exposer.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/dependency_links.h"
#include "broker/core/dispatcher.h"
#include "broker/core/event_feed.h"
#include "broker/core/job_lifecycle.h"
#include "broker/core/job_watcher.h"
#include "broker/core/lease_reaper.h"
#include "broker/core/metrics.h"
#include "broker/core/queue_admin.h"
#include "broker/core/queue_event_hub.h"
#include "broker/core/queue_stats_refresher.h"
#include "broker/core/worker_registry.h"
#include "broker/core/redis_probe.h"
#include "broker/core/schedule_admin.h"
#include "broker/core/schedule_runner.h"
#include "broker/server/broker_config.h"
#include "broker/server/config_reloader.h"
#include "broker/server/health_reporter.h"
#include "broker/server/health_service.h"
#include "broker/server/reflection_service.h"
#include "broker/server/reloadable_tls_credentials.h"
#include "broker/service/admin_service.h"
#include "broker/service/authorizer.h"
#include "broker/service/broker_service.h"
#include "broker/service/completion_queue_poller.h"
#include "broker/store/admin_store.h"
#include "broker/store/dependency_store.h"
#include "broker/store/worker_report_store.h"
#include "broker/store/job_store.h"
#include "broker/store/redis_client.h"
#include "broker/store/script_runner.h"
#include "broker/server/redis_connections.h"

namespace jobwire::server {

// Thread safety: Start, Shutdown and the destructor from one thread.
class BrokerServer {
 public:
  // Connects to `redis_url` (in the background: the broker answers
  // UNAVAILABLE until Redis is reachable) and listens on config.listen, and
  // serves /metrics on config.metrics_listen unless it is empty (a metrics
  // address that cannot be bound is logged and skipped: metrics never stop
  // the broker). The listener speaks TLS (or mutual TLS) as config's tls_*
  // fields say, and warns at startup when it is exposed beyond loopback
  // without authentication or without TLS. INVALID_ARGUMENT for a bad URL, a
  // file without PEM or TLS files OpenSSL cannot use (CheckTlsPem: a key
  // that does not match its certificate), NOT_FOUND / PERMISSION_DENIED /
  // INTERNAL for a TLS file that cannot be read; INVALID_ARGUMENT for a URL with several hosts
  // or Redis TLS files (config.redis_tls_*, used with rediss://) that
  // OpenSSL cannot load, UNAVAILABLE when the gRPC port (or the
  // plaintext health-only port, config.health_listen) cannot be bound.
  // With config.redis_mode "sentinel" the URL's hosts are the sentinels:
  // both Redis connections connect to the master they name (password,
  // user, db and TLS from the URL), and reconnect to the new master when
  // one announces a switch (calls in flight then fail with UNAVAILABLE).
  // The token file and the TLS files are reloaded when they change
  // (config.reload_interval_ms) and on Reload().
  static absl::StatusOr<std::unique_ptr<BrokerServer>> Start(const BrokerConfig& config,
                                                             const std::string& redis_url);
  ~BrokerServer();  // Shuts down with no grace if Shutdown was not called.

  // Drains: reports NOT_SERVING, stops handing out jobs, ends Claim streams
  // with UNAVAILABLE, lets unary calls in flight finish within `grace`,
  // closes every connection, then stops the background work. Idempotent.
  void Shutdown(absl::Duration grace);

  // Reloads the token file and the TLS files now, in the background (on
  // SIGHUP); see ConfigReloader. Thread-safe.
  void Reload();

  int port() const { return port_; }

 private:
  BrokerServer(const BrokerConfig& config, std::unique_ptr<base::EventLoop> loop,
               std::unique_ptr<RedisConnections> redis,
               std::unique_ptr<service::Authorizer> authorizer,
               std::unique_ptr<ReloadableTlsCredentials> tls);
  // Serves metrics_ on `listen` (host:port) at /metrics; logs and skips
  // when it cannot bind. No-op when `listen` is empty.
  void StartMetricsEndpoint(const std::string& listen);

  core::Metrics metrics_;
  const std::unique_ptr<base::EventLoop> loop_;
  // For --redis_mode; destroyed after everything that sends through it.
  const std::unique_ptr<RedisConnections> redis_;
  store::ScriptRunner scripts_;
  store::JobStore store_;
  store::AdminStore admin_store_;
  store::DependencyStore dependency_store_;
  core::DependencyLinks dependency_links_;
  core::QueuePartitions partitions_;
  core::Dispatcher dispatcher_;
  core::QueueEventHub events_;
  core::JobWatcher watcher_;
  core::EventFeed feed_;
  core::JobLifecycle lifecycle_;
  core::LeaseReaper reaper_;
  core::QueueStatsRefresher stats_refresher_;
  core::RedisProbe redis_probe_;
  store::ScheduleStore schedule_store_;
  core::ScheduleAdmin schedule_admin_;
  core::ScheduleRunner schedule_runner_;
  store::WorkerReportStore worker_reports_;
  core::WorkerRegistry workers_;
  const std::unique_ptr<service::Authorizer> authorizer_;
  service::BrokerService service_;
  core::QueueAdmin queue_admin_;
  service::AdminService admin_service_;
  HealthReporter health_;
  // Served on poller_'s queue, with service_ and admin_service_.
  HealthService health_service_;
  std::unique_ptr<ReflectionService> reflection_;
  // The health-only listener's (config.health_listen).
  HealthService probe_health_service_;
  // Null without TLS; destroyed after server_, whose gRPC threads read it.
  const std::unique_ptr<ReloadableTlsCredentials> tls_;
  // Polls the queue service_ is served on; before server_, which must be
  // destroyed first.
  std::unique_ptr<service::CompletionQueuePoller> poller_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<service::CompletionQueuePoller> probe_poller_;  // before health_server_
  std::unique_ptr<grpc::Server> health_server_;  // config.health_listen
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  int health_port_ = 0;
  bool shut_down_ = false;
  // Last: stopped before what it reloads (authorizer_, tls_) is destroyed.
  std::unique_ptr<ConfigReloader> reloader_;
};

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_BROKER_SERVER_H_
