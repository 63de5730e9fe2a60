// TestPki: a throwaway certificate authority and certificates made with the
// `openssl` command line tool in a temporary directory, for the TLS and
// mutual-TLS tests. Nothing here is meant to be secure.
//
//   absl::StatusOr<std::unique_ptr<TestPki>> pki = TestPki::Create();
//   broker flags: --tls_cert=(*pki)->server_cert() --tls_key=...
//   client: grpc::SslCredentials((*pki)->ClientOptions(/*with_cert=*/true))
#ifndef JOBWIRE_TESTS_TEST_PKI_H_
#define JOBWIRE_TESTS_TEST_PKI_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"

namespace jobwire::testing {

// Not thread-safe. The directory is removed by the destructor.
class TestPki {
 public:
  // Makes, valid for one day (EC P-256 keys):
  //   ca.pem / ca.key          the CA the broker's certificate chains to
  //   server.pem / server.key  signed by ca, SAN IP:127.0.0.1, DNS:localhost
  //   client.pem / client.key  signed by ca (clientAuth)
  //   other-ca.pem, other-client.pem / .key  an unrelated CA and a client
  //                            certificate it signed
  // INTERNAL (with openssl's output) when a step fails.
  static absl::StatusOr<std::unique_ptr<TestPki>> Create();
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  // Paths of the files above.
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string ca_cert() const { return Path("ca.pem"); }
  std::string server_cert() const { return Path("server.pem"); }
  std::string server_key() const { return Path("server.key"); }
  std::string client_cert() const { return Path("client.pem"); }
  std::string client_key() const { return Path("client.key"); }

  // The content of Path(name); empty when it cannot be read.
  std::string Read(const std::string& name) const;

  // Channel credentials trusting ca.pem; with a client certificate pair
  // `cert_stem` ("client" or "other-client"), presenting it.
  std::shared_ptr<grpc::ChannelCredentials> Credentials(
      const std::string& cert_stem = "") const;

 private:
  explicit TestPki(std::string dir) : dir_(std::move(dir)) {}

  const std::string dir_;
};

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_TEST_PKI_H_
