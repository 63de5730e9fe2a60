// LeaseRenewer: the leases of a Worker's delivered jobs, from receipt until
// each job is settled (docs/clients.md, Worker: Leases). Its thread calls
// ExtendLease on each lease every third of its length, with a deadline of at
// most that third; when the broker answers FAILED_PRECONDITION or NOT_FOUND
// the lease is lost: renewal stops and the job's stop signal is raised
// (StopReason::kLeaseLost; Job::lease_lost, Job::stop_token), or, for the
// reasons JOB_CANCEL_REQUESTED and RUN_TIMED_OUT, the run is to stop
// (kCancelled, kTimedOut: renewal stops, the lease stays the run's until it
// ends). It raises kTimedOut itself at a run's deadline (Job::deadline), and
// Stop raises a Claim stream's stop request. It also keeps the worker's own
// estimate of each lease's end, which bounds the Ack / Fail retries.
#ifndef JOBWIRE_CLIENT_CPP_LEASE_RENEWER_H_
#define JOBWIRE_CLIENT_CPP_LEASE_RENEWER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/run_signal.h"

namespace jobwire::client {

// Thread safety: every method may be called from any thread, also while the
// caller holds a lock of its own: the renewer calls back only `log` (while it
// holds its own lock) and the stop callbacks of a lost job's signal (without
// it).
class LeaseRenewer {
 public:
  // A lease to keep, from its job's receipt.
  struct Lease {
    std::string queue;
    std::string id;
    absl::Duration length;  // the lease length (LeaseLength)
    int64_t renew_ms;       // ExtendLeaseRequest.lease_ms (RenewLeaseMs)
    int64_t expires_at_ms;  // Redis clock: from the claim, then the last renewal
    std::shared_ptr<RunSignal> signal;  // the run's stop signal
    absl::Time deadline = absl::InfiniteFuture();  // the run's (Job::deadline)
  };

  // `client` must outlive the renewer. `log` receives one line per lost lease.
  LeaseRenewer(Client* client, std::function<void(const std::string&)> log);
  // REQUIRES: Join has been called if Start was.
  ~LeaseRenewer() = default;

  LeaseRenewer(const LeaseRenewer&) = delete;
  LeaseRenewer& operator=(const LeaseRenewer&) = delete;

  // Starts the renewal thread. REQUIRES: called at most once.
  void Start();
  // Makes the renewal thread end; it does once the ExtendLease calls in
  // flight have returned (each within a third of its lease).
  void Shutdown();
  // Shutdown, then waits for the thread to end.
  void Join();

  // Keeps the lease under `token`, received at `received`: first renewed at
  // received + length / 3.
  void Add(const std::string& token, Lease lease, absl::Time received);
  // Forgets the lease under `token` (its job is settled or dropped).
  void Remove(const std::string& token);
  // Raises `reason` on the signal of the run under `token`, if kept and not
  // abandoned; kCancelled also ends its renewal (the broker refuses it).
  void Stop(const std::string& token, StopReason reason);
  // Marks every lease kept abandoned: no more renewal, and Expiry answers
  // InfinitePast. Returns how many were not abandoned before.
  int AbandonAll();
  bool Abandoned(const std::string& token);
  // The worker's estimate of the end of the lease under `token`: receipt or
  // the last successful renewal plus the lease length. InfinitePast when it
  // is not kept or abandoned.
  absl::Time Expiry(const std::string& token);
  // How long before `now` the lease under `token` ended (LeaseEndedAgo), or
  // nullopt while it lasts, or when it is not kept or abandoned.
  std::optional<absl::Duration> EndedAgo(const std::string& token, absl::Time now);

 private:
  struct Kept {
    Lease lease;
    absl::Time expires;     // local estimate
    absl::Time next_renew;  // the last renewal (or receipt) + length / 3
    bool lost = false;       // no renewal: lost, cancelled or timed out
    bool timed_out = false;  // kTimedOut raised
    bool abandoned = false;  // left behind by the worker: no renewal
  };
  // A renewal to make, copied out of leases_.
  struct Due {
    std::string token;
    std::string queue;
    std::string id;
    absl::Duration length;
    int64_t renew_ms;
  };

  void Loop();
  void Renew(const Due& due);

  Client* const client_;
  const std::function<void(const std::string&)> log_;
  absl::Mutex mu_;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Kept> leases_ ABSL_GUARDED_BY(mu_);  // by lease token
  std::thread thread_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_LEASE_RENEWER_H_
