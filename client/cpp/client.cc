#include "client/cpp/client.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cpp/backoff.h"
#include "client/cpp/error_details.h"

namespace jobwire::client {
namespace {

// The largest message the broker sends: a job with a 64 MiB payload.
constexpr int kMaxMessageBytes = 64 << 20;

void FillRequest(absl::string_view queue, absl::string_view type, absl::string_view payload,
                 const EnqueueOptions& options, v1::EnqueueRequest* request) {
  request->set_queue(std::string(queue));
  request->set_type(std::string(type));
  request->set_payload(std::string(payload));
  request->set_priority(options.priority);
  request->set_delay_ms(options.delay_ms);
  request->set_run_at_ms(options.run_at_ms);
  request->set_max_attempts(options.max_attempts);
  request->set_idempotency_key(options.idempotency_key);
  request->set_concurrency_key(options.concurrency_key);
  request->set_backoff_base_ms(options.backoff_base_ms);
  request->set_backoff_max_ms(options.backoff_max_ms);
  if (options.completed_retention_ms) {
    request->set_completed_retention_ms(*options.completed_retention_ms);
  }
  request->set_timeout_ms(options.timeout_ms);
  request->mutable_headers()->insert(options.headers.begin(), options.headers.end());
  for (const std::string& parent : options.depends_on) request->add_depends_on(parent);
  request->set_run_after_failed_dependency(options.run_after_failed_dependency);
  for (int parent : options.depends_on_batch_index) request->add_depends_on_batch_index(parent);
}

}  // namespace

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  AttachErrorDetails(status.error_details(), &out);
  return out;
}

std::string ResolveAddress(absl::string_view address) {
  if (!address.empty()) return std::string(address);
  const char* env = std::getenv("JOBWIRE_ADDR");
  if (env != nullptr && *env != '\0') return env;
  return "localhost:50051";
}

namespace {

// `pem` itself when it is PEM text, else the content of the file it names.
absl::StatusOr<std::string> LoadPem(const std::string& pem) {
  if (pem.empty() || absl::StrContains(pem, "-----BEGIN")) return pem;
  std::ifstream in(pem, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read PEM file ", pem));
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// The channel credentials `options` ask for; `error` gets a file error.
std::shared_ptr<grpc::ChannelCredentials> MakeCredentials(const ClientOptions& options,
                                                          absl::Status* error) {
  if (!options.tls && options.tls_root_ca.empty() && options.tls_client_cert.empty() &&
      options.tls_client_key.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  for (auto [source, target] : {std::pair{&options.tls_root_ca, &ssl.pem_root_certs},
                                std::pair{&options.tls_client_cert, &ssl.pem_cert_chain},
                                std::pair{&options.tls_client_key, &ssl.pem_private_key}}) {
    absl::StatusOr<std::string> pem = LoadPem(*source);
    if (!pem.ok()) {
      *error = pem.status();
      continue;
    }
    *target = *std::move(pem);
  }
  return grpc::SslCredentials(ssl);
}

std::string ResolveAuthorization(const std::string& token) {
  if (!token.empty()) return absl::StrCat("Bearer ", token);
  const char* env = std::getenv("JOBWIRE_TOKEN");
  if (env != nullptr && *env != '\0') return absl::StrCat("Bearer ", env);
  return "";
}

// The broker went away while a wait or a live subscription was open: call
// again. UNAVAILABLE, or CANCELLED, which this client never causes on a
// stream it still reads: gRPC core ends a call that reached a broker just as
// it began to shut down with CANCELLED (grpc/grpc#41785).
bool BrokerWentAway(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsCancelled(status);
}

}  // namespace

static std::shared_ptr<grpc::Channel> MakeChannel(
    const std::string& address, std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  // A broker that restarts should be found again within a second or two
  // (a worker's Ack retries run only until its lease ends):
  // - gRPC's default reconnect backoff grows to 2 minutes: from 100 ms to 5 s;
  // - after a failed connect the channel re-resolves the address, and gRPC
  //   core's DNS resolver waits at least 30 s between resolutions by
  //   default, every call failing at once meanwhile: at most 4 a second;
  // - round_robin, not pick_first: gRPC 1.51's pick_first, given the
  //   re-resolved address while in TRANSIENT_FAILURE, stayed idle and
  //   connected to nothing until the process asked again, seconds later
  //   (seen with GRPC_TRACE=pick_first); round_robin reconnects each address
  //   by itself, and spreads calls over the addresses a name resolves to
  //   (the replicas behind a headless Service);
  // - gRPC core takes GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the minimum
  //   connect timeout (doc/connection-backoff.md, MIN_CONNECT_TIMEOUT), not
  //   a backoff: 5 s, as the Go client's MinConnectTimeout.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, 250);
  args.SetLoadBalancingPolicyName("round_robin");
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  // The broker accepts payloads (and results) of up to 64 MiB; gRPC's default
  // receive limit is 4 MiB.
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  return grpc::CreateCustomChannel(address, credentials, args);
}

Client::Client(ClientOptions options)
    : address_(ResolveAddress(options.address)),
      timeout_(options.timeout),
      authorization_(ResolveAuthorization(options.token)),
      channel_(MakeChannel(address_, MakeCredentials(options, &config_error_))),
      stub_(v1::BrokerService::NewStub(channel_)) {}

void Client::SetDeadline(grpc::ClientContext* context, absl::Duration timeout) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + std::min(timeout, timeout_)));
  if (!authorization_.empty()) context->AddMetadata("authorization", authorization_);
}

absl::StatusOr<Enqueued> Client::Enqueue(absl::string_view queue, absl::string_view type,
                                         absl::string_view payload,
                                         const EnqueueOptions& options) {
  v1::EnqueueRequest request;
  FillRequest(queue, type, payload, options, &request);
  v1::EnqueueResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context);
  grpc::Status status = stub_->Enqueue(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return Enqueued{response.job_id(), response.duplicate()};
}

absl::StatusOr<Enqueued> Client::EnqueueJson(absl::string_view queue, absl::string_view type,
                                             const nlohmann::json& payload,
                                             const EnqueueOptions& options) {
  return Enqueue(queue, type, absl::string_view(payload.dump()), options);
}

absl::StatusOr<std::vector<absl::StatusOr<Enqueued>>> Client::EnqueueBatch(
    absl::string_view queue, const std::vector<BatchJob>& jobs) {
  v1::EnqueueBatchRequest request;
  for (const BatchJob& job : jobs) {
    FillRequest(queue, job.type, job.payload, job.options, request.add_jobs());
  }
  v1::EnqueueBatchResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context);
  grpc::Status status = stub_->EnqueueBatch(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  std::vector<absl::StatusOr<Enqueued>> results;
  results.reserve(response.results_size());
  for (const v1::EnqueueResult& result : response.results()) {
    if (result.code() != 0) {
      absl::Status error(static_cast<absl::StatusCode>(result.code()), result.message());
      AttachReason(result.reason(), &error);
      results.emplace_back(std::move(error));
    } else {
      results.emplace_back(Enqueued{result.job_id(), result.duplicate()});
    }
  }
  return results;
}

absl::StatusOr<v1::Job> Client::GetJob(absl::string_view queue, absl::string_view job_id) {
  v1::GetJobRequest request;
  request.set_queue(std::string(queue));
  request.set_job_id(std::string(job_id));
  return GetJob(request);
}

absl::StatusOr<v1::Job> Client::GetJobByIdempotencyKey(absl::string_view queue,
                                                       absl::string_view key) {
  v1::GetJobRequest request;
  request.set_queue(std::string(queue));
  request.set_idempotency_key(std::string(key));
  return GetJob(request);
}

absl::StatusOr<v1::Job> Client::GetJob(const v1::GetJobRequest& request) {
  v1::GetJobResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context);
  grpc::Status status = stub_->GetJob(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return std::move(*response.mutable_job());
}

absl::StatusOr<v1::Job> Client::WaitJob(absl::string_view queue, absl::string_view job_id,
                                        const WaitOptions& options) {
  if (!config_error_.ok()) return config_error_;
  const absl::Time until = options.timeout == absl::InfiniteDuration()
                               ? absl::InfiniteFuture()
                               : absl::Now() + options.timeout;
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(5));
  while (true) {
    v1::WaitJobRequest request;
    request.set_queue(std::string(queue));
    request.set_job_id(std::string(job_id));
    if (until != absl::InfiniteFuture()) {
      // The broker ends the wait (WAIT_TIMEOUT); at least 1 ms, since 0
      // means no limit.
      request.set_timeout_ms(std::max<int64_t>(1, absl::ToInt64Milliseconds(until - absl::Now())));
    }
    grpc::ClientContext context;
    if (!authorization_.empty()) context.AddMetadata("authorization", authorization_);
    if (until != absl::InfiniteFuture()) {
      // A broker that does not answer at all is bounded too.
      context.set_deadline(absl::ToChronoTime(until + timeout_));
    }
    std::unique_ptr<grpc::ClientReader<v1::WaitJobResponse>> reader =
        stub_->WaitJob(&context, request);
    v1::WaitJobResponse response;
    std::optional<v1::Job> last;
    while (reader->Read(&response)) {
      backoff.Reset();
      if (options.on_update) options.on_update(response.job());
      last = std::move(*response.mutable_job());
    }
    grpc::Status status = reader->Finish();
    if (status.ok() && last.has_value()) return *std::move(last);
    if (status.ok()) return absl::InternalError("WaitJob ended without a job");
    absl::Status ended = FromGrpc(status);
    if (!BrokerWentAway(ended)) return ended;
    const absl::Duration wait = backoff.Next();
    if (absl::Now() + wait >= until) return ended;
    absl::SleepFor(wait);
  }
}

absl::Status Client::Subscribe(const std::vector<std::string>& queues,
                               const SubscribeOptions& options) {
  if (!config_error_.ok()) return config_error_;
  v1::SubscribeRequest request;
  for (const std::string& queue : queues) request.add_queues(queue);
  for (v1::EventKind kind : options.kinds) request.add_kinds(kind);
  request.set_include_details(options.include_details);
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(5));
  bool was_live = false;
  while (true) {
    grpc::ClientContext context;
    if (!authorization_.empty()) context.AddMetadata("authorization", authorization_);
    std::unique_ptr<grpc::ClientReader<v1::SubscribeResponse>> reader =
        stub_->Subscribe(&context, request);
    v1::SubscribeResponse response;
    bool stop = false;
    while (!stop && reader->Read(&response)) {
      if (response.subscribed()) {
        backoff.Reset();
        if (!was_live && options.on_subscribed) options.on_subscribed();
        if (was_live && options.on_missed && !options.on_missed()) stop = true;
        was_live = true;
      }
      if (!stop && response.events_missed() && options.on_missed && !options.on_missed()) {
        stop = true;
      }
      for (const v1::QueueEvent& event : response.events()) {
        if (stop) break;
        if (options.on_event && !options.on_event(event)) stop = true;
      }
    }
    if (stop) {
      context.TryCancel();
      reader->Finish();
      return absl::OkStatus();
    }
    absl::Status status = FromGrpc(reader->Finish());
    if (status.ok()) return absl::InternalError("Subscribe ended without an error");
    const std::string reason = ErrorReason(status);
    const bool again =
        was_live && (BrokerWentAway(status) ||
                     (absl::IsResourceExhausted(status) &&
                      (reason == reason::kSubscriberTooSlow ||
                       reason == reason::kTooManySubscriptions)));
    if (!again) return status;
    absl::SleepFor(std::max(backoff.Next(), ErrorRetryDelay(status).value_or(absl::ZeroDuration())));
  }
}

absl::StatusOr<bool> Client::Cancel(absl::string_view queue, absl::string_view job_id) {
  v1::CancelRequest request;
  request.set_queue(std::string(queue));
  request.set_job_id(std::string(job_id));
  v1::CancelResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context);
  grpc::Status status = stub_->Cancel(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.cancel_requested();
}

absl::Status Client::ReportProgress(absl::string_view queue, absl::string_view job_id,
                                    absl::string_view lease_token,
                                    std::optional<int32_t> percent, std::string data) {
  v1::ReportProgressRequest request;
  request.set_queue(std::string(queue));
  request.set_job_id(std::string(job_id));
  request.set_lease_token(std::string(lease_token));
  if (percent) request.set_percent(*percent);
  request.set_data(std::move(data));
  v1::ReportProgressResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context);
  return FromGrpc(stub_->ReportProgress(&context, request, &response));
}

absl::Status Client::Ack(absl::string_view queue, absl::string_view job_id,
                         absl::string_view lease_token, absl::string_view result) {
  v1::AckRequest request;
  request.set_queue(std::string(queue));
  request.set_job_id(std::string(job_id));
  request.set_lease_token(std::string(lease_token));
  request.set_result(std::string(result));
  v1::AckResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context);
  return FromGrpc(stub_->Ack(&context, request, &response));
}

absl::StatusOr<std::vector<absl::Status>> Client::AckBatch(const v1::AckBatchRequest& request) {
  v1::AckBatchResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context);
  grpc::Status status = stub_->AckBatch(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return AckResults(response, request.acks_size());
}

template <typename Answer>
absl::StatusOr<std::vector<absl::Status>> Client::AckResults(const Answer& answer, int acks) {
  if (answer.results_size() != acks) {
    return absl::InternalError("AckBatch answered a different number of results");
  }
  std::vector<absl::Status> results;
  results.reserve(answer.results_size());
  for (const v1::AckResult& result : answer.results()) {
    absl::Status outcome(static_cast<absl::StatusCode>(result.code()), result.message());
    AttachReason(result.reason(), &outcome);
    results.push_back(std::move(outcome));
  }
  return results;
}

template absl::StatusOr<std::vector<absl::Status>> Client::AckResults(
    const v1::AckBatchResponse& answer, int acks);
template absl::StatusOr<std::vector<absl::Status>> Client::AckResults(
    const v1::WorkAcksAnswer& answer, int acks);

absl::StatusOr<v1::FailResponse> Client::Fail(const v1::FailRequest& request) {
  v1::FailResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context);
  grpc::Status status = stub_->Fail(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<int64_t> Client::ExtendLease(absl::string_view queue, absl::string_view job_id,
                                            absl::string_view lease_token, int64_t lease_ms,
                                            absl::Duration timeout) {
  v1::ExtendLeaseRequest request;
  request.set_queue(std::string(queue));
  request.set_job_id(std::string(job_id));
  request.set_lease_token(std::string(lease_token));
  request.set_lease_ms(lease_ms);
  v1::ExtendLeaseResponse response;
  grpc::ClientContext context;
  if (!config_error_.ok()) return config_error_;
  SetDeadline(&context, timeout);
  grpc::Status status = stub_->ExtendLease(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.lease_expires_at_ms();
}

std::unique_ptr<grpc::ClientReader<v1::ClaimResponse>> Client::Claim(
    grpc::ClientContext* context, const v1::ClaimRequest& request) {
  if (!authorization_.empty()) context->AddMetadata("authorization", authorization_);
  if (!config_error_.ok()) context->TryCancel();
  return stub_->Claim(context, request);
}

std::unique_ptr<grpc::ClientReaderWriter<v1::WorkRequest, v1::WorkResponse>> Client::Work(
    grpc::ClientContext* context) {
  if (!authorization_.empty()) context->AddMetadata("authorization", authorization_);
  if (!config_error_.ok()) context->TryCancel();
  return stub_->Work(context);
}

}  // namespace jobwire::client
