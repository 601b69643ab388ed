#!/bin/sh
# Makes the TLS tests' certificates in the directory $1 with the openssl
# command (P-256 keys: fast to make). Anyone can run it by hand:
#   sh tests/tls/make_certs.sh /tmp/certs
#   ca.pem/ca.key        the test CA
#   server.pem/.key      CN=localhost, SAN DNS:localhost, IP:127.0.0.1 (by the CA)
#   client.pem/.key      CN=client one, O=zring test (by the CA), for mutual TLS
#   other.pem/.key       CN=other.example, SAN DNS:other.example (by the CA)
#   expired.pem/.key     like server.pem, valid only in January 2020 (by the CA)
#   rogue.pem/.key       like server.pem but self-signed: no CA vouches for it
set -eu
cd "$1"

key() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"
}

key ca.key
openssl req -x509 -new -key ca.key -subj "/CN=zring test CA" -days 30 -out ca.pem \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"

# leaf NAME SUBJECT SAN: a certificate signed by the CA, valid for 30 days.
leaf() {
	key "$1.key"
	openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
	printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\n' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
		-extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
leaf server "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
leaf client "/O=zring test/CN=client one" "DNS:client"
leaf other "/CN=other.example" "DNS:other.example"

# `openssl x509` cannot backdate a certificate before OpenSSL 3.4; `openssl
# ca` can, given a minimal CA directory.
mkdir -p cadb
: >cadb/index.txt
echo 1000 >cadb/serial
cat >ca.cnf <<'CNF'
[ca]
default_ca = test_ca
[test_ca]
database = cadb/index.txt
serial = cadb/serial
new_certs_dir = cadb
certificate = ca.pem
private_key = ca.key
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
CNF
key expired.key
openssl req -new -key expired.key -subj "/CN=localhost" \
	-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -out expired.csr
openssl ca -batch -notext -config ca.cnf -startdate 20200101000000Z -enddate 20200201000000Z \
	-in expired.csr -out expired.pem 2>/dev/null

key rogue.key
openssl req -x509 -new -key rogue.key -subj "/CN=localhost" -days 30 -out rogue.pem \
	-addext "subjectAltName=DNS:localhost,IP:127.0.0.1"
