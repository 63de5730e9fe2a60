// RedisConnection: one transport connection to one Redis endpoint on a
// libevent loop: a bufferevent (plain TCP, or TLS through libevent's OpenSSL
// bufferevents), host names resolved asynchronously with evdns, commands
// formatted with hiredis' redisFormatCommandArgv and replies parsed by a
// hiredis redisReader fed from the input buffer. It knows nothing about
// commands and callbacks: RedisClient pairs replies with the commands it
// sent, and reconnects.
//
// Contract:
// - Open() starts resolving and connecting and returns at once. Exactly one
//   of these follows, on the loop thread: on_open (TCP connected and, with
//   TLS, the handshake done and the server's certificate verified), or
//   on_close (the attempt failed, or took more than 10 s).
// - After on_open, Send() queues bytes in the output buffer; they are written
//   when the socket is writable (commands sent in one loop iteration leave in
//   one write), never with a system call per command. on_reply runs once per
//   reply, in the order Redis sent them, until on_close.
// - on_close (error text, never a secret) is the last callback. It may
//   destroy this object; nothing touches the object after it returns.
// - The destructor closes the socket without calling any callback.
//
// Thread safety: loop thread only (construction included).
#ifndef JOBWIRE_BROKER_STORE_REDIS_CONNECTION_H_
#define JOBWIRE_BROKER_STORE_REDIS_CONNECTION_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "broker/store/redis_tls_context.h"
#include "broker/store/redis_url.h"

struct bufferevent;
struct event_base;
struct evdns_base;
struct redisReader;
struct redisReply;

namespace jobwire::store {

class RedisConnection {
 public:
  struct Callbacks {
    std::function<void()> on_open;
    // The reply is borrowed: freed when the callback returns.
    std::function<void(const redisReply& reply)> on_reply;
    // `during_tls_handshake`: TCP was up but the TLS handshake (or the
    // certificate verification) failed.
    std::function<void(const std::string& error, bool during_tls_handshake)> on_close;
  };

  // `base` and `dns` must outlive the connection; `tls` null for plain TCP,
  // else it must outlive the connection too.
  RedisConnection(event_base* base, evdns_base* dns, const RedisTlsContext* tls,
                  RedisEndpoint endpoint, Callbacks callbacks);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Starts connecting. An error here (no callback follows) means the attempt
  // could not even start (bad host name, out of memory). REQUIRES: once.
  absl::Status Open();

  // Queues one command. REQUIRES: on_open ran and on_close did not.
  void Send(int argc, const char** argv, const size_t* argvlen);

 private:
  static void OnRead(bufferevent* bev, void* arg);
  static void OnEvent(bufferevent* bev, short what, void* arg);
  void HandleEvent(short what);
  void ReadReplies();
  // Frees the bufferevent and calls on_close last.
  void Close(const std::string& error, bool during_tls_handshake);
  std::string ErrorText(short what) const;

  event_base* const base_;
  evdns_base* const dns_;
  const RedisTlsContext* const tls_;
  const RedisEndpoint endpoint_;
  Callbacks callbacks_;

  bufferevent* bev_ = nullptr;
  redisReader* reader_ = nullptr;
  bool open_ = false;
  // Set while Open() runs: a failure reported synchronously by libevent is
  // returned by Open() instead of calling on_close.
  bool opening_ = false;
  std::string open_error_;
  // Points at a flag on the stack of ReadReplies while it runs, so that it
  // notices when a reply callback destroyed this object.
  bool* destroyed_ = nullptr;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_CONNECTION_H_
