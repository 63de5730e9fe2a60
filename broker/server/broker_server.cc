#include "broker/server/broker_server.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "broker/base/logging.h"
#include "broker/server/transport_security.h"
#include "broker/service/completion_queue_poller.h"
#include "broker/service/rpc_metrics_interceptor.h"

namespace jobwire::server {
namespace {

store::StoreOptions StoreOptionsFrom(const BrokerConfig& c) {
  store::StoreOptions o;
  o.key_prefix = c.key_prefix;
  o.dedup_window_ms = c.dedup_window_ms;
  o.completed_retention_ms = c.completed_retention_ms;
  o.dead_retention_ms = c.dead_retention_ms;
  o.dead_max_per_queue = c.dead_max_per_queue;
  o.idle_queue_ttl_ms = c.idle_queue_ttl_ms;
  return o;
}

core::LifecycleDefaults DefaultsFrom(const BrokerConfig& c) {
  core::LifecycleDefaults d;
  d.max_attempts = c.default_max_attempts;
  d.backoff_base_ms = c.backoff_base_ms;
  d.backoff_max_ms = c.backoff_max_ms;
  d.lease_ms = c.default_lease_ms;
  d.job_timeout_ms = c.default_job_timeout_ms;
  return d;
}

core::StreamLimits StreamLimitsFrom(const BrokerConfig& c) {
  return core::StreamLimits{c.max_claim_streams, c.max_claim_streams_per_peer};
}

service::ServiceOptions ServiceOptionsFrom(const BrokerConfig& c) {
  service::ServiceOptions o;
  o.limits = service::Limits{c.max_payload_bytes, c.backoff_base_ms, c.completed_retention_max_ms};
  if (c.max_stream_age_ms > 0) o.max_stream_age = absl::Milliseconds(c.max_stream_age_ms);
  o.subscribe_buffer_events = c.subscribe_buffer_events;
  return o;
}

// The TLS context of rediss:// connections (null for redis://), and the
// startup log line saying how Redis' certificate is checked.
absl::StatusOr<std::shared_ptr<const store::RedisTlsContext>> MakeRedisTls(
    const BrokerConfig& c, const store::RedisAddress& address) {
  if (!address.tls) return std::shared_ptr<const store::RedisTlsContext>();
  store::RedisTlsOptions o;
  o.ca_file = c.redis_tls_ca;
  o.cert_file = c.redis_tls_cert;
  o.key_file = c.redis_tls_key;
  o.server_name = c.redis_tls_server_name;
  o.insecure_skip_verify = c.redis_tls_insecure_skip_verify;
  absl::StatusOr<std::shared_ptr<const store::RedisTlsContext>> tls =
      store::RedisTlsContext::Create(o);
  if (!tls.ok()) return tls.status();
  if (o.insecure_skip_verify) {
    base::Log(base::LogLevel::kWarning,
              "redis TLS certificate verification is OFF (--redis_tls_insecure_skip_verify): "
              "anyone on the path can impersonate Redis",
              {{"redis", address.ToString()}});
  } else {
    base::Log(base::LogLevel::kInfo, "redis TLS",
              {{"ca", o.ca_file.empty() ? "(system default)" : o.ca_file},
               {"client_cert", o.cert_file.empty() ? "(none)" : o.cert_file},
               {"server_name", o.server_name.empty() ? address.host : o.server_name}});
  }
  return tls;
}

}  // namespace

BrokerServer::BrokerServer(const BrokerConfig& config, std::unique_ptr<base::EventLoop> loop,
                           std::unique_ptr<RedisConnections> redis,
                           std::unique_ptr<service::Authorizer> authorizer,
                           std::unique_ptr<ReloadableTlsCredentials> tls)
    : loop_(std::move(loop)),
      redis_(std::move(redis)),
      scripts_(redis_->commands()),
      store_(redis_->commands(), &scripts_, StoreOptionsFrom(config)),
      admin_store_(redis_->commands(), &scripts_, config.key_prefix),
      dependency_store_(redis_->commands(), &scripts_, config.key_prefix),
      dependency_links_(&dependency_store_),
      partitions_(&store_),
      dispatcher_(loop_.get(), &store_, redis_->subscriptions(), &partitions_, &metrics_,
                  StreamLimitsFrom(config)),
      events_(loop_.get(), &store_, redis_->subscriptions()),
      watcher_(loop_.get(), &store_, &events_, config.max_wait_streams),
      feed_(&events_, &partitions_, &store_, config.max_subscriptions),
      lifecycle_(&store_, &partitions_, &dispatcher_, &dependency_links_, &metrics_,
                 DefaultsFrom(config)),
      reaper_(core::LeaseReaperParams{loop_.get(), &store_, &admin_store_, &metrics_,
                                      &dependency_links_}),
      stats_refresher_(core::QueueStatsRefresherParams{loop_.get(), &queue_admin_, &metrics_}),
      redis_probe_(core::RedisProbeParams{loop_.get(), &admin_store_, &metrics_}),
      schedule_store_(&scripts_, config.key_prefix),
      schedule_admin_(&schedule_store_),
      schedule_runner_(core::ScheduleRunnerParams{loop_.get(), &schedule_store_,
                                                  redis_->subscriptions(), &lifecycle_}),
      worker_reports_(redis_->commands(), config.key_prefix),
      workers_(core::WorkerRegistryParams{
          loop_.get(), &dispatcher_, &worker_reports_,
          absl::Milliseconds(config.worker_report_interval_ms)}),
      authorizer_(std::move(authorizer)),
      service_(&lifecycle_, &dispatcher_, &watcher_, &feed_, &metrics_, authorizer_.get(),
               ServiceOptionsFrom(config)),
      queue_admin_(&store_, &admin_store_, &partitions_, &dependency_links_),
      admin_service_(&queue_admin_, &schedule_admin_, &workers_, authorizer_.get(),
                     ServiceOptionsFrom(config).limits),
      tls_(std::move(tls)) {}

namespace {

// This machine's host name (in Kubernetes, the pod's name), or "localhost".
std::string ThisHostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == 0) return "localhost";
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<BrokerServer>> BrokerServer::Start(const BrokerConfig& config,
                                                                  const std::string& redis_url) {
  absl::StatusOr<store::RedisAddress> address = store::ParseRedisUrl(redis_url);
  if (!address.ok()) return address.status();
  absl::StatusOr<std::shared_ptr<const store::RedisTlsContext>> redis_tls = MakeRedisTls(config,
                                                                                       *address);
  if (!redis_tls.ok()) return redis_tls.status();
  // What the ConfigReloader starts from: the files' content as loaded here.
  ConfigReloaderParams reload;
  reload.interval = config.reload_interval_ms == 0 ? absl::InfiniteDuration()
                                                   : absl::Milliseconds(config.reload_interval_ms);
  std::unique_ptr<ReloadableTlsCredentials> tls;
  if (!config.tls_cert.empty()) {
    absl::StatusOr<TlsPem> pem = ReadTlsPem(config);
    if (!pem.ok()) return pem.status();
    absl::StatusOr<std::unique_ptr<ReloadableTlsCredentials>> made =
        ReloadableTlsCredentials::Create(*pem);
    if (!made.ok()) return made.status();
    tls = *std::move(made);
    reload.tls_cert = config.tls_cert;
    reload.tls_key = config.tls_key;
    reload.tls_client_ca = config.tls_client_ca;
    reload.tls_pem = *std::move(pem);
  }
  auto authorizer = std::make_unique<service::Authorizer>();
  if (!config.auth_tokens_file.empty()) {
    absl::StatusOr<std::unique_ptr<service::Authorizer>> loaded =
        service::Authorizer::FromFile(config.auth_tokens_file, &reload.tokens_json);
    if (!loaded.ok()) return loaded.status();
    reload.tokens_file = config.auth_tokens_file;
    authorizer = std::move(*loaded);
    base::Log(base::LogLevel::kInfo, "bearer token authentication on",
              {{"tokens", authorizer->token_count()}});
  }
  // The connections are made before the server: its members run on them.
  auto loop = std::make_unique<base::EventLoop>();
  absl::StatusOr<std::unique_ptr<RedisConnections>> redis = RedisConnections::Create(
      loop.get(), config.redis_mode, config.redis_sentinel_master, config.redis_sentinel_password,
      *address, *redis_tls);
  if (!redis.ok()) return redis.status();
  std::unique_ptr<BrokerServer> s(new BrokerServer(config, std::move(loop), *std::move(redis),
                                                   std::move(authorizer), std::move(tls)));
  if (s->authorizer_->enabled()) reload.authorizer = s->authorizer_.get();
  reload.tls = s->tls_.get();
  s->reloader_ = std::make_unique<ConfigReloader>(std::move(reload));

  s->redis_->SetOnConnected([raw = s.get()] {
    raw->store_.CheckRedisSettings();
    raw->dispatcher_.OnRedisReconnected();
    raw->metrics_.SetRedisUp(true);
    raw->health_.SetRedisUp(true);
  });
  s->redis_->SetOnDisconnected([raw = s.get()] {
    raw->metrics_.SetRedisUp(false);
    raw->health_.SetRedisUp(false);
  });
  s->dispatcher_.SetOnLeaseGranted(
      [raw = s.get()](absl::Time expiry) { raw->reaper_.OnLeaseGranted(expiry); });
  s->dispatcher_.SetOnDependencyNews(
      [raw = s.get()](const std::string& queue) { raw->dependency_links_.Drain(queue); });
  s->loop_->Start();
  s->redis_->Start();
  s->reaper_.Start();
  s->stats_refresher_.Start();
  s->redis_probe_.Start();
  s->schedule_runner_.Start();

  // Every service on one completion queue that one thread polls: with no
  // service on gRPC's callback or synchronous API, no gRPC thread polls
  // beside it (docs/architecture.md, "Threads"). grpc.health.v1 (driven by
  // health_) and server reflection (v1 and v1alpha), for probes and grpcurl.
  grpc::EnableDefaultHealthCheckService(false);
  s->reflection_ = std::make_unique<ReflectionService>(std::vector<std::string>{
      v1::BrokerService::service_full_name(), v1::AdminService::service_full_name(),
      grpc::health::v1::Health::service_full_name(),
      grpc::reflection::v1::ServerReflection::service_full_name(),
      grpc::reflection::v1alpha::ServerReflection::service_full_name()});
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen,
                           s->tls_ != nullptr ? s->tls_->credentials()
                                              : grpc::InsecureServerCredentials(),
                           &s->port_);
  builder.RegisterService(s->service_.grpc_service());
  builder.RegisterService(s->admin_service_.grpc_service());
  builder.RegisterService(s->health_service_.grpc_service());
  for (grpc::Service* reflection : s->reflection_->grpc_services()) {
    builder.RegisterService(reflection);
  }
  s->poller_ = std::make_unique<service::CompletionQueuePoller>(builder.AddCompletionQueue());
  builder.experimental().SetInterceptorCreators(service::MakeRpcMetricsInterceptors(&s->metrics_));
  // Room for a batch of jobs; each payload is limited separately.
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::max<int64_t>(64 << 20, config.max_payload_bytes + (1 << 20))));
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    if (s->server_ != nullptr) s->server_->Shutdown();
    s->server_.reset();
    s->poller_->Stop();
    s->reaper_.Stop();
    s->stats_refresher_.Stop();
    s->redis_probe_.Stop();
    s->schedule_runner_.Stop();
    s->loop_->Stop();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen));
  }
  s->service_.Serve(s->poller_->cq());
  s->admin_service_.Serve(s->poller_->cq());
  s->health_service_.Serve(s->poller_->cq());
  s->reflection_->Serve(s->poller_->cq());
  s->poller_->Start();
  s->health_.Attach(&s->health_service_);
  // Named once the port is known (listen may ask for any free one).
  s->workers_.Start(absl::StrCat(ThisHostName(), ":", s->port_));
  if (!config.health_listen.empty()) {
    // No Broker or Admin service here, and no interceptors: a probe port.
    // Its own queue and thread (a queue serves one server); that thread
    // polls beside the main one, a cost of this option.
    grpc::ServerBuilder health_builder;
    health_builder.AddListeningPort(config.health_listen, grpc::InsecureServerCredentials(),
                                    &s->health_port_);
    health_builder.RegisterService(s->probe_health_service_.grpc_service());
    s->probe_poller_ =
        std::make_unique<service::CompletionQueuePoller>(health_builder.AddCompletionQueue());
    s->health_server_ = health_builder.BuildAndStart();
    if (s->health_server_ == nullptr || s->health_port_ == 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", config.health_listen, " (--health_listen)"));
    }
    s->probe_health_service_.Serve(s->probe_poller_->cq());
    s->probe_poller_->Start();
    s->health_.Attach(&s->probe_health_service_);
    base::Log(base::LogLevel::kInfo, "health listening",
              {{"listen", config.health_listen}, {"tls", "off"}});
  }
  WarnIfExposed(config);
  s->StartMetricsEndpoint(config.metrics_listen);
  s->reloader_->Start();
  return s;
}

void BrokerServer::Reload() { reloader_->Reload(); }

BrokerServer::~BrokerServer() { Shutdown(absl::ZeroDuration()); }

void BrokerServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  reloader_->Stop();
  if (server_ != nullptr) {
    // Report NOT_SERVING, end Claim, WaitJob and Subscribe streams at once (clients reconnect
    // elsewhere), let unary calls finish within the grace period, then close
    // every connection: gRPC's own deadline would also wait out idle client
    // connections.
    health_.SetDraining();
    dispatcher_.Shutdown();
    workers_.Stop();  // this replica's report goes with its streams
    watcher_.Shutdown();
    feed_.Shutdown();
    const absl::Time deadline = absl::Now() + grace;
    while (absl::Now() < deadline &&
           (service_.calls_in_flight() > 0 || admin_service_.calls_in_flight() > 0 ||
            dispatcher_.open_sessions() > 0)) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    server_->Shutdown(absl::ToChronoTime(absl::Now()));
    server_->Wait();
    poller_->Stop();  // after the server: the calls it cancelled end on the queue
    base::Log(base::LogLevel::kInfo, "grpc server stopped");
  }
  // Last, so that probes see NOT_SERVING for the whole drain.
  if (health_server_ != nullptr) {
    health_server_->Shutdown(absl::ToChronoTime(absl::Now()));
    health_server_->Wait();
    probe_poller_->Stop();
  }
  exposer_.reset();
  reaper_.Stop();
  stats_refresher_.Stop();
  redis_probe_.Stop();
  schedule_runner_.Stop();
  loop_->Stop();
}

void BrokerServer::StartMetricsEndpoint(const std::string& listen) {
  if (listen.empty()) return;
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen);
    for (const auto& collectable : metrics_.collectables()) {
      exposer_->RegisterCollectable(collectable);
    }
    base::Log(base::LogLevel::kInfo, "metrics listening", {{"listen", listen}, {"path", "/metrics"}});
  } catch (const std::exception& e) {  // civetweb throws when it cannot bind
    exposer_.reset();
    base::Log(base::LogLevel::kError, "cannot serve metrics",
              {{"listen", listen}, {"error", e.what()}});
  }
}

}  // namespace jobwire::server
