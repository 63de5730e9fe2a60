#!/bin/sh
# A throwaway PKI for the TLS tests of every language (tests/test_pki.h,
# client/{python,node,go} security tests), made with the openssl CLI in DIR:
#   ca.pem / ca.key          the CA the broker's certificate chains to
#   server.pem / server.key  signed by ca, SAN IP:127.0.0.1, DNS:localhost
#   client.pem / client.key  signed by ca (clientAuth)
#   other-ca.pem, other-client.pem / .key  an unrelated CA and a client
#                            certificate it signed
# EC P-256 keys (fast), valid for one day. Nothing here is meant to be secure.
#
#   tests/make_test_pki.sh DIR
set -e
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
cd "$1"
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
