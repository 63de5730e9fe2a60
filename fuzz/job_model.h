// JobModel: the request fuzzer's oracle. A shadow copy of every job the
// fuzzer has created, changed only by the outcomes the fuzzer observes (the
// answers of Enqueue, Claim, Ack, Fail, ExtendLease, Cancel, RetryDead,
// DeleteJob, PurgeDead, Pause/Resume and of its own reaper passes). Each
// answer is first judged against the model, then applied; the stored state
// of every job an input touched is then read back and compared. The rules,
// with their names, are listed in fuzz/README.md.
//
// Time: the model never guesses what the clock did. Leases expire only
// through Reap (which the fuzzer runs itself, see OnReaped), and the
// transitions that depend on the Redis clock are judged against a window
// [from_ms, to_ms] of Redis TIME read before and after the call.
//
// A broken rule is recorded as a Finding (the first one only: the fuzzer
// aborts on it). Thread-compatible.
#ifndef JOBWIRE_FUZZ_JOB_MODEL_H_
#define JOBWIRE_FUZZ_JOB_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/store/job_store.h"
#include "fuzz/job_view.h"
#include "jobwire/v1/admin.pb.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::fuzz {

// Redis TIME (epoch ms, as lua/_lib.lua computes it) before and after a call.
struct TimeWindow {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
};

struct Finding {
  std::string rule;  // a name listed in fuzz/README.md
  std::string job;   // "queue/id", or "queue" for queue-wide rules
  std::string detail;
};

// JobRef (queue, job id) is in fuzz/job_view.h.

class JobModel {
 public:
  enum class State { kPending, kActive, kCompleted, kDead };

  // `completed_retention_ms`: the store's, for jobs enqueued without one.
  explicit JobModel(int64_t completed_retention_ms) : retention_ms_(completed_retention_ms) {}

  // --- Answers (judged, then applied). `queue`/`id` as in the request. ---

  // `jobs` as stored (broker defaults applied), `out` one outcome per job.
  void OnEnqueue(const std::string& queue, const std::vector<v1::EnqueueRequest>& jobs,
                 const std::vector<store::EnqueueOutcome>& out);
  // A claim of up to `want` jobs of `queue`, of `types` only (empty: every
  // type); `window.from_ms` was read just before it was sent.
  void OnClaim(const std::string& queue, int want, int64_t lease_ms, const std::string& worker_id,
               const std::vector<std::string>& types, TimeWindow window,
               const std::vector<v1::ClaimedJob>& jobs);
  void OnAck(const v1::AckRequest& r, const absl::Status& answer);
  void OnFail(const v1::FailRequest& r, TimeWindow window,
              const absl::StatusOr<store::FailOutcome>& answer);
  void OnExtendLease(const v1::ExtendLeaseRequest& r, int64_t lease_ms,
                     const absl::StatusOr<int64_t>& answer);
  void OnCancel(const v1::CancelRequest& r, const absl::Status& answer);
  void OnGetJob(const std::string& queue, const std::string& id,
                const absl::StatusOr<v1::Job>& answer);
  void OnListJobs(const std::string& queue, v1::JobState state, const std::string& type,
                  const std::vector<v1::Job>& jobs);
  void OnStats(const v1::QueueStats& stats);
  void OnListQueues(const std::vector<v1::QueueStats>& queues);
  void OnRetryDead(const std::string& queue, const std::vector<std::string>& ids, bool all,
                   const std::string& type, const absl::StatusOr<int64_t>& answer);
  void OnDeleteJob(const std::string& queue, const std::string& id, const absl::Status& answer);
  // Which jobs went is settled by the read-back (EndInput checks the count).
  void OnPurgeDead(const std::string& queue, int64_t older_than_ms, TimeWindow window,
                   const absl::StatusOr<int64_t>& answer);
  void OnSetPaused(const std::string& queue, bool paused, const absl::StatusOr<bool>& answer);
  // Every Reap call of one queue in one pass, summed. Which leases were
  // taken back is settled by the read-back (EndInput checks the counts).
  void OnReaped(const std::string& queue, TimeWindow window, const store::ReapOutcome& total);

  // A call answered something no rule allows (e.g. INTERNAL).
  void OnUnexpected(const std::string& job, const absl::Status& answer);

  // --- Read-back. ---

  // The jobs touched since the last call (held, or just removed).
  std::vector<JobRef> TakeTouched();
  // The stored job `ref` (a hash read back after the input).
  void OnStored(const JobRef& ref, const JobView& stored);
  // Closes the input: checks the counts of PurgeDead and Reap.
  void EndInput();

  // Every job hash in Redis must be one the model holds.
  void OnStoredJobCount(int64_t stored);

  // FLUSHALL: everything is gone.
  void Clear();

  // Whether the model holds a job of `queue` in `state` (the fuzzer reads
  // the Redis clock around a call only when its answer depends on it).
  bool Holds(const std::string& queue, State state) const;
  bool Holds(const std::string& queue, const std::string& id) const {
    return jobs_.count(JobRef(queue, id)) > 0;
  }

  // The job of `queue` claimed (or enqueued) last and still held, else the
  // other one; "" when neither.
  std::string LatestJob(const std::string& queue, bool claimed) const;

  // The latest lease token handed out for the job ("" when none).
  std::string LatestToken(const std::string& queue, const std::string& id) const;

  const std::optional<Finding>& finding() const { return finding_; }
  // How often each transition was observed ("Ack OK", "reaped", ...).
  const std::map<std::string, int64_t>& counts() const { return counts_; }
  size_t jobs() const { return jobs_.size(); }

 private:
  struct Job {
    // As enqueued (broker defaults applied).
    std::string type, payload, idempotency_key;
    int64_t priority = 0, max_attempts = 0, backoff_base = 0, backoff_max = 0;
    int64_t delay_ms = 0, run_at_ms = 0;
    int64_t retention = 0;  // completed retention ms; 0 = deleted on Ack
    bool fresh = false;  // enqueued, due time not yet read back
    State state = State::kPending;
    int64_t attempts = 0;
    std::string token;         // lease token of the current (or last) claim
    std::string last_claimed;  // latest token ever handed out ("*" inputs)
    int64_t claimed_at = 0;    // Redis ms of the current claim
    int64_t lease_expires_at = 0;
    // Cancel asked the current run to stop: ExtendLease is refused, and a
    // Fail or a reap makes the job dead "cancelled".
    bool cancel_requested = false;
    // Learned from the first read-back after the change that set them.
    std::optional<int64_t> due_at, finished_at, created_at;
    std::string result, error, worker_id;
    // The Ack that completed the job, which an identical repeat answers
    // again (kAck), cleared when the job moves on.
    enum class Settled { kNone, kAck } settled = Settled::kNone;
    std::string settled_token;
    // The last failed run settled by a Fail: its token and the outcome a Fail
    // repeated with that token answers again, whatever happened to the job
    // since (lua/fail.lua). Replaced by the next Fail, cleared by a reap.
    std::string fail_token;
    store::FailOutcome fail_outcome;
    // Set by Reap / PurgeDead until the read-back says what happened.
    std::optional<TimeWindow> reap_window, purge_window;
    int64_t purge_older_than = 0;
  };
  // Counts a Reap pass / PurgeDead reported, checked in EndInput.
  struct Pending {
    std::string queue;
    int64_t expected = 0, seen = 0, expected_dead = 0, seen_dead = 0;
  };
  using Jobs = std::map<JobRef, Job>;
  // A job deleted by its Ack (retention 0): the token of that Ack, which a
  // repeat answers OK for at least kAckTombstoneGraceMs (another token:
  // FAILED_PRECONDITION), and when (steady clock) the Ack was answered.
  struct Tombstone {
    std::string token;
    absl::Time acked_at;
  };

  void Note(const std::string& rule, const std::string& job, const std::string& detail);
  Job* Find(const std::string& queue, const std::string& id);
  void Touch(const std::string& queue, const std::string& id);
  // Answers the model expects of a settle call (Ack, Fail, ExtendLease).
  absl::StatusCode ExpectSettle(const Job* job, const std::string& token, bool fail) const;
  // Judges `got` against `want` for the call `what` on `ref`: returns
  // whether they agree (else a Finding is noted).
  // `token`: the request's lease token, nullptr for calls without one.
  bool JudgeCode(const char* what, const JobRef& ref, const Job* job, const std::string* token,
                 absl::StatusCode want, const absl::Status& got);
  // Compares the view `v` (from `source`: "stored", "claim-job", "read-job")
  // with the model's job; a stored hash also fills in what the model learns
  // only from a read-back (created_at, a new due time, finished_at).
  void Compare(const char* source, const JobRef& ref, Job& job, const JobView& v);
  void ResolveReap(const JobRef& ref, Job& job, const JobView& v);
  // An Ack of a job the model holds only as a tombstone (deleted on Ack).
  void OnAckOfDeleted(const v1::AckRequest& r, const absl::Status& answer);
  void ResolvePurge(const JobRef& ref, Job& job, const JobView& v);
  void ExpectBackoff(const char* rule, const JobRef& ref, const Job& job, int64_t due,
                     TimeWindow w, int64_t retry_after_ms);
  void FreeIdempotencyKey(const JobRef& ref, const Job& job);

  const int64_t retention_ms_;
  Jobs jobs_;
  std::map<JobRef, Tombstone> tombstones_;
  std::map<std::pair<std::string, std::string>, std::string> idem_;  // (queue, key) -> id
  std::map<std::string, bool> paused_;
  std::map<std::string, std::string> last_claimed_, last_enqueued_;  // queue -> id
  std::vector<JobRef> touched_;
  std::vector<JobRef> removed_;  // jobs gone from the model, still to read back once
  std::optional<Pending> reap_, purge_;
  std::optional<Finding> finding_;
  std::map<std::string, int64_t> counts_;
};

const char* StateName(JobModel::State s);

}  // namespace jobwire::fuzz

#endif  // JOBWIRE_FUZZ_JOB_MODEL_H_
