// Status helpers that abseil 20220623 does not ship yet.
#ifndef JOBWIRE_BROKER_BASE_STATUS_MACROS_H_
#define JOBWIRE_BROKER_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define JW_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    const ::absl::Status jw_status_ = (expr);     \
    if (!jw_status_.ok()) return jw_status_;      \
  } while (0)

#define JW_CONCAT_INNER_(a, b) a##b
#define JW_CONCAT_(a, b) JW_CONCAT_INNER_(a, b)

// `lhs = value of expr` (an absl::StatusOr<T>), or returns its status.
#define JW_ASSIGN_OR_RETURN(lhs, expr) \
  JW_ASSIGN_OR_RETURN_IMPL_(JW_CONCAT_(jw_statusor_, __LINE__), lhs, expr)
#define JW_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // JOBWIRE_BROKER_BASE_STATUS_MACROS_H_
