#include "broker/core/worker_registry.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "broker/base/logging.h"

namespace jobwire::core {

WorkerRegistry::WorkerRegistry(WorkerRegistryParams params) : params_(std::move(params)) {}

void WorkerRegistry::Start(std::string broker) {
  {
    absl::MutexLock lock(&mu_);
    broker_ = std::move(broker);
  }
  Schedule(absl::ZeroDuration());
}

std::string WorkerRegistry::broker() const {
  absl::MutexLock lock(&mu_);
  return broker_;
}

void WorkerRegistry::Stop() {
  const std::string name = broker();
  if (stopped_.exchange(true) || name.empty()) return;
  auto removed = std::make_shared<absl::Notification>();
  params_.store->Remove({name}, [removed](absl::Status) { removed->Notify(); });
  removed->WaitForNotificationWithTimeout(absl::Seconds(1));
}

void WorkerRegistry::Schedule(absl::Duration delay) {
  params_.loop->RunAfter(delay, [this] {
    if (!stopped_) Exec();
  });
}

void WorkerRegistry::Exec() {
  Report([this](v1::ListWorkersResponse report) {
    // Checked on the loop thread: a Stop after this point sends its HDEL
    // behind this HSET, on the same connection.
    if (stopped_) return;
    auto next = [this](absl::Status written) {
      if (!written.ok()) {
        base::Log(base::LogLevel::kDebug, "worker report not written",
                  {{"error", written.ToString()}});
      }
      Schedule(params_.interval);
    };
    if (report.brokers(0).streams() > 0) {
      reported_ = true;
      params_.store->Put(broker(), report.SerializeAsString(), std::move(next));
    } else if (reported_) {
      // No stream left: the report goes (a replica without streams writes
      // nothing to Redis).
      params_.store->Remove({broker()}, [this, next = std::move(next)](absl::Status removed) {
        reported_ = !removed.ok();
        next(removed);
      });
    } else {
      Schedule(params_.interval);
    }
  });
}

void WorkerRegistry::Report(std::function<void(v1::ListWorkersResponse)> done) const {
  params_.dispatcher->Streams([this, done = std::move(done)](std::vector<v1::WorkerStream> streams) {
    const std::string name = broker();
    const absl::Time now = absl::Now();
    v1::ListWorkersResponse report;
    v1::BrokerReport* broker = report.add_brokers();
    broker->set_broker(name);
    broker->set_reported_at_ms(absl::ToUnixMillis(now));
    broker->set_expires_at_ms(absl::ToUnixMillis(now + 3 * params_.interval));
    broker->set_streams(static_cast<int32_t>(streams.size()));
    broker->set_truncated(static_cast<int>(streams.size()) > params_.max_streams);
    for (v1::WorkerStream& stream : streams) {
      if (report.streams_size() == params_.max_streams) break;
      stream.set_broker(name);
      *report.add_streams() = std::move(stream);
    }
    done(std::move(report));
  });
}

void WorkerRegistry::List(store::Callback<v1::ListWorkersResponse> done) const {
  params_.store->ReadAll([this, done = std::move(done)](
                             absl::StatusOr<std::vector<std::pair<std::string, std::string>>> all) {
    if (!all.ok()) return done(all.status());
    const int64_t now_ms = absl::ToUnixMillis(absl::Now());
    const std::string self = broker();
    std::map<std::string, v1::ListWorkersResponse> by_broker;
    std::vector<std::string> stale;
    for (auto& [name, bytes] : *all) {
      if (name == self) continue;  // this replica's: live below
      v1::ListWorkersResponse report;
      if (!report.ParseFromString(bytes) || report.brokers_size() != 1 ||
          report.brokers(0).expires_at_ms() < now_ms) {
        stale.push_back(name);
        continue;
      }
      by_broker[name] = std::move(report);
    }
    if (!stale.empty()) params_.store->Remove(std::move(stale), [](absl::Status) {});
    Report([by_broker = std::move(by_broker), done = std::move(done)](
               v1::ListWorkersResponse own) mutable {
      if (own.brokers(0).streams() > 0) by_broker[own.brokers(0).broker()] = std::move(own);
      v1::ListWorkersResponse out;
      for (auto& [name, report] : by_broker) {
        for (v1::WorkerStream& stream : *report.mutable_streams()) {
          *out.add_streams() = std::move(stream);
        }
        *out.add_brokers() = std::move(*report.mutable_brokers(0));
      }
      done(std::move(out));
    });
  });
}

}  // namespace jobwire::core
