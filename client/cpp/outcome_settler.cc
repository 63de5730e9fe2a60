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
// CANCELLED counts: this client never cancels an Ack / Fail call, so it is
// gRPC's answer to a call that reached a stopping broker (grpc/grpc#41785),
// as UNAVAILABLE would be.
bool Unanswered(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsCancelled(status);
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

bool OutcomeSettler::MaySendAgain(const Delivery& delivery, const absl::Status& answer,
                                  bool lost_when_sent) {
  if (!Unanswered(answer) || lost_when_sent) return false;
  // InfinitePast: settled or abandoned, nothing more is sent.
  const absl::Time expiry = leases_->Expiry(delivery.lease_token);
  if (expiry == absl::InfinitePast()) return false;
  return delivery.signal->Has(StopReason::kLeaseLost) || absl::Now() < expiry;
}

void OutcomeSettler::Ack(const Delivery& delivery, std::string result, AckDone done) {
  v1::AckRequest request;
  request.set_queue(delivery.queue);
  request.set_job_id(delivery.job_id);
  request.set_lease_token(delivery.lease_token);
  request.set_result(std::move(result));
  const bool lost_when_sent = delivery.signal->Has(StopReason::kLeaseLost);
  acks_.Ack(std::move(request), [this, delivery, lost_when_sent, done = std::move(done)](
                                    absl::Status status, v1::AckRequest sent) {
    if (MaySendAgain(delivery, status, lost_when_sent)) {
      done(AckRetry{std::move(sent), std::move(status), lost_when_sent});
    } else {
      done(AckOutcome(status));
    }
  });
}

Outcome OutcomeSettler::RetryAck(const Delivery& delivery, const AckRetry& retry) {
  Backoff backoff(kInitialBackoff, kMaxBackoff);
  return AckOutcome(SendAgain(delivery, retry.answer, retry.lost_when_sent, &backoff,
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
  const bool lost_when_sent = delivery.signal->Has(StopReason::kLeaseLost);
  absl::Status status = SendAgain(delivery, call(), lost_when_sent, &backoff, call);
  if (!status.ok()) return Unsettled("fail", status);
  return Outcome{"fail_ok", response->outcome() == v1::FailResponse::OUTCOME_DEAD
                                ? "DEAD"
                                : "RETRY_SCHEDULED"};
}

absl::Status OutcomeSettler::SendAgain(const Delivery& delivery, absl::Status answer,
                                       bool lost_when_sent, Backoff* backoff,
                                       const std::function<absl::Status()>& call) {
  while (MaySendAgain(delivery, answer, lost_when_sent)) {
    if (!delivery.signal->Has(StopReason::kLeaseLost)) {
      std::optional<absl::Duration> wait =
          RetryWait(backoff->Next(), leases_->Expiry(delivery.lease_token) - absl::Now());
      if (!wait.has_value()) break;
      absl::SleepFor(*wait);
    }
    // Known lost now (before or during the wait): this attempt is the last.
    lost_when_sent = delivery.signal->Has(StopReason::kLeaseLost);
    answer = call();
  }
  return answer;
}

}  // namespace jobwire::client
