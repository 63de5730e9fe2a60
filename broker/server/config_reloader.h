// ConfigReloader: reloads the token file (--auth_tokens_file) and the
// listener's TLS files (--tls_cert, --tls_key, --tls_client_ca) while the
// broker runs, when their content changes (checked every
// --reload_interval_ms) and at once on Reload() (SIGHUP). A reload that
// fails (a file missing, malformed JSON, a key that does not match its
// certificate) keeps what is in use and logs a warning with the reason, once
// per distinct failure; a reload that succeeds logs one info line. Neither
// names a token, a hash or key material.
//
// What a reload cannot do: switch authentication or TLS (or mutual TLS) on
// or off; those follow the flags at start. The Redis TLS files
// (--redis_tls_*) are not reloaded.
//
// Thread safety: Start and Stop from one thread; Reload from any. The files
// are read and checked on the loop's own thread (base::FileWatcher).
#ifndef JOBWIRE_BROKER_SERVER_CONFIG_RELOADER_H_
#define JOBWIRE_BROKER_SERVER_CONFIG_RELOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/base/file_watcher.h"
#include "broker/server/reloadable_tls_credentials.h"
#include "broker/server/transport_security.h"
#include "broker/service/authorizer.h"

namespace jobwire::server {

struct ConfigReloaderParams {
  // Between two checks of the files; absl::InfiniteDuration(): only Reload.
  absl::Duration interval = absl::Seconds(10);
  // Null, or the Authorizer loaded from `tokens_file` with `tokens_json`.
  service::Authorizer* authorizer = nullptr;
  std::string tokens_file;
  std::string tokens_json;
  // Null, or the credentials serving `tls_pem`, read from these paths
  // (tls_client_ca empty without mutual TLS).
  ReloadableTlsCredentials* tls = nullptr;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  TlsPem tls_pem;
};

class ConfigReloader {
 public:
  // The pointers in `params` must outlive the reloader.
  explicit ConfigReloader(ConfigReloaderParams params);

  // Starts watching (no-op when there is nothing to reload).
  void Start();
  // Reloads every file now, changed or not (after a check in progress).
  void Reload();
  // No reload runs after Stop returns. Idempotent.
  void Stop();

 private:
  void OnTokens(absl::StatusOr<std::vector<std::string>> contents, bool requested);
  void OnTls(absl::StatusOr<std::vector<std::string>> contents, bool requested);

  const ConfigReloaderParams params_;
  std::unique_ptr<base::FileWatcher> watcher_;  // null: nothing to reload
};

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_CONFIG_RELOADER_H_
