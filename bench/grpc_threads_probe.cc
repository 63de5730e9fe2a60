// grpc_threads_probe: what one unary call costs a gRPC C++ server in thread
// wake-ups, by API, with no Redis and no jobwire logic: the floor under the
// broker's context switches per job (bench/performance_notes.md, "Broker
// CPU and context switches per job").
//
//   grpc_threads_probe --role=server --api=callback|async [--hop] --port=P
//   grpc_threads_probe --role=client --port=P --calls=5000 --rate=1000
//
// The server implements BrokerService.Enqueue only and answers each call
// with an empty EnqueueResponse: inline, or, with --hop, from a second
// thread the call is handed to and back (as the broker hands each request to
// its Redis event loop). --api=callback is the callback API (its
// completions run on gRPC's own threads; the broker used it until it moved
// to the other); --api=async is the completion queue API with one thread of
// the server's own calling Next (as the broker serves now) (--mixed: with
// a service on the callback API beside it, never called). After the
// first --warmup calls the server reads its threads' context switches
// (/proc/self/task/*/status) and its CPU time (getrusage), again after
// --calls more, and prints one JSON line: switches and CPU µs per call. The
// client sends one call at a time at --rate calls/s (open loop pacing by the
// schedule, as the side-by-side latency runs) and prints its latency.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "jobwire/v1/broker.grpc.pb.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, role, "server", "server or client");
ABSL_FLAG(std::string, api, "callback", "server: callback or async");
ABSL_FLAG(bool, hop, false, "server: answer from a second thread");
ABSL_FLAG(bool, mixed, false,
          "server, --api=async: also register a service on the callback API (AdminService, "
          "never called), as a broker that moves only some RPCs would");
ABSL_FLAG(int, port, 50990, "port on 127.0.0.1");
ABSL_FLAG(int, warmup, 500, "calls before the server starts counting");
ABSL_FLAG(int, calls, 5000, "calls counted (the client sends warmup + calls)");
ABSL_FLAG(double, rate, 1000, "client: calls per second");

namespace {

namespace v1 = jobwire::v1;

int64_t Switches() {
  int64_t total = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 ||
          line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
        total += std::stoll(line.substr(line.find(':') + 1));
      }
    }
  }
  return total;
}

int64_t CpuMicros() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000LL + usage.ru_utime.tv_usec +
         usage.ru_stime.tv_usec;
}

// Counts calls; reads the process's switches and CPU at the warm-up mark and
// at the end, then prints them per call.
class Meter {
 public:
  Meter(std::string label, int warmup, int calls)
      : label_(std::move(label)), warmup_(warmup), calls_(calls) {}
  void Count() {
    const int n = ++seen_;
    if (n == warmup_) {
      switches_ = Switches();
      cpu_ = CpuMicros();
      threads_ = Threads();
    } else if (n == warmup_ + calls_) {
      const double switches = static_cast<double>(Switches() - switches_) / calls_;
      const double cpu = static_cast<double>(CpuMicros() - cpu_) / calls_;
      std::cout << nlohmann::json{{"server", label_},
                                  {"switches_per_call", switches},
                                  {"cpu_us_per_call", cpu},
                                  {"threads", threads_}}
                       .dump()
                << std::endl;
    }
  }

 private:
  static int Threads() {
    int n = 0;
    for ([[maybe_unused]] const auto& task :
         std::filesystem::directory_iterator("/proc/self/task")) {
      ++n;
    }
    return n;
  }
  const std::string label_;
  const int warmup_;
  const int calls_;
  std::atomic<int> seen_{0};
  int64_t switches_ = 0;
  int64_t cpu_ = 0;
  int threads_ = 0;
};

// The second thread of --hop: runs what it is handed, in order.
class Hop {
 public:
  Hop() : thread_([this] { Run(); }) {}
  ~Hop() {
    Post(nullptr);
    thread_.join();
  }
  void Post(std::function<void()> fn) {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(fn));
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> fn;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](std::deque<std::function<void()>>* q) { return !q->empty(); }, &queue_));
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      if (!fn) return;
      fn();
    }
  }
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class CallbackServer final : public v1::BrokerService::CallbackService {
 public:
  CallbackServer(Meter* meter, Hop* hop) : meter_(meter), hop_(hop) {}
  grpc::ServerUnaryReactor* Enqueue(grpc::CallbackServerContext* context,
                                    const v1::EnqueueRequest*, v1::EnqueueResponse*) override {
    meter_->Count();
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (hop_ == nullptr) {
      reactor->Finish(grpc::Status::OK);
    } else {
      hop_->Post([reactor] { reactor->Finish(grpc::Status::OK); });
    }
    return reactor;
  }

 private:
  Meter* const meter_;
  Hop* const hop_;
};

// One call of the completion-queue API: requested, answered, then deleted.
class AsyncCall {
 public:
  AsyncCall(v1::BrokerService::AsyncService* service, grpc::ServerCompletionQueue* cq,
            Meter* meter, Hop* hop)
      : service_(service), cq_(cq), meter_(meter), hop_(hop), responder_(&context_) {
    service_->RequestEnqueue(&context_, &request_, &responder_, cq_, cq_, this);
  }
  // The completion queue returned this call's tag.
  void Proceed(bool ok) {
    if (answered_ || !ok) {
      delete this;
      return;
    }
    new AsyncCall(service_, cq_, meter_, hop_);  // the next call
    meter_->Count();
    answered_ = true;
    if (hop_ == nullptr) {
      responder_.Finish(response_, grpc::Status::OK, this);
    } else {
      hop_->Post([this] { responder_.Finish(response_, grpc::Status::OK, this); });
    }
  }

 private:
  v1::BrokerService::AsyncService* const service_;
  grpc::ServerCompletionQueue* const cq_;
  Meter* const meter_;
  Hop* const hop_;
  grpc::ServerContext context_;
  v1::EnqueueRequest request_;
  v1::EnqueueResponse response_;
  grpc::ServerAsyncResponseWriter<v1::EnqueueResponse> responder_;
  bool answered_ = false;
};

int Serve() {
  const std::string api = absl::GetFlag(FLAGS_api);
  const bool hop = absl::GetFlag(FLAGS_hop);
  Meter meter(api + (absl::GetFlag(FLAGS_mixed) ? "+mixed" : "") + (hop ? "+hop" : ""), absl::GetFlag(FLAGS_warmup), absl::GetFlag(FLAGS_calls));
  std::unique_ptr<Hop> hopper = hop ? std::make_unique<Hop>() : nullptr;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(absl::GetFlag(FLAGS_port)),
                           grpc::InsecureServerCredentials());
  if (api == "callback") {
    CallbackServer service(&meter, hopper.get());
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    std::cout << "ready" << std::endl;
    server->Wait();
    return 0;
  }
  if (api != "async") {
    std::cerr << "--api: callback or async" << std::endl;
    return 2;
  }
  v1::BrokerService::AsyncService service;
  builder.RegisterService(&service);
  v1::AdminService::CallbackService callback_service;
  if (absl::GetFlag(FLAGS_mixed)) builder.RegisterService(&callback_service);
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  new AsyncCall(&service, cq.get(), &meter, hopper.get());
  std::cout << "ready" << std::endl;
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<AsyncCall*>(tag)->Proceed(ok);
  return 0;
}

int Call() {
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(absl::GetFlag(FLAGS_port)),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::BrokerService::NewStub(channel);
  const int total = absl::GetFlag(FLAGS_warmup) + absl::GetFlag(FLAGS_calls);
  const absl::Duration interval = absl::Seconds(1) / absl::GetFlag(FLAGS_rate);
  std::vector<double> latency_ms;
  latency_ms.reserve(total);
  v1::EnqueueRequest request;
  request.set_queue("probe");
  const absl::Time start = absl::Now();
  for (int i = 0; i < total; ++i) {
    const absl::Time due = start + i * interval;
    absl::SleepFor(due - absl::Now());
    grpc::ClientContext context;
    v1::EnqueueResponse response;
    grpc::Status status = stub->Enqueue(&context, request, &response);
    if (!status.ok()) {
      std::cerr << "call failed: " << status.error_message() << std::endl;
      return 1;
    }
    latency_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - due));
  }
  std::sort(latency_ms.begin(), latency_ms.end());
  std::cout << nlohmann::json{{"client_p50_ms", latency_ms[latency_ms.size() / 2]},
                              {"client_p99_ms", latency_ms[latency_ms.size() * 99 / 100]}}
                   .dump()
            << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return absl::GetFlag(FLAGS_role) == "client" ? Call() : Serve();
}
