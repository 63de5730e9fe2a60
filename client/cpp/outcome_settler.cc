#include "client/cpp/outcome_settler.h"

#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/cpp/handler_errors.h"
#include "client/cpp/lease_rules.h"

namespace jobwire::client {
namespace {

// The answers after which an Ack / Fail may or may not have been stored.
bool Unanswered(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

// The outcome of an Ack / Fail (`verb`: "ack" or "fail") that ended with the
// error `status`: unknown when it may have been stored, else refused.
Outcome Unsettled(absl::string_view verb, const absl::Status& status) {
  return Outcome{absl::StrCat(verb, Unanswered(status) ? "_unknown" : "_error"),
                 absl::StatusCodeToString(status.code())};
}

Outcome AckOutcome(const absl::Status& status) {
  return status.ok() ? Outcome{"ack_ok", ""} : Unsettled("ack", status);
}

}  // namespace

OutcomeSettler::OutcomeSettler(Client* client, LeaseRenewer* leases,
                               AckCoalescer::Send send_acks)
    : client_(client), leases_(leases), acks_(std::move(send_acks)) {}

bool OutcomeSettler::Resendable(const Delivery& delivery, const absl::Status& answer) {
  return Unanswered(answer) && !delivery.signal->Has(StopReason::kLeaseLost);
}

void OutcomeSettler::Ack(const Delivery& delivery, std::string result, AckDone done) {
  v1::AckRequest request;
  request.set_queue(delivery.queue);
  request.set_job_id(delivery.job_id);
  request.set_lease_token(delivery.lease_token);
  request.set_result(std::move(result));
  acks_.Ack(std::move(request), [this, delivery, done = std::move(done)](
                                    absl::Status status, v1::AckRequest sent) {
    if (Resendable(delivery, status) && absl::Now() < leases_->Expiry(delivery.lease_token)) {
      done(AckRetry{std::move(sent), std::move(status)});
    } else {
      done(AckOutcome(status));
    }
  });
}

Outcome OutcomeSettler::RetryAck(const Delivery& delivery, const AckRetry& retry) {
  Backoff backoff(kInitialBackoff, kMaxBackoff);
  return AckOutcome(SendAgain(delivery, retry.answer, &backoff,
                              [&] { return acks_.AckAndWait(retry.request); }));
}

Outcome OutcomeSettler::Fail(const Delivery& delivery, const absl::Status& failure) {
  v1::FailRequest request;
  request.set_queue(delivery.queue);
  request.set_job_id(delivery.job_id);
  request.set_lease_token(delivery.lease_token);
  SetFailure(failure, &request);
  absl::StatusOr<v1::FailResponse> response;
  auto call = [&] {
    response = client_->Fail(request);
    return response.status();
  };
  Backoff backoff(kInitialBackoff, kMaxBackoff);
  absl::Status status = SendAgain(delivery, call(), &backoff, call);
  if (!status.ok()) return Unsettled("fail", status);
  return Outcome{"fail_ok", response->outcome() == v1::FailResponse::OUTCOME_DEAD
                                ? "DEAD"
                                : "RETRY_SCHEDULED"};
}

absl::Status OutcomeSettler::SendAgain(const Delivery& delivery, absl::Status answer,
                                       Backoff* backoff,
                                       const std::function<absl::Status()>& call) {
  while (Resendable(delivery, answer)) {
    // Settled or abandoned: Expiry is InfinitePast, no attempt is left.
    std::optional<absl::Duration> wait =
        RetryWait(backoff->Next(), leases_->Expiry(delivery.lease_token) - absl::Now());
    if (!wait.has_value()) break;
    absl::SleepFor(*wait);
    if (delivery.signal->Has(StopReason::kLeaseLost)) break;  // learnt during the wait
    answer = call();
  }
  return answer;
}

}  // namespace jobwire::client
