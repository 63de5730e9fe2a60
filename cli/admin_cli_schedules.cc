// AdminCli's schedule commands (Admin PutSchedule / ListSchedules /
// DeleteSchedule); the class is in cli/admin_cli.h.
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/admin_cli.h"
#include "cli/format.h"
#include "cli/table.h"

namespace jobwire::cli {

absl::Status AdminCli::PutSchedule(const std::string& name, const std::string& queue,
                                   const std::string& type, const ScheduleOptions& schedule,
                                   const EnqueueOptions& job) {
  v1::PutScheduleRequest request;
  v1::Schedule* s = request.mutable_schedule();
  s->set_name(name);
  if (!schedule.cron.empty()) s->set_cron(schedule.cron);
  if (schedule.interval_ms != 0) s->set_interval_ms(schedule.interval_ms);
  s->set_time_zone(schedule.time_zone);
  s->set_jitter_ms(schedule.jitter_ms);
  s->set_start_at_ms(schedule.start_at_ms);
  s->set_end_at_ms(schedule.end_at_ms);
  if (schedule.catch_up == "once") {
    s->set_catch_up(v1::Schedule::CATCH_UP_ONCE);
  } else if (schedule.catch_up == "skip") {
    s->set_catch_up(v1::Schedule::CATCH_UP_SKIP);
  } else {
    return absl::InvalidArgumentError("--catch-up: must be skip or once");
  }
  absl::StatusOr<v1::EnqueueRequest> enqueue = MakeEnqueue(queue, type, job);
  if (!enqueue.ok()) return enqueue.status();
  *s->mutable_job() = *std::move(enqueue);
  v1::PutScheduleResponse response;
  grpc::Status status = admin_->PutSchedule(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
    return absl::OkStatus();
  }
  *out_ << (response.replaced() ? "replaced" : "created") << " schedule " << name
        << ", next run " << Time(response.next_run_at_ms()) << " UTC\n";
  return absl::OkStatus();
}

absl::Status AdminCli::Schedules() {
  v1::ListSchedulesResponse response;
  grpc::Status status = admin_->ListSchedules(Context().get(), v1::ListSchedulesRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
    return absl::OkStatus();
  }
  Table table({"NAME", "WHEN", "QUEUE", "TYPE", "NEXT (UTC)", "LAST (UTC)", "LAST JOB"});
  for (const v1::ScheduleInfo& info : response.schedules()) {
    const v1::Schedule& s = info.schedule();
    std::string when = s.timing_case() == v1::Schedule::kCron
                           ? absl::StrCat(s.cron(), s.time_zone().empty() ? "" : " ", s.time_zone())
                           : absl::StrCat("every ", s.interval_ms(), " ms");
    table.AddRow({s.name(), when, s.job().queue(), s.job().type(), Time(info.next_run_at_ms()),
                  Time(info.last_run_at_ms()), info.last_job_id().empty() ? "-" : info.last_job_id()});
  }
  *out_ << table.ToString();
  return absl::OkStatus();
}

absl::Status AdminCli::DeleteSchedule(const std::string& name) {
  v1::DeleteScheduleRequest request;
  request.set_name(name);
  v1::DeleteScheduleResponse response;
  grpc::Status status = admin_->DeleteSchedule(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
    return absl::OkStatus();
  }
  *out_ << (response.deleted() ? "deleted schedule " : "no schedule ") << name << "\n";
  return absl::OkStatus();
}

}  // namespace jobwire::cli
