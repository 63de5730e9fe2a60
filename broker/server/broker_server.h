// BrokerServer: one running broker. Owns, in start order, the event loop,
// the Redis connections (commands and pub/sub), the store, the dispatcher,
// the lifecycle layer, the lease reaper and the gRPC server.
#ifndef JOBWIRE_BROKER_SERVER_BROKER_SERVER_H_
#define JOBWIRE_BROKER_SERVER_BROKER_SERVER_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/dispatcher.h"
#include "broker/core/job_lifecycle.h"
#include "broker/core/lease_reaper.h"
#include "broker/core/queue_admin.h"
#include "broker/server/broker_config.h"
#include "broker/service/admin_service.h"
#include "broker/service/broker_service.h"
#include "broker/store/admin_store.h"
#include "broker/store/job_store.h"
#include "broker/store/redis_client.h"
#include "broker/store/script_runner.h"

namespace jobwire::server {

// Thread safety: Start, Shutdown and the destructor from one thread.
class BrokerServer {
 public:
  // Connects to `redis_url` (in the background: the broker answers
  // UNAVAILABLE until Redis is reachable) and listens on config.listen.
  // INVALID_ARGUMENT for a bad URL, UNAVAILABLE when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<BrokerServer>> Start(const BrokerConfig& config,
                                                             const std::string& redis_url);
  ~BrokerServer();  // Shuts down with no grace if Shutdown was not called.

  // Ends Claim streams with UNAVAILABLE, lets unary calls in flight finish
  // within `grace`, closes every connection, then stops the background work.
  // Idempotent.
  void Shutdown(absl::Duration grace);

  int port() const { return port_; }

 private:
  BrokerServer(const BrokerConfig& config, const store::RedisAddress& address);

  base::EventLoop loop_;
  store::RedisClient commands_;
  store::RedisClient subscriber_;
  store::ScriptRunner scripts_;
  store::JobStore store_;
  core::Dispatcher dispatcher_;
  core::JobLifecycle lifecycle_;
  core::LeaseReaper reaper_;
  service::BrokerService service_;
  store::AdminStore admin_store_;
  core::QueueAdmin queue_admin_;
  service::AdminService admin_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_BROKER_SERVER_H_
