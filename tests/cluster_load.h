// Load on a broker in cluster mode for tests/cluster_failover_test.cc:
// producers and workers on real gRPC calls and Claim streams, and the
// records they keep (each Enqueue and Ack answer, each delivery), with the
// counts the tests check. Every count comes from these records, never from
// the broker. Header-only, for that one test.
#ifndef JOBWIRE_TESTS_CLUSTER_LOAD_H_
#define JOBWIRE_TESTS_CLUSTER_LOAD_H_

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "broker/store/key_slot.h"
#include "broker/store/keys.h"
#include "gtest/gtest.h"
#include "tests/redis_cluster.h"
#include "tests/test_harness.h"

namespace jobwire::testing::cluster_load {

using Code = grpc::StatusCode;

// How long a job enqueued after the fault may take from its OK answer to
// its ack: the broker learns a new slot map from a MOVED at once, else from
// its periodic refresh within 5 s (RedisClusterClient::kRefreshInterval);
// the rest is room for a loaded 2-core machine and ThreadSanitizer.
constexpr absl::Duration kFollowBound = absl::Seconds(10);
// Asynchronous replication: a write reaches the replica within
// milliseconds, so what a SIGKILL takes away was answered just before it.
// One second covers a starved replica on a loaded machine.
constexpr absl::Duration kLossWindow = absl::Seconds(1);
constexpr int kProducers = 2, kWorkers = 2, kMaxInFlight = 8, kHoldEvery = 200;
constexpr absl::Duration kPace = absl::Milliseconds(4);  // between one producer's jobs
// How long an UNAVAILABLE Enqueue, and an UNAVAILABLE Ack, is repeated.
constexpr absl::Duration kEnqueueRetryFor = absl::Seconds(30), kAckRetryFor = absl::Seconds(6);

struct Claimed {  // one delivery, read off the stream `at`
  std::string id, token;
  absl::Time at;
};
struct AckAnswer {  // one Ack attempt, `sent` then
  std::string token;
  absl::Time sent;
  Code code;
};
struct JobRecord {  // one job, by payload
  std::string id;                   // of the OK answer; "" when none came
  absl::Time first_sent, answered;  // the first attempt; the OK answer
  std::vector<Claimed> claims;  // every delivery, in order
  std::vector<AckAnswer> acks;  // every final answer but UNAVAILABLE
  absl::Time acked = absl::InfiniteFuture();  // the first Ack answered OK was sent
};
bool AckedOk(const JobRecord& job) { return job.acked != absl::InfiniteFuture(); }

struct Records {
  std::map<std::string, JobRecord> jobs;
  std::map<int, int> codes;  // every attempt's, enqueues and acks
  std::vector<grpc::Status> stream_ends;
};

// Producers and workers on one queue, started at once, and their records.
// Thread-safe.
class Load {
 public:
  Load(const BrokerProcess& broker, std::string queue, int64_t lease_ms)
      : broker_(broker), queue_(std::move(queue)), lease_ms_(lease_ms) {
    for (int w = 0; w < kWorkers; ++w) workers_.emplace_back([this] { Work(); });
    for (int p = 0; p < kProducers; ++p) {
      producers_.emplace_back([this, p] { Produce(std::string(1, static_cast<char>('a' + p))); });
    }
  }
  ~Load() {
    StopProducing();
    StopWorking();
  }
  // Stop and join the producers (each finishes the job in hand), the workers.
  void StopProducing() { Join(stop_producing_, producers_); }
  void StopWorking() { Join(stop_working_, workers_); }

  // Waits until every job answered OK was acked (true), or no Ack was
  // answered for `quiet`, or `timeout` passed (false).
  bool WaitAcked(absl::Duration quiet, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    size_t last = 0;
    for (absl::Time progress = absl::Now(); absl::Now() - progress < quiet;) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(100));
      absl::MutexLock lock(&mu_);
      size_t answers = 0, waiting = 0;
      for (const auto& [payload, job] : records_.jobs) {
        answers += job.acks.size();
        waiting += !job.id.empty() && !AckedOk(job);
      }
      if (waiting == 0) return true;
      if (answers != last) progress = absl::Now();
      last = answers;
    }
    return false;
  }

  Records records() const {
    absl::MutexLock lock(&mu_);
    return records_;
  }

 private:
  static void Join(std::atomic<bool>& stop, std::vector<std::thread>& threads) {
    stop = true;
    for (std::thread& t : threads) t.join();
    threads.clear();
  }

  void Produce(const std::string& prefix) {
    auto stub = broker_.NewStub();
    for (int seq = 0; !stop_producing_.load(); ++seq) {
      EnqueueUntilAnswered(*stub, absl::StrCat(prefix, seq));
      absl::SleepFor(kPace);
    }
  }

  void EnqueueUntilAnswered(v1::BrokerService::Stub& stub, const std::string& payload) {
    v1::EnqueueRequest request = MakeJob(queue_, payload);
    request.set_idempotency_key(payload);
    const absl::Time give_up = absl::Now() + kEnqueueRetryFor;
    for (bool first = true;; first = false) {
      const absl::Time sent = absl::Now();
      v1::EnqueueResponse response;
      grpc::Status s = Enqueue(stub, request, &response);
      {
        absl::MutexLock lock(&mu_);
        JobRecord& job = records_.jobs[payload];
        if (first) job.first_sent = sent;
        ++records_.codes[s.error_code()];
        if (s.ok()) {
          job.id = response.job_id();
          job.answered = absl::Now();
          return;
        }
      }
      if (s.error_code() != Code::UNAVAILABLE || absl::Now() > give_up) return;
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  void Work() {
    auto stub = broker_.NewStub();
    std::unique_ptr<ClaimReader> reader;
    std::deque<std::pair<absl::Time, v1::ClaimedJob>> held;  // acked once their lease ran out
    for (int delivered = 0; !stop_working_.load();) {
      for (; !held.empty() && held.front().first <= absl::Now(); held.pop_front()) {
        AckUntilAnswered(*stub, held.front().second);
      }
      if (reader == nullptr) {
        reader = std::make_unique<ClaimReader>(broker_.NewStub(),
                                               MakeClaim({queue_}, kMaxInFlight, lease_ms_));
      }
      absl::Time read_at;
      std::optional<v1::ClaimedJob> job = reader->Next(absl::Milliseconds(100), &read_at);
      if (!job.has_value()) {
        if (std::optional<grpc::Status> end = reader->WaitForEnd(absl::ZeroDuration())) {
          absl::MutexLock lock(&mu_);
          records_.stream_ends.push_back(*end);
          reader.reset();
        }
        continue;
      }
      {
        absl::MutexLock lock(&mu_);
        records_.jobs[job->job().payload()].claims.push_back(
            {job->job().id(), job->lease_token(), read_at});
      }
      // Every kHoldEvery-th delivery is held past its lease, so that it is
      // redelivered; never one on its last attempt, which the lease's end
      // makes dead instead (a job the fault already redelivered twice).
      if (++delivered % kHoldEvery == 0 && job->job().attempts() < job->job().max_attempts()) {
        held.emplace_back(absl::Now() + absl::Milliseconds(lease_ms_) + absl::Seconds(2), *job);
      } else {
        AckUntilAnswered(*stub, *job);
      }
    }
  }

  void AckUntilAnswered(v1::BrokerService::Stub& stub, const v1::ClaimedJob& job) {
    const absl::Time give_up = absl::Now() + kAckRetryFor;
    while (true) {
      const absl::Time sent = absl::Now();
      grpc::Status s = Ack(stub, job);
      {
        absl::MutexLock lock(&mu_);
        ++records_.codes[s.error_code()];
        if (s.error_code() != Code::UNAVAILABLE || absl::Now() > give_up) {
          JobRecord& record = records_.jobs[job.job().payload()];
          record.acks.push_back({job.lease_token(), sent, s.error_code()});
          if (s.ok()) record.acked = std::min(record.acked, sent);
          return;
        }
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  const BrokerProcess& broker_;
  const std::string queue_;
  const int64_t lease_ms_;
  std::atomic<bool> stop_producing_{false}, stop_working_{false};
  std::vector<std::thread> producers_, workers_;
  mutable absl::Mutex mu_;
  Records records_ ABSL_GUARDED_BY(mu_);
};

struct Tally {  // what the records say
  int enqueued = 0;      // answered OK (after retries)
  int gave_up = 0;       // never answered OK
  int acked = 0;         // answered OK and acked at least once
  int redelivered = 0;   // deliveries beyond a job's first
  int other_id = 0;      // deliveries under another id than the OK answer's
  int stale_acks = 0;    // OK under a token a newer trusted delivery superseded
  int refused = 0;       // FAILED_PRECONDITION / NOT_FOUND for a superseded or untrusted token
  std::vector<std::string> bad_refusals;  // any other refusal, described
  int after = 0, late = 0;  // first sent at or after `prompt_from`; not acked within kFollowBound
  std::vector<std::string> never_acked;  // payloads answered OK, never acked
};

// When `token` was delivered; InfiniteFuture when it never was.
inline absl::Time DeliveredAt(const JobRecord& job, const std::string& token) {
  absl::Time at = absl::InfiniteFuture();
  for (const Claimed& c : job.claims) {
    if (c.token == token) at = std::min(at, c.at);
  }
  return at;
}

// Whether a delivery read at or after `trusted_from` (from a master nothing
// will roll back) and before `before` superseded `token`'s.
inline bool Superseded(const JobRecord& job, const std::string& token, absl::Time before,
                absl::Time trusted_from) {
  const absl::Time granted = DeliveredAt(job, token);
  for (const Claimed& c : job.claims) {
    if (c.token != token && c.at > granted && c.at < before && c.at >= trusted_from) return true;
  }
  return false;
}

// Deliveries read before `trusted_from` may have been made on a master that
// died before replicating them (InfinitePast: no failover).
inline Tally Count(const std::map<std::string, JobRecord>& jobs, absl::Time trusted_from,
            absl::Time prompt_from) {
  Tally t;
  for (const auto& [payload, job] : jobs) {
    if (job.id.empty()) {
      ++t.gave_up;
      continue;
    }
    ++t.enqueued;
    t.after += job.first_sent >= prompt_from;
    t.late += job.first_sent >= prompt_from && job.acked - job.answered > kFollowBound;
    if (AckedOk(job)) ++t.acked;
    if (!AckedOk(job)) t.never_acked.push_back(payload);
    t.redelivered += job.claims.empty() ? 0 : static_cast<int>(job.claims.size()) - 1;
    for (const Claimed& c : job.claims) t.other_id += c.id != job.id;
    for (const AckAnswer& a : job.acks) {
      if (a.code == Code::OK) {
        t.stale_acks += Superseded(job, a.token, a.sent, trusted_from);
        continue;
      }
      const bool untrusted = DeliveredAt(job, a.token) < trusted_from;
      const bool fp = a.code == Code::FAILED_PRECONDITION;
      const bool superseded = Superseded(job, a.token, absl::InfiniteFuture(), trusted_from);
      if ((fp && superseded) || (untrusted && (fp || a.code == Code::NOT_FOUND))) {
        ++t.refused;
        continue;
      }
      t.bad_refusals.push_back(absl::StrCat(
          payload, ": code ", a.code, " sent ", absl::FormatTime(a.sent), " for a token read ",
          absl::FormatTime(DeliveredAt(job, a.token)), ", trusted from ",
          absl::FormatTime(trusted_from), ", deliveries ", job.claims.size()));
    }
  }
  return t;
}

// Checks what holds after any fault (codes beyond OK and UNAVAILABLE must be
// refusals Count() found expected); Claim streams stay open.
inline void CheckCommon(const Records& r, const Tally& t) {
  EXPECT_EQ(t.gave_up, 0);
  EXPECT_EQ(t.stale_acks, 0);
  for (const std::string& b : t.bad_refusals) ADD_FAILURE() << "unexpected refusal: " << b;
  for (const auto& [code, n] : r.codes) {
    EXPECT_TRUE(code == Code::OK || code == Code::UNAVAILABLE ||
                code == Code::FAILED_PRECONDITION || code == Code::NOT_FOUND)
        << "code " << code << " x " << n;
  }
  for (const grpc::Status& end : r.stream_ends) ADD_FAILURE() << "stream ended " << StatusText(end);
}

inline std::string Text(const Tally& t, const Records& r) {
  return absl::StrCat("enqueued=", t.enqueued, " acked=", t.acked, " never_acked=",
                      t.never_acked.size(), " redelivered=", t.redelivered, " other_id=",
                      t.other_id, " stale_acks=", t.stale_acks, " refused=", t.refused,
                      " codes=", absl::StrJoin(r.codes, ",", absl::PairFormatter("x")));
}

// What GetJob says now of the jobs never acked: gone (NOT_FOUND), the id
// given to another payload, or still there (a bug; five are reported);
// `early`: lost, answered OK over kLossWindow before `killed`; `acked_gone`:
// acked, answered OK in that window, whose record is gone too.
struct Lost {
  int gone = 0, reused = 0, stuck = 0, early = 0, acked_gone = 0;
};
inline Lost ClassifyLost(v1::BrokerService::Stub& stub, const std::string& queue, const Records& r,
                  absl::Time killed) {
  Lost lost;
  for (const auto& [payload, job] : r.jobs) {
    const bool acked = AckedOk(job), early = job.answered < killed - kLossWindow;
    if (job.id.empty() || (acked && (early || job.answered > killed))) continue;
    v1::Job now;
    grpc::Status s = GetJob(stub, queue, job.id, &now);
    const bool reused = s.ok() && now.payload() != payload;
    if (acked) {
      lost.acked_gone += s.error_code() == Code::NOT_FOUND || reused;
    } else if (s.error_code() == Code::NOT_FOUND || reused) {
      ++(reused ? lost.reused : lost.gone);
      lost.early += early;
    } else if (++lost.stuck <= 5) {
      ADD_FAILURE() << "job " << job.id << " (" << payload << ") never acked, now "
                    << (s.ok() ? StateName(now.state()) : StatusText(s));
    }
  }
  return lost;
}

}  // namespace jobwire::testing::cluster_load

#endif  // JOBWIRE_TESTS_CLUSTER_LOAD_H_
