// The gRPC completion-queue API, dressed as the callback API's reactors.
//
// gRPC's callback API hands every call event between its own polling
// threads: about 5 thread switches per call before any work
// (bench/grpc_threads_probe.sh). With the completion-queue API one thread
// of ours polls a ServerCompletionQueue (CompletionQueuePoller) and runs
// every event itself. This header keeps the handlers' shape of the
// callback API on top of it:
//
//   - UnaryReactor: a unary handler gets one and calls Finish once, from
//     any thread (ServeUnary).
//   - StreamReactor<R, W>: the base of a streaming handler's reactor, with
//     the callback API's names: StartRead, StartWrite, StartWriteAndFinish,
//     Finish (any thread), and the reactions OnReadDone, OnWriteDone,
//     OnCancel, OnDone (on the polling thread). WriteReactor<W> is a
//     server-streaming one (no reads). ServeServerStream, ServeBidiStream.
//
// The rules are the callback API's: at most one read and one write
// outstanding; Finish once, after which nothing more is started; the
// reactor may call these from its constructor or the handler before gRPC
// has the call (they wait, in order, until it does). A write in progress
// holds a Finish back until it completes (a client that does not read
// holds it until the call is cancelled). OnCancel comes when the call
// ended without a Finish of its own reaching the client (the client
// cancelled, its deadline passed, the server shut down); the reactor
// still calls Finish. OnDone comes last, once the call is complete and no
// operation is outstanding; nothing of the call is used after it, so the
// reactor may delete itself there.
//
// Every event of every call runs on the thread that polls the queue, so
// reactions must not block.
#ifndef JOBWIRE_BROKER_SERVICE_CQ_REACTORS_H_
#define JOBWIRE_BROKER_SERVICE_CQ_REACTORS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace jobwire::service {

// What CompletionQueuePoller's queue carries: every tag is one.
class CqTag {
 public:
  virtual void Complete(bool ok) = 0;

 protected:
  ~CqTag() = default;
};

// A tag that calls `(owner->*fn)(ok)`.
template <typename Owner, void (Owner::*kFn)(bool)>
class MemberTag final : public CqTag {
 public:
  explicit MemberTag(Owner* owner) : owner_(owner) {}
  void Complete(bool ok) override { (owner_->*kFn)(ok); }

 private:
  Owner* const owner_;
};

// A unary call, as its handler sees it.
class UnaryReactor {
 public:
  // Sends the response (when `status` is OK) and `status`. Call once, from
  // any thread; the handler's request and response must stay untouched
  // from then on.
  virtual void Finish(const grpc::Status& status) = 0;

 protected:
  ~UnaryReactor() = default;
};

// Stands for "no reads" in StreamReactor<NoRead, W>.
struct NoRead {};

template <typename R, typename W>
class StreamCall;

template <typename R, typename W>
class StreamReactor {
 public:
  virtual ~StreamReactor() = default;

  // Reads the next message into `*message` (bidirectional streams only);
  // OnReadDone(false) when the client has half-closed or the call ended.
  void StartRead(R* message) {
    absl::MutexLock lock(&mu_);
    if (call_ != nullptr) {
      call_->Read(message);
    } else {
      backlog_read_ = message;
    }
  }
  // Writes `*message`, which stays untouched until OnWriteDone.
  void StartWrite(const W* message) {
    absl::MutexLock lock(&mu_);
    if (call_ != nullptr) {
      call_->Write(message);
    } else {
      backlog_write_ = message;
    }
  }
  void StartWriteAndFinish(const W* message, grpc::WriteOptions /*options*/,
                           const grpc::Status& status) {
    StartWrite(message);
    Finish(status);
  }
  void Finish(const grpc::Status& status) {
    absl::MutexLock lock(&mu_);
    if (call_ != nullptr) {
      call_->Finish(status);
    } else {
      backlog_finish_ = status;
    }
  }

  virtual void OnReadDone(bool /*ok*/) {}
  virtual void OnWriteDone(bool /*ok*/) {}
  virtual void OnCancel() {}
  virtual void OnDone() = 0;

 private:
  friend class StreamCall<R, W>;

  // Called once, by the call, when gRPC has it: starts what waited.
  void Bind(StreamCall<R, W>* call) {
    absl::MutexLock lock(&mu_);
    call_ = call;
    if (backlog_read_ != nullptr) call_->Read(backlog_read_);
    if (backlog_write_ != nullptr) call_->Write(backlog_write_);
    if (backlog_finish_.has_value()) call_->Finish(*backlog_finish_);
  }

  absl::Mutex mu_;
  StreamCall<R, W>* call_ ABSL_GUARDED_BY(mu_) = nullptr;
  R* backlog_read_ ABSL_GUARDED_BY(mu_) = nullptr;
  const W* backlog_write_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::optional<grpc::Status> backlog_finish_ ABSL_GUARDED_BY(mu_);
};

template <typename W>
using WriteReactor = StreamReactor<NoRead, W>;

// The state of one streaming call shared by both kinds: which operations
// are outstanding, a Finish held back behind a write, and when OnDone is
// due. The kind's gRPC stream object does the operations (StartOp*).
template <typename R, typename W>
class StreamCall {
 public:
  virtual ~StreamCall() = default;

  // From StreamReactor, with its mutex held.
  void Read(R* message) {
    absl::MutexLock lock(&mu_);
    reading_ = true;
    StartRead(message, &read_tag_);
  }
  void Write(const W* message) {
    absl::MutexLock lock(&mu_);
    writing_ = true;
    StartWrite(*message, &write_tag_);
  }
  void Finish(const grpc::Status& status) {
    absl::MutexLock lock(&mu_);
    if (finish_started_ || held_finish_.has_value()) return;
    if (writing_) {
      held_finish_ = status;
      return;
    }
    finish_started_ = true;
    StartFinish(status, &finish_tag_);
  }

 protected:
  StreamCall() = default;

  grpc::ServerContext* context() { return &context_; }
  // Asks for the done notification; call before requesting the call.
  void NotifyWhenDone() { context_.AsyncNotifyWhenDone(static_cast<CqTag*>(&done_tag_)); }
  // The call has arrived and `reactor` serves it.
  void Started(StreamReactor<R, W>* reactor) {
    reactor_ = reactor;
    reactor_->Bind(this);
  }

  // The kind's operations; each completes with `tag`.
  virtual void StartRead(R* message, CqTag* tag) = 0;
  virtual void StartWrite(const W& message, CqTag* tag) = 0;
  virtual void StartFinish(const grpc::Status& status, CqTag* tag) = 0;

 private:
  void ReadDone(bool ok) {
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
    }
    reactor_->OnReadDone(ok);
    MaybeDone();
  }
  void WriteDone(bool ok) {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (held_finish_.has_value()) {
        finish_started_ = true;
        StartFinish(*held_finish_, &finish_tag_);
      }
    }
    reactor_->OnWriteDone(ok);
    MaybeDone();
  }
  void FinishDone(bool /*ok*/) {
    {
      absl::MutexLock lock(&mu_);
      finish_done_ = true;
    }
    MaybeDone();
  }
  void Done(bool /*ok*/) {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
    }
    if (context_.IsCancelled()) reactor_->OnCancel();
    MaybeDone();
  }
  // On the polling thread, after each reaction.
  void MaybeDone() {
    {
      absl::MutexLock lock(&mu_);
      if (!done_ || !finish_done_ || reading_ || writing_) return;
    }
    reactor_->OnDone();
    delete this;
  }

  grpc::ServerContext context_;
  StreamReactor<R, W>* reactor_ = nullptr;  // set on the polling thread
  MemberTag<StreamCall, &StreamCall::ReadDone> read_tag_{this};
  MemberTag<StreamCall, &StreamCall::WriteDone> write_tag_{this};
  MemberTag<StreamCall, &StreamCall::FinishDone> finish_tag_{this};
  MemberTag<StreamCall, &StreamCall::Done> done_tag_{this};
  absl::Mutex mu_;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_started_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_done_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> held_finish_ ABSL_GUARDED_BY(mu_);
};

// One method's calls: requests the next call as soon as one arrives, so
// one request is always outstanding until the queue shuts down.
//
// `request(ctx, req, responder, tag)` asks gRPC for the method's next call
// (the generated AsyncService's Request<Method>, on the serving queue);
// `handler(ctx, req, resp, reactor)` serves it. `in_flight`, unless null,
// counts calls from arrival to Finish completed. Everything must outlive
// the queue's polling.
template <typename Req, typename Resp>
struct UnaryMethod {
  std::function<void(grpc::ServerContext*, Req*, grpc::ServerAsyncResponseWriter<Resp>*, void*)>
      request;
  std::function<void(grpc::ServerContext*, const Req*, Resp*, UnaryReactor*)> handler;
  std::atomic<int64_t>* in_flight;
};

template <typename Req, typename Resp>
class UnaryCall final : public CqTag, public UnaryReactor {
 public:
  // Requests the method's next call.
  static void Request(const UnaryMethod<Req, Resp>* method) { new UnaryCall(method); }

  void Complete(bool ok) override {
    if (!arrived_) {
      if (!ok) {  // the queue is shutting down
        delete this;
        return;
      }
      arrived_ = true;
      Request(method_);
      if (method_->in_flight != nullptr) ++*method_->in_flight;
      method_->handler(&context_, &request_, &response_, this);
      return;
    }
    if (method_->in_flight != nullptr) --*method_->in_flight;
    delete this;
  }
  void Finish(const grpc::Status& status) override {
    responder_.Finish(response_, status, static_cast<CqTag*>(this));
  }

 private:
  explicit UnaryCall(const UnaryMethod<Req, Resp>* method) : method_(method) {
    method_->request(&context_, &request_, &responder_, static_cast<CqTag*>(this));
  }

  const UnaryMethod<Req, Resp>* const method_;
  grpc::ServerContext context_;
  Req request_;
  Resp response_;
  grpc::ServerAsyncResponseWriter<Resp> responder_{&context_};
  bool arrived_ = false;  // polling thread only
};

// A server-streaming method: `handler(ctx, req)` returns the reactor.
template <typename Req, typename W>
struct ServerStreamMethod {
  std::function<void(grpc::ServerContext*, Req*, grpc::ServerAsyncWriter<W>*, void*)> request;
  std::function<WriteReactor<W>*(grpc::ServerContext*, const Req*)> handler;
};

template <typename Req, typename W>
class ServerStreamCall final : public StreamCall<NoRead, W>, public CqTag {
 public:
  static void Request(const ServerStreamMethod<Req, W>* method) { new ServerStreamCall(method); }

  void Complete(bool ok) override {  // the call arrived (or the queue shut down)
    if (!ok) {
      delete this;
      return;
    }
    Request(method_);
    this->Started(method_->handler(this->context(), &request_));
  }

 private:
  explicit ServerStreamCall(const ServerStreamMethod<Req, W>* method) : method_(method) {
    this->NotifyWhenDone();
    method_->request(this->context(), &request_, &stream_, static_cast<CqTag*>(this));
  }
  void StartRead(NoRead* /*message*/, CqTag* /*tag*/) override {}
  void StartWrite(const W& message, CqTag* tag) override { stream_.Write(message, tag); }
  void StartFinish(const grpc::Status& status, CqTag* tag) override {
    stream_.Finish(status, tag);
  }

  const ServerStreamMethod<Req, W>* const method_;
  Req request_;
  grpc::ServerAsyncWriter<W> stream_{this->context()};
};

// A bidirectional method: `handler(ctx)` returns the reactor.
template <typename R, typename W>
struct BidiStreamMethod {
  std::function<void(grpc::ServerContext*, grpc::ServerAsyncReaderWriter<W, R>*, void*)> request;
  std::function<StreamReactor<R, W>*(grpc::ServerContext*)> handler;
};

template <typename R, typename W>
class BidiStreamCall final : public StreamCall<R, W>, public CqTag {
 public:
  static void Request(const BidiStreamMethod<R, W>* method) { new BidiStreamCall(method); }

  void Complete(bool ok) override {
    if (!ok) {
      delete this;
      return;
    }
    Request(method_);
    this->Started(method_->handler(this->context()));
  }

 private:
  explicit BidiStreamCall(const BidiStreamMethod<R, W>* method) : method_(method) {
    this->NotifyWhenDone();
    method_->request(this->context(), &stream_, static_cast<CqTag*>(this));
  }
  void StartRead(R* message, CqTag* tag) override { stream_.Read(message, tag); }
  void StartWrite(const W& message, CqTag* tag) override { stream_.Write(message, tag); }
  void StartFinish(const grpc::Status& status, CqTag* tag) override {
    stream_.Finish(status, tag);
  }

  const BidiStreamMethod<R, W>* const method_;
  grpc::ServerAsyncReaderWriter<W, R> stream_{this->context()};
};

// Starts serving one method of `service` (a generated AsyncService) on
// `cq`: `request` is the method's Request<Method> member of the service,
// `handler` serves each call. The returned method must outlive the
// queue's polling; see UnaryMethod.
template <typename Service, typename Base, typename Req, typename Resp>
std::shared_ptr<void> ServeUnary(
    Service* service,
    void (Base::*request)(grpc::ServerContext*, Req*, grpc::ServerAsyncResponseWriter<Resp>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
    grpc::ServerCompletionQueue* cq,
    std::type_identity_t<std::function<void(grpc::ServerContext*, const Req*, Resp*, UnaryReactor*)>>
        handler,
    std::atomic<int64_t>* in_flight) {
  auto method = std::make_shared<UnaryMethod<Req, Resp>>();
  method->request = [service, request, cq](grpc::ServerContext* ctx, Req* req,
                                           grpc::ServerAsyncResponseWriter<Resp>* responder,
                                           void* tag) {
    (service->*request)(ctx, req, responder, cq, cq, tag);
  };
  method->handler = std::move(handler);
  method->in_flight = in_flight;
  UnaryCall<Req, Resp>::Request(method.get());
  return method;
}

// The same, with `handler` a member function of `owner`.
template <typename Service, typename Base, typename Req, typename Resp, typename Owner>
std::shared_ptr<void> ServeUnary(
    Service* service,
    void (Base::*request)(grpc::ServerContext*, Req*, grpc::ServerAsyncResponseWriter<Resp>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
    grpc::ServerCompletionQueue* cq, Owner* owner,
    void (Owner::*handler)(grpc::ServerContext*, const Req*, Resp*, UnaryReactor*),
    std::atomic<int64_t>* in_flight) {
  return ServeUnary(
      service, request, cq,
      [owner, handler](grpc::ServerContext* ctx, const Req* req, Resp* resp,
                       UnaryReactor* reactor) { (owner->*handler)(ctx, req, resp, reactor); },
      in_flight);
}

template <typename Service, typename Base, typename Req, typename W>
std::shared_ptr<void> ServeServerStream(
    Service* service,
    void (Base::*request)(grpc::ServerContext*, Req*, grpc::ServerAsyncWriter<W>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
    grpc::ServerCompletionQueue* cq,
    std::type_identity_t<std::function<WriteReactor<W>*(grpc::ServerContext*, const Req*)>>
        handler) {
  auto method = std::make_shared<ServerStreamMethod<Req, W>>();
  method->request = [service, request, cq](grpc::ServerContext* ctx, Req* req,
                                           grpc::ServerAsyncWriter<W>* stream, void* tag) {
    (service->*request)(ctx, req, stream, cq, cq, tag);
  };
  method->handler = std::move(handler);
  ServerStreamCall<Req, W>::Request(method.get());
  return method;
}

template <typename Service, typename Base, typename R, typename W>
std::shared_ptr<void> ServeBidiStream(
    Service* service,
    void (Base::*request)(grpc::ServerContext*, grpc::ServerAsyncReaderWriter<W, R>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*),
    grpc::ServerCompletionQueue* cq,
    std::type_identity_t<std::function<StreamReactor<R, W>*(grpc::ServerContext*)>> handler) {
  auto method = std::make_shared<BidiStreamMethod<R, W>>();
  method->request = [service, request, cq](grpc::ServerContext* ctx,
                                           grpc::ServerAsyncReaderWriter<W, R>* stream,
                                           void* tag) {
    (service->*request)(ctx, stream, cq, cq, tag);
  };
  method->handler = std::move(handler);
  BidiStreamCall<R, W>::Request(method.get());
  return method;
}

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_CQ_REACTORS_H_
