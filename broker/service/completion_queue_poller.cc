#include "broker/service/completion_queue_poller.h"

#include <pthread.h>

#include <utility>

#include "broker/service/cq_reactors.h"

namespace jobwire::service {

CompletionQueuePoller::CompletionQueuePoller(std::unique_ptr<grpc::ServerCompletionQueue> cq)
    : cq_(std::move(cq)) {}

CompletionQueuePoller::~CompletionQueuePoller() { Stop(); }

void CompletionQueuePoller::Start() {
  thread_ = std::thread([this] { Run(); });
  pthread_setname_np(thread_.native_handle(), "jw-grpc-cq");
}

void CompletionQueuePoller::Stop() {
  if (stopped_) return;
  stopped_ = true;
  cq_->Shutdown();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    Run();  // never started: drain here
  }
}

void CompletionQueuePoller::Run() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_->Next(&tag, &ok)) static_cast<CqTag*>(tag)->Complete(ok);
}

}  // namespace jobwire::service
