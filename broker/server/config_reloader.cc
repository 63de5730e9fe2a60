#include "broker/server/config_reloader.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/base/logging.h"

namespace jobwire::server {
namespace {

const char* Trigger(bool requested) { return requested ? "reload request" : "file change"; }

}  // namespace

ConfigReloader::ConfigReloader(ConfigReloaderParams params) : params_(std::move(params)) {
  base::FileWatcherParams watcher;
  watcher.interval = params_.interval;
  if (params_.authorizer != nullptr) {
    watcher.watches.push_back(base::FileWatch{
        {params_.tokens_file},
        {params_.tokens_json},
        [this](absl::StatusOr<std::vector<std::string>> contents, bool requested) {
          OnTokens(std::move(contents), requested);
        }});
  }
  if (params_.tls != nullptr) {
    base::FileWatch tls{{params_.tls_cert, params_.tls_key},
                        {params_.tls_pem.cert, params_.tls_pem.key},
                        [this](absl::StatusOr<std::vector<std::string>> contents, bool requested) {
                          OnTls(std::move(contents), requested);
                        }};
    if (!params_.tls_client_ca.empty()) {
      tls.paths.push_back(params_.tls_client_ca);
      tls.initial.push_back(params_.tls_pem.client_ca);
    }
    watcher.watches.push_back(std::move(tls));
  }
  if (!watcher.watches.empty()) watcher_ = std::make_unique<base::FileWatcher>(std::move(watcher));
}

void ConfigReloader::Start() {
  if (watcher_ == nullptr) return;
  watcher_->Start();
  base::Log(base::LogLevel::kInfo, "live reload on",
            {{"interval_ms", params_.interval == absl::InfiniteDuration()
                                 ? std::string("0 (only on SIGHUP)")
                                 : absl::StrCat(absl::ToInt64Milliseconds(params_.interval))},
             {"token_file", params_.authorizer != nullptr ? "yes" : "no"},
             {"tls", params_.tls != nullptr ? "yes" : "no"}});
}

void ConfigReloader::Reload() {
  if (watcher_ != nullptr) watcher_->Trigger();
}

void ConfigReloader::Stop() {
  if (watcher_ != nullptr) watcher_->Stop();
}

void ConfigReloader::OnTokens(absl::StatusOr<std::vector<std::string>> contents,
                              bool requested) {
  absl::Status status = contents.status();
  if (status.ok()) status = params_.authorizer->Reload((*contents)[0]);
  if (!status.ok()) {
    // Authorizer and ReadFile errors name entries and paths, never a token.
    base::Log(base::LogLevel::kWarning, "token file reload failed, keeping the tokens in use",
              {{"path", params_.tokens_file},
               {"error", std::string(status.message())},
               {"trigger", Trigger(requested)}});
    return;
  }
  base::Log(base::LogLevel::kInfo, "token file reloaded",
            {{"path", params_.tokens_file},
             {"tokens", absl::StrCat(params_.authorizer->token_count())},
             {"trigger", Trigger(requested)}});
}

void ConfigReloader::OnTls(absl::StatusOr<std::vector<std::string>> contents, bool requested) {
  absl::StatusOr<CertificateInfo> info;
  if (contents.ok()) {
    TlsPem pem;
    pem.cert = std::move((*contents)[0]);
    pem.key = std::move((*contents)[1]);
    if (contents->size() > 2) pem.client_ca = std::move((*contents)[2]);
    info = params_.tls->Update(pem);
  } else {
    info = contents.status();
  }
  if (!info.ok()) {
    base::Log(base::LogLevel::kWarning,
              "tls certificate reload failed, keeping the certificate in use",
              {{"cert", params_.tls_cert},
               {"key", params_.tls_key},
               {"error", std::string(info.status().message())},
               {"trigger", Trigger(requested)}});
    return;
  }
  base::Log(base::LogLevel::kInfo, "tls certificate reloaded",
            {{"cert", params_.tls_cert},
             {"subject", info->subject},
             {"not_after", info->not_after},
             {"trigger", Trigger(requested)}});
}

}  // namespace jobwire::server
