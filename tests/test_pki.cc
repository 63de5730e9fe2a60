#include "tests/test_pki.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace jobwire::testing {
absl::StatusOr<std::unique_ptr<TestPki>> TestPki::Create() {
  char tmpl[] = "/tmp/jobwire-pki-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  std::unique_ptr<TestPki> pki(new TestPki(tmpl));
  const std::string command = absl::StrCat("sh '", JOBWIRE_TEST_PKI_SCRIPT, "' '", pki->dir_,
                                           "' > '", pki->dir_, "/make.log' 2>&1");
  if (std::system(command.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("openssl failed: ", pki->Read("make.log")));
  }
  return pki;
}

TestPki::~TestPki() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string TestPki::Read(const std::string& name) const {
  std::ifstream in(Path(name), std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::shared_ptr<grpc::ChannelCredentials> TestPki::Credentials(
    const std::string& cert_stem) const {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = Read("ca.pem");
  if (!cert_stem.empty()) {
    options.pem_cert_chain = Read(cert_stem + ".pem");
    options.pem_private_key = Read(cert_stem + ".key");
  }
  return grpc::SslCredentials(options);
}

}  // namespace jobwire::testing
