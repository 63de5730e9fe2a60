#include "broker/store/sentinel_master_source.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/base/error_reason.h"
#include "broker/base/logging.h"

namespace jobwire::store {
namespace {

constexpr const char* kSwitchChannel = "+switch-master";

std::string Name(const RedisEndpoint& e) { return absl::StrCat(e.host, ":", e.port); }

bool Same(const RedisEndpoint& a, const RedisEndpoint& b) {
  return a.host == b.host && a.port == b.port;
}

absl::StatusOr<RedisEndpoint> ParseEndpoint(absl::string_view host, absl::string_view port) {
  RedisEndpoint e;
  e.host = std::string(host);
  if (e.host.empty() || !absl::SimpleAtoi(port, &e.port) || e.port <= 0 || e.port > 65535) {
    return absl::InternalError(absl::StrCat("malformed master address \"", host, "\" \"", port,
                                            "\""));
  }
  return e;
}

}  // namespace

// One GetMaster call: the sentinel being asked and what the others said.
struct SentinelMasterSource::Query {
  MasterCallback callback;
  std::vector<size_t> order;  // a copy: order_ may change meanwhile
  size_t next = 0;            // index into order of the next sentinel to ask
  uint64_t asking = 0;        // which try an answer or timeout belongs to
  base::EventLoop::TimerId timer = 0;
  std::string failures;
  // A resubscription's check: a master other than the known one is a switch.
  bool notify_switch = false;
};

SentinelMasterSource::SentinelMasterSource(base::EventLoop* loop, SentinelOptions options)
    : loop_(loop), options_(std::move(options)) {
  for (size_t i = 0; i < options_.sentinels.size(); ++i) {
    RedisAddress address;  // the sentinels' own password; no user or db
    address.host = options_.sentinels[i].host;
    address.password = options_.password;
    address.port = options_.sentinels[i].port;
    address.tls = options_.tls;
    commands_.push_back(std::make_unique<RedisClient>(loop_, address, absl::StrCat("sentinel-", i),
                                                      options_.tls_context));
    subscribers_.push_back(std::make_unique<RedisClient>(
        loop_, address, absl::StrCat("sentinel-", i, "-events"), options_.tls_context));
    // Sentinels have classic pub/sub only (no SSUBSCRIBE).
    subscribers_.back()->SetShardedPubSub(false);
    order_.push_back(i);
    commands_.back()->SetOnConnected([this] { OnFirstReachable(); });
  }
}

SentinelMasterSource::~SentinelMasterSource() = default;

void SentinelMasterSource::Start() {
  for (size_t i = 0; i < commands_.size(); ++i) {
    commands_[i]->Start();
    subscribers_[i]->Subscribe(kSwitchChannel,
                               [this, i](const std::string&, const std::string& m) {
                                 OnSwitchMessage(i, m);
                               });
    subscribers_[i]->Start();
  }
  // No sentinel reachable: questions go ahead after the timeout and fail.
  loop_->RunAfter(options_.query_timeout, [this] { OnFirstReachable(); });
}

void SentinelMasterSource::OnFirstReachable() {
  if (started_) return;
  started_ = true;
  std::vector<std::shared_ptr<Query>> waiting = std::move(deferred_);
  deferred_.clear();
  for (std::shared_ptr<Query>& query : waiting) Ask(std::move(query));
}

RedisClient::AddressSource SentinelMasterSource::AsAddressSource() {
  return [this](RedisClient::AddressCallback callback) { GetMaster(std::move(callback)); };
}

void SentinelMasterSource::GetMaster(MasterCallback callback) {
  auto query = std::make_shared<Query>();
  query->callback = std::move(callback);
  query->order = order_;
  Ask(std::move(query));
}

void SentinelMasterSource::Ask(std::shared_ptr<Query> query) {
  if (!started_) {
    deferred_.push_back(std::move(query));
    return;
  }
  if (query->next == query->order.size()) {
    MasterCallback callback = std::move(query->callback);
    callback(base::RedisUnavailableError(absl::StrCat("no sentinel names a master \"",
                                                 options_.master_name, "\":", query->failures)));
    return;
  }
  const size_t sentinel = query->order[query->next++];
  const uint64_t asking = ++query->asking;
  query->timer = loop_->RunAfter(options_.query_timeout, [this, query, sentinel, asking] {
    if (query->asking != asking) return;
    query->timer = 0;
    OnAnswer(query, sentinel, absl::DeadlineExceededError("no answer in time"));
  });
  commands_[sentinel]->Command(
      {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.master_name},
      [this, query, sentinel, asking](absl::StatusOr<RedisReply> reply) {
        if (query->asking != asking) return;  // timed out: the next one was asked
        OnAnswer(query, sentinel, std::move(reply));
      });
}

void SentinelMasterSource::OnAnswer(const std::shared_ptr<Query>& query, size_t sentinel,
                                    absl::StatusOr<RedisReply> reply) {
  ++query->asking;  // whatever else arrives for this try is stale
  if (query->timer != 0) loop_->Cancel(query->timer);
  query->timer = 0;
  absl::StatusOr<RedisEndpoint> master = absl::UnknownError("no answer");
  if (!reply.ok()) {
    master = reply.status();
  } else if (reply->is_nil()) {
    master = absl::NotFoundError("does not know the master");
  } else if (reply->is_error()) {
    master = absl::InternalError(reply->str);
  } else if (reply->elements.size() == 2) {
    master = ParseEndpoint(reply->elements[0].str, reply->elements[1].str);
  } else {
    master = absl::InternalError("malformed answer");
  }
  const std::string who = Name(options_.sentinels[sentinel]);
  if (!master.ok()) {
    absl::StrAppend(&query->failures, " ", who, ": ", master.status().message(), ";");
    Ask(query);
    return;
  }
  MoveToFront(sentinel);  // asked first next time
  Learn(*master, query->notify_switch ? "sentinel answer after resubscribing" : "sentinel answer",
        query->notify_switch);
  MasterCallback callback = std::move(query->callback);
  callback(*std::move(master));
}

void SentinelMasterSource::MoveToFront(size_t sentinel) {
  for (size_t i = 0; i < order_.size(); ++i) {
    if (order_[i] != sentinel) continue;
    order_.erase(order_.begin() + static_cast<long>(i));
    order_.insert(order_.begin(), sentinel);
    return;
  }
}

void SentinelMasterSource::OnSwitchMessage(size_t sentinel, const std::string& message) {
  if (message.empty()) {
    // (Re)subscribed: a switch may have been announced while this
    // connection was down. Ask, and compare with what is known.
    auto query = std::make_shared<Query>();
    query->callback = [](absl::StatusOr<RedisEndpoint>) {};
    query->order = order_;
    query->notify_switch = true;
    Ask(std::move(query));
    return;
  }
  std::vector<absl::string_view> f = absl::StrSplit(message, ' ', absl::SkipEmpty());
  if (f.size() != 5 || f[0] != options_.master_name) return;  // another master's
  absl::StatusOr<RedisEndpoint> master = ParseEndpoint(f[3], f[4]);
  if (!master.ok()) {
    base::Log(base::LogLevel::kWarning, "malformed +switch-master message",
              {{"message", message}});
    return;
  }
  // It knows the new master: ask it first, not one that may lag behind.
  MoveToFront(sentinel);
  Learn(*master, "+switch-master", /*notify=*/true);
}

void SentinelMasterSource::Learn(const RedisEndpoint& master, const char* how, bool notify) {
  if (known_.has_value() && Same(*known_, master)) return;
  // The first master named, or a plain answer: recorded, not a switch.
  const bool quiet = !known_.has_value() || !notify;
  const std::string previous = quiet ? "" : Name(*known_);
  known_ = master;
  if (quiet) {
    base::Log(base::LogLevel::kInfo, "redis master named",
              {{"master_name", options_.master_name}, {"master", Name(master)}, {"how", how}});
    return;
  }
  base::Log(base::LogLevel::kWarning, "redis master switched",
            {{"master_name", options_.master_name},
             {"from", previous},
             {"to", Name(master)},
             {"how", how}});
  if (on_switch_) on_switch_(master);
}

}  // namespace jobwire::store
