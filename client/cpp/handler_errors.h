// How a handler's failure becomes a Fail (docs/clients.md, Worker): its error
// text and the marks NonRetryable and RetryAfter (declared in worker.h, the
// public header, and defined in handler_errors.cc) carry on the status.
#ifndef JOBWIRE_CLIENT_CPP_HANDLER_ERRORS_H_
#define JOBWIRE_CLIENT_CPP_HANDLER_ERRORS_H_

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::client {

// The failure of a handler that returned the error `status`: the same code,
// the text "<CODE>: <message>" and the same NonRetryable / RetryAfter (and
// keep_attempt) marks.
absl::Status HandlerFailure(const absl::Status& status);

// The failure of a handler that threw `e`: "<exception type>: <what()>".
absl::Status ExceptionFailure(const std::exception& e);

// `text` as valid UTF-8 (each byte that does not belong to a well-formed
// sequence becomes U+FFFD: a protobuf string field must be UTF-8), cut to at
// most kMaxErrorBytes (worker.h) at a character boundary, nothing appended.
std::string TruncateErrorText(absl::string_view text);

// Fills error, non_retryable, retry_after_ms and keep_attempt of `request`
// from `failure` (a HandlerFailure, an ExceptionFailure or the worker's own):
// non_retryable wins over a retry-after mark (neither retry_after_ms nor
// keep_attempt is set then).
void SetFailure(const absl::Status& failure, v1::FailRequest* request);

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_HANDLER_ERRORS_H_
