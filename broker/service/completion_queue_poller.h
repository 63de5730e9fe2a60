// CompletionQueuePoller: the one thread that polls the server's completion
// queue and runs every event on it (each tag is a CqTag; see
// cq_reactors.h).
//
// Lifecycle: construct with the queue from ServerBuilder::AddCompletionQueue,
// Start once the server is built, and Stop after Server::Shutdown has
// returned (the thread must poll until then: calls that end during the
// shutdown complete on this queue). Stop shuts the queue down, runs what is
// left in it (requests for calls that never came, ok=false) and joins.
//
// Thread safety: Start and Stop from one thread; cq() from any.
#ifndef JOBWIRE_BROKER_SERVICE_COMPLETION_QUEUE_POLLER_H_
#define JOBWIRE_BROKER_SERVICE_COMPLETION_QUEUE_POLLER_H_

#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

namespace jobwire::service {

class CompletionQueuePoller {
 public:
  explicit CompletionQueuePoller(std::unique_ptr<grpc::ServerCompletionQueue> cq);
  ~CompletionQueuePoller();  // Stop

  CompletionQueuePoller(const CompletionQueuePoller&) = delete;
  CompletionQueuePoller& operator=(const CompletionQueuePoller&) = delete;

  grpc::ServerCompletionQueue* cq() const { return cq_.get(); }

  void Start();
  // Idempotent; a no-op before Start.
  void Stop();

 private:
  void Run();

  const std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_COMPLETION_QUEUE_POLLER_H_
