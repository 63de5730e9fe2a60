#include "broker/store/redis_connection.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/util.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"

namespace jobwire::store {
namespace {

constexpr int kConnectTimeoutSeconds = 10;

}  // namespace

RedisConnection::RedisConnection(event_base* base, evdns_base* dns, const RedisTlsContext* tls,
                                 RedisEndpoint endpoint, Callbacks callbacks)
    : base_(base),
      dns_(dns),
      tls_(tls),
      endpoint_(std::move(endpoint)),
      callbacks_(std::move(callbacks)) {}

RedisConnection::~RedisConnection() {
  if (destroyed_ != nullptr) *destroyed_ = true;
  if (bev_ != nullptr) bufferevent_free(bev_);  // closes the socket (and frees the SSL)
  if (reader_ != nullptr) redisReaderFree(reader_);
}

absl::Status RedisConnection::Open() {
  reader_ = redisReaderCreate();
  if (reader_ == nullptr) return absl::ResourceExhaustedError("redisReaderCreate failed");
  constexpr int kOptions = BEV_OPT_CLOSE_ON_FREE;
  if (tls_ == nullptr) {
    bev_ = bufferevent_socket_new(base_, -1, kOptions);
  } else {
    SSL* ssl = tls_->NewSsl(endpoint_.host);
    if (ssl == nullptr) {
      return absl::InternalError(absl::StrCat("cannot make a TLS session: ", DrainOpenSslErrors()));
    }
    // The bufferevent owns ssl from here on (freed with it).
    bev_ = bufferevent_openssl_socket_new(base_, -1, ssl, BUFFEREVENT_SSL_CONNECTING, kOptions);
    if (bev_ == nullptr) SSL_free(ssl);
    // A server that closes without close_notify (Redis on shutdown) is an
    // ordinary EOF, not an error.
    if (bev_ != nullptr) bufferevent_openssl_set_allow_dirty_shutdown(bev_, 1);
  }
  if (bev_ == nullptr) return absl::ResourceExhaustedError("cannot create a bufferevent");
  bufferevent_setcb(bev_, &RedisConnection::OnRead, nullptr, &RedisConnection::OnEvent, this);
  bufferevent_enable(bev_, EV_READ | EV_WRITE);
  // Connect and TLS handshake must finish in time (a black-holed address
  // would hang the attempt forever); cleared once open.
  const timeval connect_timeout{kConnectTimeoutSeconds, 0};
  bufferevent_set_timeouts(bev_, &connect_timeout, &connect_timeout);
  opening_ = true;
  const int rc =
      bufferevent_socket_connect_hostname(bev_, dns_, AF_UNSPEC, endpoint_.host.c_str(),
                                          endpoint_.port);
  opening_ = false;
  if (rc != 0 || !open_error_.empty()) {
    std::string error = open_error_.empty() ? ErrorText(BEV_EVENT_ERROR) : open_error_;
    bufferevent_free(bev_);
    bev_ = nullptr;
    return base::RedisUnavailableError(error);
  }
  return absl::OkStatus();
}

void RedisConnection::Send(int argc, const char** argv, const size_t* argvlen) {
  char* cmd = nullptr;
  const int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
  if (len < 0) return;  // out of memory; the reply never comes, as with a lost connection
  // Copied into the output buffer; the write happens once the loop sees the
  // socket writable, so every command of this iteration leaves together.
  bufferevent_write(bev_, cmd, static_cast<size_t>(len));
  redisFreeCommand(cmd);
}

void RedisConnection::OnRead(bufferevent*, void* arg) {
  static_cast<RedisConnection*>(arg)->ReadReplies();
}

void RedisConnection::ReadReplies() {
  evbuffer* in = bufferevent_get_input(bev_);
  const size_t total = evbuffer_get_length(in);
  // Feed every chain of the input buffer to the reader without linearizing.
  constexpr int kMaxVecs = 16;
  evbuffer_iovec vecs[kMaxVecs];
  size_t fed = 0;
  while (fed < total) {
    evbuffer_ptr start;
    evbuffer_ptr_set(in, &start, fed, EVBUFFER_PTR_SET);
    const int n = evbuffer_peek(in, static_cast<ev_ssize_t>(total - fed), &start, vecs, kMaxVecs);
    for (int i = 0; i < n && i < kMaxVecs; ++i) {
      if (redisReaderFeed(reader_, static_cast<const char*>(vecs[i].iov_base), vecs[i].iov_len) !=
          REDIS_OK) {
        Close("redis protocol error: out of memory", false);
        return;
      }
      fed += vecs[i].iov_len;
    }
    if (n <= 0) break;
  }
  evbuffer_drain(in, fed);

  bool destroyed = false;
  destroyed_ = &destroyed;
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(reader_, &reply) != REDIS_OK) {
      destroyed_ = nullptr;
      Close(absl::StrCat("redis protocol error: ", reader_->errstr), false);
      return;
    }
    if (reply == nullptr) break;
    callbacks_.on_reply(*static_cast<redisReply*>(reply));
    freeReplyObject(reply);
    if (destroyed) return;
  }
  destroyed_ = nullptr;
}

void RedisConnection::OnEvent(bufferevent*, short what, void* arg) {
  static_cast<RedisConnection*>(arg)->HandleEvent(what);
}

void RedisConnection::HandleEvent(short what) {
  if (what & BEV_EVENT_CONNECTED) {
    open_ = true;
    bufferevent_set_timeouts(bev_, nullptr, nullptr);
    const int one = 1;
    setsockopt(bufferevent_getfd(bev_), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    callbacks_.on_open();
    return;
  }
  if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) == 0) return;
  std::string error = ErrorText(what);
  if (opening_) {
    open_error_ = std::move(error);
    return;
  }
  // With TLS, an error before BEV_EVENT_CONNECTED that OpenSSL explains
  // (ErrorText's "TLS:" part) is the handshake or the certificate check.
  const bool handshake =
      tls_ != nullptr && !open_ && error.find(": TLS: ") != std::string::npos;
  Close(error, handshake);
}

std::string RedisConnection::ErrorText(short what) const {
  std::string where = absl::StrCat(endpoint_.host, ":", endpoint_.port);
  if (bev_ != nullptr) {
    if (int dns = bufferevent_socket_get_dns_error(bev_); dns != 0) {
      return absl::StrCat("cannot resolve ", endpoint_.host, ": ", evutil_gai_strerror(dns));
    }
  }
  std::string tls;
  if (tls_ != nullptr && bev_ != nullptr) {
    while (unsigned long code = bufferevent_get_openssl_error(bev_)) {
      if (ERR_GET_LIB(code) == 0) continue;  // libevent's own marker, no reason text
      char buf[256];
      ERR_error_string_n(code, buf, sizeof(buf));
      absl::StrAppend(&tls, tls.empty() ? "" : "; ", buf);
    }
    if (SSL* ssl = bufferevent_openssl_get_ssl(bev_); ssl != nullptr) {
      if (long verify = SSL_get_verify_result(ssl); verify != X509_V_OK) {
        absl::StrAppend(&tls, tls.empty() ? "" : "; ", "certificate verification: ",
                        X509_verify_cert_error_string(verify));
      }
    }
  }
  if (!tls.empty()) return absl::StrCat(where, ": TLS: ", tls);
  if (what & BEV_EVENT_EOF) return absl::StrCat(where, ": connection closed by the server");
  if (what & BEV_EVENT_TIMEOUT) {
    return absl::StrCat(where, ": no connection (or TLS handshake) within ", kConnectTimeoutSeconds,
                        " s");
  }
  const int err = EVUTIL_SOCKET_ERROR();
  return absl::StrCat(where, ": ", err != 0 ? evutil_socket_error_to_string(err) : "error");
}

void RedisConnection::Close(const std::string& error, bool during_tls_handshake) {
  if (bev_ != nullptr) {
    bufferevent_free(bev_);
    bev_ = nullptr;
  }
  open_ = false;
  // Moved out: the callback may destroy this object.
  auto on_close = std::move(callbacks_.on_close);
  on_close(error, during_tls_handshake);
}

}  // namespace jobwire::store
