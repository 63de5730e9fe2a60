// jobwire: the operator's command-line tool (docs/operations.md).
//
//   jobwire queues
//   jobwire stats QUEUE
//   jobwire jobs QUEUE --state dead [--type T] [--limit N] [--oldest-first]
//   jobwire job QUEUE ID
//   jobwire retry-dead QUEUE (--all | ID...) [--type T]
//   jobwire purge-dead QUEUE [--older-than-ms MS]
//   jobwire delete-queue QUEUE [--force]
//   jobwire pause QUEUE / jobwire resume QUEUE
//   jobwire create-queue QUEUE [--partitions P] [--default-job-timeout-ms MS]
//                              [--rate-limit COUNT/INTERVAL_MS[/BURST]] [--max-active N]
//                              [--max-active-per-key N]
//                              [--key-rate-limit COUNT/INTERVAL_MS[/BURST]]
//   jobwire update-queue QUEUE [--partitions P] [--default-job-timeout-ms MS|-1]
//                              [--rate-limit COUNT/INTERVAL_MS[/BURST]|off] [--max-active N]
//                              [--max-active-per-key N]
//                              [--key-rate-limit COUNT/INTERVAL_MS[/BURST]|off]
//   jobwire enqueue QUEUE TYPE (--json '{...}' | --payload TEXT) [options]
//   jobwire put-schedule NAME QUEUE TYPE (--cron EXPR [--tz ZONE] | --every-ms MS) [options]
//   jobwire schedules
//   jobwire delete-schedule NAME
//   jobwire workers
//
// --addr (default $JOBWIRE_ADDR, else localhost:50051) picks the broker;
// --token (default $JOBWIRE_TOKEN) is sent as a bearer token; --tls,
// --tls-ca, --tls-cert and --tls-key connect over TLS / mutual TLS
// (docs/security.md).
// Tables by default, --json for scripts. Exit status: 0 on success, 1 with
// the broker's "CODE: message" on stderr when a call fails, 2 on bad usage.
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "broker/base/build_info.h"
#include "cli/admin_cli.h"

int main(int argc, char** argv) {
  using jobwire::cli::AdminCli;

  CLI::App app{"jobwire: inspect and operate jobwire queues"};
  app.require_subcommand(1);
  app.set_version_flag("--version", jobwire::base::VersionLine("jobwire"),
                       "print the version and git commit, then exit");
  const char* env_addr = std::getenv("JOBWIRE_ADDR");
  std::string addr = env_addr != nullptr && *env_addr != '\0' ? env_addr : "localhost:50051";
  int64_t timeout_ms = 10000;
  app.add_option("--addr", addr, "broker host:port (default $JOBWIRE_ADDR, else localhost:50051)")
      ->capture_default_str();
  app.add_option("--timeout-ms", timeout_ms, "deadline of each call")->capture_default_str();
  jobwire::client::ClientOptions connection;
  app.add_option("--token", connection.token,
                 "bearer token (default $JOBWIRE_TOKEN; prefer the variable: "
                 "arguments show in ps)");
  app.add_flag("--tls", connection.tls, "connect over TLS (trusting the system CAs)");
  app.add_option("--tls-ca", connection.tls_root_ca,
                 "PEM file of the CA(s) to trust; implies --tls");
  app.add_option("--tls-cert", connection.tls_client_cert,
                 "PEM client certificate for mutual TLS; implies --tls");
  app.add_option("--tls-key", connection.tls_client_key,
                 "PEM private key of --tls-cert; implies --tls");

  bool json = false;
  std::string queue, type, id;
  std::vector<std::string> ids;
  auto add_json = [&json](CLI::App* command) {
    command->add_flag("--json", json, "print JSON instead of a table");
  };
  auto add_queue = [&queue](CLI::App* command) {
    command->add_option("QUEUE", queue, "queue name")->required();
  };

  CLI::App* queues = app.add_subcommand("queues", "every queue with its counts per state");
  add_json(queues);

  CLI::App* stats = app.add_subcommand("stats", "one queue's counts and oldest due age");
  add_queue(stats);
  add_json(stats);

  jobwire::cli::ListJobsOptions list;
  CLI::App* jobs = app.add_subcommand("jobs", "list a queue's jobs in one state");
  add_queue(jobs);
  jobs->add_option("--state", list.state, "pending, active, completed or dead")
      ->capture_default_str();
  jobs->add_option("--type", list.type, "only jobs of this type");
  jobs->add_option("--limit", list.limit, "jobs per page (1..1000)")->capture_default_str();
  jobs->add_flag("--oldest-first", list.oldest_first, "next to run / first finished first");
  jobs->add_option("--page-token", list.page_token, "the token printed after a full page");
  add_json(jobs);

  std::string idempotency_key;
  CLI::App* job = app.add_subcommand("job", "one job in full, by id or by idempotency key");
  add_queue(job);
  CLI::Option* job_id = job->add_option("ID", id, "job id");
  job->add_option("--idempotency-key", idempotency_key,
                  "the job enqueued with this idempotency key (while its dedup window lasts), "
                  "instead of ID")
      ->excludes(job_id);
  add_json(job);

  CLI::App* cancel = app.add_subcommand(
      "cancel", "cancel a job: a pending one now, a running one once its worker stops it");
  add_queue(cancel);
  cancel->add_option("ID", id, "job id")->required();

  int64_t wait_timeout_ms = 0;
  CLI::App* wait = app.add_subcommand("wait", "wait for a job to finish; exit 0 when it completed");
  add_queue(wait);
  wait->add_option("ID", id, "job id")->required();
  wait->add_option("--timeout-ms", wait_timeout_ms, "give up after this long (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_json(wait);

  std::vector<std::string> watch_queues, watch_kinds;
  bool watch_details = false;
  int64_t watch_count = 0;
  CLI::App* watch = app.add_subcommand("watch", "print the events of queues as they happen");
  watch->add_option("QUEUE", watch_queues, "queue names")->required();
  watch->add_option("--kind", watch_kinds,
                    "only these event kinds (repeat the flag): enqueued, active, completed, "
                    "retry, dead, cancelled, lease_expired, released, redriven, deleted, "
                    "progress, cancel_requested, timed_out");
  watch->add_flag("--details", watch_details, "with results of completed and errors of failed jobs");
  watch->add_option("--count", watch_count, "stop after this many events (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_json(watch);

  bool all = false;
  CLI::App* retry = app.add_subcommand("retry-dead", "move dead jobs back to pending");
  add_queue(retry);
  retry->add_option("ID", ids, "dead job ids");
  retry->add_flag("--all", all, "every dead job (of --type, when given)");
  retry->add_option("--type", type, "only dead jobs of this type");
  add_json(retry);

  int64_t older_than_ms = 0;
  CLI::App* purge = app.add_subcommand("purge-dead", "delete dead jobs");
  add_queue(purge);
  purge->add_option("--older-than-ms", older_than_ms, "only jobs dead for longer than this")
      ->capture_default_str();
  add_json(purge);

  bool force = false;
  CLI::App* delete_queue =
      app.add_subcommand("delete-queue", "delete a queue and every job in it");
  add_queue(delete_queue);
  delete_queue->add_flag("--force", force, "delete active jobs too");
  add_json(delete_queue);

  CLI::App* pause = app.add_subcommand("pause", "stop handing the queue's jobs to workers");
  add_queue(pause);
  add_json(pause);
  CLI::App* resume = app.add_subcommand("resume", "resume a paused queue");
  add_queue(resume);
  add_json(resume);

  int create_partitions = 1;
  int update_partitions = 0;
  jobwire::cli::AdminCli::QueueFlags queue_flags;
  CLI::App* create_queue = app.add_subcommand(
      "create-queue", "create a queue (with --partitions, one spread over a Redis Cluster)");
  add_queue(create_queue);
  create_queue->add_option("--partitions", create_partitions, "1..256")->capture_default_str();
  create_queue->add_option("--default-job-timeout-ms", queue_flags.job_timeout_ms,
                           "timeout of a job enqueued without one (0: no limit; default: the "
                           "broker's --default_job_timeout_ms)");
  create_queue->add_option("--rate-limit", queue_flags.rate_limit,
                           "COUNT/INTERVAL_MS[/BURST]: at most COUNT jobs handed out per "
                           "INTERVAL_MS, BURST at once (default COUNT); one partition only");
  create_queue->add_option("--max-active", queue_flags.max_active,
                           "the most active jobs at once, 1..1000000 (default: no limit); one "
                           "partition only");
  create_queue->add_option("--max-active-per-key", queue_flags.max_active_per_key,
                           "the most active jobs per concurrency key, 1..1000000 (default: no "
                           "limit); one partition only");
  create_queue->add_option("--key-rate-limit", queue_flags.key_rate_limit,
                           "COUNT/INTERVAL_MS[/BURST]: at most COUNT jobs of each concurrency "
                           "key handed out per INTERVAL_MS, BURST at once (default COUNT); one "
                           "partition only");
  add_json(create_queue);
  CLI::App* update_queue = app.add_subcommand(
      "update-queue", "raise a queue's partition count, set its default job timeout or limits");
  add_queue(update_queue);
  update_queue->add_option("--partitions", update_partitions,
                           "1..256, at least the current count (default: unchanged)");
  update_queue->add_option("--default-job-timeout-ms", queue_flags.job_timeout_ms,
                           "timeout of a job enqueued without one (0: no limit; -1: the "
                           "broker's default again; default: unchanged)");
  update_queue->add_option("--rate-limit", queue_flags.rate_limit,
                           "COUNT/INTERVAL_MS[/BURST], or off to remove it (default: unchanged)");
  update_queue->add_option("--max-active", queue_flags.max_active,
                           "the most active jobs at once, 0 to remove the limit (default: "
                           "unchanged)");
  update_queue->add_option("--max-active-per-key", queue_flags.max_active_per_key,
                           "the most active jobs per concurrency key, 0 to remove the limit "
                           "(default: unchanged)");
  update_queue->add_option("--key-rate-limit", queue_flags.key_rate_limit,
                           "the rate limit of each concurrency key: COUNT/INTERVAL_MS[/BURST], "
                           "or off to remove it (default: unchanged)");
  add_json(update_queue);

  jobwire::cli::EnqueueOptions enqueue_options;
  CLI::App* enqueue = app.add_subcommand("enqueue", "enqueue one job (for trying things out)");
  add_queue(enqueue);
  enqueue->add_option("TYPE", type, "job type")->required();
  CLI::Option* json_payload =
      enqueue->add_option("--json", enqueue_options.json, "payload as JSON");
  enqueue->add_option("--payload", enqueue_options.payload, "payload as raw text")
      ->excludes(json_payload);
  enqueue->add_option("--priority", enqueue_options.priority, "-1000..1000");
  enqueue->add_option("--delay-ms", enqueue_options.delay_ms, "run no earlier than now + this");
  enqueue->add_option("--max-attempts", enqueue_options.max_attempts, "1..1000");
  enqueue->add_option("--idempotency-key", enqueue_options.idempotency_key, "dedup key");
  enqueue->add_option("--concurrency-key", enqueue_options.concurrency_key,
                      "key of the queue's --max-active-per-key limit");
  enqueue->add_option("--timeout-ms", enqueue_options.timeout_ms,
                      "longest a run may take (0: the broker's default)");
  enqueue->add_option("--depends-on", enqueue_options.depends_on,
                      "jobs that must complete first: ids of the queue's jobs, or "
                      "<queue>/<id> for a job of another queue")
      ->delimiter(',');
  enqueue->add_flag("--run-after-failed-dependency", enqueue_options.run_after_failed_dependency,
                    "run even when a job of --depends-on ends dead");

  std::string schedule_name;
  jobwire::cli::ScheduleOptions schedule_options;
  jobwire::cli::EnqueueOptions schedule_job;
  CLI::App* put_schedule = app.add_subcommand(
      "put-schedule", "create or replace a schedule that enqueues a job on a cron or interval");
  put_schedule->add_option("NAME", schedule_name, "schedule name")->required();
  add_queue(put_schedule);
  put_schedule->add_option("TYPE", type, "type of the jobs it enqueues")->required();
  CLI::Option* cron = put_schedule->add_option(
      "--cron", schedule_options.cron,
      "cron expression: 5 fields (minute hour day month weekday) or 6 (seconds first)");
  put_schedule->add_option("--every-ms", schedule_options.interval_ms,
                           "a fixed interval instead of --cron (>= 1000)")
      ->excludes(cron);
  put_schedule->add_option("--tz", schedule_options.time_zone,
                           "IANA time zone of --cron (default UTC)");
  put_schedule->add_option("--jitter-ms", schedule_options.jitter_ms,
                           "each run's job is due up to this long after its instant");
  put_schedule->add_option("--start-at-ms", schedule_options.start_at_ms,
                           "no run before this (ms since the epoch)");
  put_schedule->add_option("--end-at-ms", schedule_options.end_at_ms,
                           "no run after this (ms since the epoch)");
  put_schedule->add_option("--catch-up", schedule_options.catch_up,
                           "runs missed while no broker ran: skip, or once (one run for all)")
      ->capture_default_str();
  CLI::Option* schedule_json =
      put_schedule->add_option("--json-payload", schedule_job.json, "payload as JSON");
  put_schedule->add_option("--payload", schedule_job.payload, "payload as raw text")
      ->excludes(schedule_json);
  put_schedule->add_option("--priority", schedule_job.priority, "-1000..1000");
  put_schedule->add_option("--max-attempts", schedule_job.max_attempts, "1..1000");
  put_schedule->add_option("--job-timeout-ms", schedule_job.timeout_ms,
                           "longest a run of the job may take (0: the broker's default)");
  add_json(put_schedule);
  CLI::App* schedules = app.add_subcommand("schedules", "every schedule with its next and last run");
  add_json(schedules);
  CLI::App* workers = app.add_subcommand(
      "workers", "the workers connected now: the Claim streams open on every broker replica");
  add_json(workers);
  CLI::App* delete_schedule = app.add_subcommand("delete-schedule", "remove a schedule");
  delete_schedule->add_option("NAME", schedule_name, "schedule name")->required();
  add_json(delete_schedule);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; a usage error prints and exits 2.
    return app.exit(e) == 0 ? 0 : 2;
  }

  connection.address = addr;
  connection.timeout = absl::Milliseconds(timeout_ms);
  AdminCli cli(std::move(connection), &std::cout, json);
  absl::Status status = cli.config_error();
  if (!status.ok()) {
    // A TLS file could not be read: reported below, nothing is called.
  } else if (*queues) {
    status = cli.Queues();
  } else if (*stats) {
    status = cli.Stats(queue);
  } else if (*jobs) {
    status = cli.Jobs(queue, list);
  } else if (*job) {
    status = cli.Job(queue, id, idempotency_key);
  } else if (*cancel) {
    status = cli.Cancel(queue, id);
  } else if (*wait) {
    status = cli.Wait(queue, id, wait_timeout_ms);
  } else if (*watch) {
    status = cli.Watch(watch_queues, watch_kinds, watch_details, watch_count);
  } else if (*retry) {
    status = cli.RetryDead(queue, ids, all, type);
  } else if (*delete_queue) {
    status = cli.DeleteQueue(queue, force);
  } else if (*purge) {
    status = cli.PurgeDead(queue, older_than_ms);
  } else if (*pause || *resume) {
    status = cli.Pause(queue, static_cast<bool>(*pause));
  } else if (*create_queue) {
    queue_flags.partitions = create_partitions;
    status = cli.SetQueue(queue, queue_flags, /*create=*/true);
  } else if (*update_queue) {
    queue_flags.partitions = update_partitions;
    status = cli.SetQueue(queue, queue_flags, /*create=*/false);
  } else if (*enqueue) {
    status = cli.Enqueue(queue, type, enqueue_options);
  } else if (*put_schedule) {
    status = cli.PutSchedule(schedule_name, queue, type, schedule_options, schedule_job);
  } else if (*schedules) {
    status = cli.Schedules();
  } else if (*delete_schedule) {
    status = cli.DeleteSchedule(schedule_name);
  } else if (*workers) {
    status = cli.Workers();
  }
  if (!status.ok()) {
    std::cerr << "jobwire: " << absl::StatusCodeToString(status.code()) << ": "
              << status.message() << "\n";
    return 1;
  }
  return 0;
}
