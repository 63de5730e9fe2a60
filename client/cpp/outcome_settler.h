// OutcomeSettler: sends the Ack or Fail that settles a Worker's delivered job
// and turns the broker's answers into the job's Outcome (docs/clients.md,
// Worker: Ack / Fail). The rules:
// - An Ack / Fail answered UNAVAILABLE / DEADLINE_EXCEEDED (for an ack: the
//   AckBatch call that carried it) is sent again after a Backoff from 100 ms
//   doubling to 2 s with full jitter, until the lease has ended by the
//   worker's estimate (LeaseRenewer::Expiry; RetryWait clips the waits so
//   that one attempt goes out 100 ms before that end and a last one at it).
//   Still unanswered then: ack_unknown / fail_unknown with the last error.
// - Once the job's lease is known lost (its lost-lease signal is raised: a
//   renewal was answered FAILED_PRECONDITION or NOT_FOUND), one attempt is
//   sent while it is known lost, and no more: the first, when the lease was
//   lost before the Ack / Fail was sent; else one more at once, with no
//   wait, after an attempt made while the lease held went unanswered (the
//   lease may have been lost to that very attempt, stored with its answer
//   lost: the broker answers the repeat with its outcome; else it refuses
//   it, the job having moved on). An attempt made while the lease was known
//   lost and answered UNAVAILABLE / DEADLINE_EXCEEDED is ack_unknown /
//   fail_unknown with that error at once.
// - Any other error is the broker's refusal: ack_error / fail_error, never
//   sent again.
// Repeating an Ack / Fail with the same lease token is safe: the broker
// answers the first outcome.
#ifndef JOBWIRE_CLIENT_CPP_OUTCOME_SETTLER_H_
#define JOBWIRE_CLIENT_CPP_OUTCOME_SETTLER_H_

#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <variant>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/cpp/ack_coalescer.h"
#include "client/cpp/backoff.h"
#include "client/cpp/client.h"
#include "client/cpp/run_signal.h"
#include "client/cpp/lease_renewer.h"
#include "client/cpp/worker.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::client {

// Thread safety: every method may be called from any number of threads at
// once.
class OutcomeSettler {
 public:
  // The Ack / Fail retry backoff: from kInitialBackoff doubling to
  // kMaxBackoff.
  static constexpr absl::Duration kInitialBackoff = absl::Milliseconds(100);
  static constexpr absl::Duration kMaxBackoff = absl::Seconds(2);

  // The delivery to settle.
  struct Delivery {
    std::string queue;
    std::string job_id;
    std::string lease_token;  // also its key in the LeaseRenewer
    std::shared_ptr<const RunSignal> signal;  // the run's stop signal (lease lost, ...)
  };

  // An Ack to send again (RetryAck): its request, the answer of its last
  // attempt (UNAVAILABLE / DEADLINE_EXCEEDED), and whether the lease was
  // known lost when that attempt was handed to the AckCoalescer.
  struct AckRetry {
    v1::AckRequest request;
    absl::Status answer;
    bool lost_when_sent = false;
  };

  // Receives the Ack's outcome, or the AckRetry to pass to RetryAck on a
  // thread that may sleep in a backoff.
  using AckDone = std::function<void(std::variant<Outcome, AckRetry>)>;

  // `client` and `leases` must outlive the settler; `send_acks` sends the
  // AckCoalescer's batches.
  OutcomeSettler(Client* client, LeaseRenewer* leases, AckCoalescer::Send send_acks);

  OutcomeSettler(const OutcomeSettler&) = delete;
  OutcomeSettler& operator=(const OutcomeSettler&) = delete;

  // Acks `delivery` with `result` through the AckCoalescer, without waiting
  // for the answer: `done` is called exactly once, on the thread that sends
  // the AckBatch call carrying it (this one, before Ack returns, or another
  // thread inside Ack), so it must not block for long. It receives the
  // outcome (ack_ok, ack_error, ack_unknown), or an AckRetry when the answer
  // is UNAVAILABLE / DEADLINE_EXCEEDED and the rules above send it again.
  void Ack(const Delivery& delivery, std::string result, AckDone done);

  // Sends `retry` again, after a backoff (none once the lease is known
  // lost), by the rules above; returns the outcome: ack_ok, ack_error, or
  // ack_unknown (nothing sent when the lease has ended meanwhile). Blocks
  // for at most the rest of the lease (plus two calls' timeouts).
  Outcome RetryAck(const Delivery& delivery, const AckRetry& retry);

  // Fails `delivery` with `failure` (its error text and marks: SetFailure)
  // by the rules above, and returns the outcome: fail_ok with
  // RETRY_SCHEDULED or DEAD, fail_error, or fail_unknown. Blocks for at most
  // the rest of the lease (plus two calls' timeouts).
  Outcome Fail(const Delivery& delivery, const absl::Status& failure);

 private:
  // Whether an attempt answered `answer` is to be sent again: UNAVAILABLE /
  // DEADLINE_EXCEEDED, sent while the lease was not known lost
  // (`lost_when_sent` false), the job neither settled nor abandoned, and its
  // lease now known lost (once more, at once) or not yet ended.
  bool MaySendAgain(const Delivery& delivery, const absl::Status& answer, bool lost_when_sent);
  // Repeats `call` while MaySendAgain holds for its last answer (at first
  // `answer`, from an attempt made with `lost_when_sent`), waiting
  // backoff->Next() (clipped by RetryWait) before each attempt while the
  // lease is not known lost. Returns the last answer.
  absl::Status SendAgain(const Delivery& delivery, absl::Status answer, bool lost_when_sent,
                         Backoff* backoff, const std::function<absl::Status()>& call);

  Client* const client_;
  LeaseRenewer* const leases_;
  // Every Ack goes through it (AckBatch calls); a handler thread whose ack
  // finds a call in flight returns to work without waiting for the answer.
  AckCoalescer acks_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_OUTCOME_SETTLER_H_
