// AdminCli's workers command (Admin ListWorkers); the class is in
// cli/admin_cli.h.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/admin_cli.h"
#include "cli/format.h"
#include "cli/table.h"

namespace jobwire::cli {

absl::Status AdminCli::Workers() {
  v1::ListWorkersResponse response;
  grpc::Status status = admin_->ListWorkers(Context().get(), v1::ListWorkersRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
    return absl::OkStatus();
  }
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  Table table({"WORKER", "BROKER", "QUEUES", "TYPES", "IN FLIGHT", "CONNECTED FOR", "PEER"});
  for (const v1::WorkerStream& s : response.streams()) {
    std::vector<std::string> queues;
    for (int i = 0; i < s.queues_size(); ++i) {
      queues.push_back(i < s.weights_size() ? absl::StrCat(s.queues(i), " x", s.weights(i))
                                            : s.queues(i));
    }
    table.AddRow({s.worker_id().empty() ? "-" : s.worker_id(), s.broker(),
                  absl::StrJoin(queues, ","),
                  s.types().empty() ? "all" : absl::StrJoin(s.types(), ","),
                  absl::StrCat(s.in_flight(), "/", s.max_in_flight()),
                  Age(now_ms - s.opened_at_ms()), s.peer()});
  }
  if (response.streams().empty()) {
    *out_ << "no worker is connected\n";
  } else {
    *out_ << table.ToString();
  }
  for (const v1::BrokerReport& b : response.brokers()) {
    *out_ << "broker " << b.broker() << ": " << b.streams() << " stream"
          << (b.streams() == 1 ? "" : "s") << ", reported " << Age(now_ms - b.reported_at_ms())
          << " ago" << (b.truncated() ? " (only the first 1000 listed)" : "") << "\n";
  }
  return absl::OkStatus();
}

}  // namespace jobwire::cli
