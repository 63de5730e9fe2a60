#include "tests/test_pki.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace jobwire::testing {
namespace {

// The whole PKI as one shell script run in the directory. EC keys keep it
// fast; -extfile adds the SANs and key usages.
constexpr char kScript[] = R"(set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 1 -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() {  # stem ca cn extensions
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3"
  printf '%s\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
    -out "$1.pem" -days 1 -extfile "$1.ext" 2>/dev/null
}
ca ca "jobwire test CA"
ca other-ca "another test CA"
leaf server ca localhost "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
leaf client ca test-client "extendedKeyUsage=clientAuth"
leaf other-client other-ca other-client "extendedKeyUsage=clientAuth"
)";

}  // namespace

absl::StatusOr<std::unique_ptr<TestPki>> TestPki::Create() {
  char tmpl[] = "/tmp/jobwire-pki-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  std::unique_ptr<TestPki> pki(new TestPki(tmpl));
  {
    std::ofstream script(pki->Path("make.sh"));
    script << kScript;
  }
  const std::string command = absl::StrCat("cd '", pki->dir_, "' && sh make.sh > make.log 2>&1");
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
