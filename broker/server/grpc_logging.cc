#include "broker/server/grpc_logging.h"

#include <grpc/support/log.h>

#include "absl/strings/string_view.h"
#include "broker/base/logging.h"

namespace jobwire::server {
namespace {

void LogGrpcLine(gpr_log_func_args* args) {
  base::LogLevel level = base::LogLevel::kError;
  switch (args->severity) {
    case GPR_LOG_SEVERITY_DEBUG: level = base::LogLevel::kDebug; break;
    case GPR_LOG_SEVERITY_INFO: level = base::LogLevel::kInfo; break;
    case GPR_LOG_SEVERITY_ERROR: level = base::LogLevel::kError; break;
  }
  const absl::string_view file = args->file != nullptr ? args->file : "";
  base::Log(level, args->message != nullptr ? args->message : "",
            {{"source", "grpc"}, {"file", file}, {"line", args->line}});
}

}  // namespace

void RouteGrpcLogs() {
  if (base::GetLogLevel() == base::LogLevel::kDebug) {
    gpr_set_log_verbosity(GPR_LOG_SEVERITY_DEBUG);
  }
  gpr_set_log_function(LogGrpcLine);
}

}  // namespace jobwire::server
