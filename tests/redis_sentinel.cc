#include "tests/redis_sentinel.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace jobwire::testing {

struct RedisSentinelGroup::Process {
  int port = 0;
  std::string dir;
  Subprocess process;
  bool killed = false;

  ~Process() {
    process.Terminate(absl::Seconds(5));
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
};

RedisSentinelGroup::RedisSentinelGroup(int replicas, int sentinels, std::string master_name,
                                       absl::Duration down_after)
    : replicas_(replicas),
      sentinels_(sentinels),
      master_name_(std::move(master_name)),
      down_after_(down_after) {}

RedisSentinelGroup::~RedisSentinelGroup() = default;

std::string RedisSentinelGroup::sentinel_url() const {
  std::vector<std::string> hosts;
  for (const auto& s : sentinel_) hosts.push_back(absl::StrCat("127.0.0.1:", s->port));
  return absl::StrCat("redis://", absl::StrJoin(hosts, ","));
}

std::vector<int> RedisSentinelGroup::sentinel_ports() const {
  std::vector<int> out;
  for (const auto& s : sentinel_) out.push_back(s->port);
  return out;
}

std::vector<int> RedisSentinelGroup::data_ports() const {
  std::vector<int> out;
  for (const auto& d : data_) out.push_back(d->port);
  return out;
}

absl::StatusOr<RedisReply> RedisSentinelGroup::CommandAt(int port,
                                                         const std::vector<std::string>& argv) {
  return RedisCommandAt(port, "", argv);
}

// Starts one process: the master (master_port 0), a replica of master_port,
// or (sentinel) a sentinel monitoring master_port. Retries on a taken port.
absl::StatusOr<std::unique_ptr<RedisSentinelGroup::Process>> RedisSentinelGroup::Spawn(
    bool sentinel, int master_port) {
  absl::Status last = absl::UnavailableError("not started");
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto p = std::make_unique<Process>();
    char dir_template[] = "/tmp/jobwire-sentinel-XXXXXX";
    if (mkdtemp(dir_template) == nullptr) return absl::InternalError("mkdtemp failed");
    p->dir = dir_template;
    absl::StatusOr<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    p->port = *port;
    std::vector<std::string> argv;
    if (sentinel) {
      // A sentinel rewrites its configuration file: it must be its own.
      const std::string conf = p->dir + "/sentinel.conf";
      std::ofstream(conf) << "port " << p->port << "\nbind 127.0.0.1\ndir " << p->dir
                          << "\nsentinel monitor " << master_name_ << " 127.0.0.1 " << master_port
                          << " " << (sentinels_ / 2 + 1) << "\nsentinel down-after-milliseconds "
                          << master_name_ << " " << absl::ToInt64Milliseconds(down_after_)
                          << "\nsentinel failover-timeout " << master_name_
                          << " 10000\nsentinel parallel-syncs " << master_name_ << " 1\n";
      argv = {"redis-server", conf, "--sentinel", "--loglevel", "warning"};
    } else {
      argv = {"redis-server", "--port", absl::StrCat(p->port), "--bind", "127.0.0.1", "--save",
              "", "--appendonly", "no", "--dir", p->dir, "--loglevel", "warning"};
      if (master_port != 0) {
        argv.insert(argv.end(), {"--replicaof", "127.0.0.1", absl::StrCat(master_port)});
      }
    }
    absl::Status spawned = p->process.Spawn(argv, p->dir + "/redis.log");
    if (!spawned.ok()) return spawned;
    last = WaitForPong(p->process, p->port, sentinel ? "sentinel" : "redis-server");
    if (last.ok()) return p;
  }
  return last;
}

absl::Status RedisSentinelGroup::Start() {
  for (int i = 0; i <= replicas_; ++i) {
    absl::StatusOr<std::unique_ptr<Process>> p = Spawn(false, i == 0 ? 0 : data_[0]->port);
    if (!p.ok()) return p.status();
    data_.push_back(*std::move(p));
  }
  for (int i = 0; i < sentinels_; ++i) {
    absl::StatusOr<std::unique_ptr<Process>> p = Spawn(true, data_[0]->port);
    if (!p.ok()) return p.status();
    sentinel_.push_back(*std::move(p));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    bool ready = true;
    for (const auto& s : sentinel_) ready = ready && SentinelReady(s->port);
    if (ready) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::UnavailableError("the sentinels did not discover each other and the replicas");
}

// The sentinel names the master and knows every replica and other sentinel.
bool RedisSentinelGroup::SentinelReady(int port) {
  absl::StatusOr<RedisReply> master = CommandAt(port, {"SENTINEL", "MASTER", master_name_});
  if (!master.ok() || master->is_error()) return false;
  int64_t replicas = -1, sentinels = -1;
  for (size_t i = 0; i + 1 < master->elements.size(); i += 2) {
    const std::string& key = master->elements[i].str;
    const std::string& value = master->elements[i + 1].str;
    if (key == "num-slaves" && !absl::SimpleAtoi(value, &replicas)) return false;
    if (key == "num-other-sentinels" && !absl::SimpleAtoi(value, &sentinels)) return false;
  }
  return replicas == replicas_ && sentinels == sentinels_ - 1;
}

absl::StatusOr<int> RedisSentinelGroup::MasterPort(int sentinel_port) {
  absl::StatusOr<RedisReply> addr =
      CommandAt(sentinel_port, {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_name_});
  if (!addr.ok()) return addr.status();
  int port = 0;
  if (addr->elements.size() != 2 || !absl::SimpleAtoi(addr->elements[1].str, &port)) {
    return absl::NotFoundError("the sentinel names no master");
  }
  return port;
}

absl::StatusOr<int> RedisSentinelGroup::WaitMaster(int not_port, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int agreed = 0;
    bool same = true;
    for (const auto& s : sentinel_) {
      if (s->killed) continue;
      absl::StatusOr<int> port = MasterPort(s->port);
      if (!port.ok() || (agreed != 0 && *port != agreed)) {
        same = false;
        break;
      }
      agreed = *port;
    }
    if (same && agreed != 0 && agreed != not_port) {
      absl::StatusOr<RedisReply> role = CommandAt(agreed, {"ROLE"});
      if (role.ok() && !role->elements.empty() && role->elements[0].str == "master") return agreed;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::UnavailableError("the sentinels did not agree on a new master in time");
}

void RedisSentinelGroup::Kill(int port) {
  for (auto* group : {&data_, &sentinel_}) {
    for (auto& p : *group) {
      if (p->port != port || p->killed) continue;
      p->process.Kill();
      p->killed = true;
    }
  }
}

}  // namespace jobwire::testing
