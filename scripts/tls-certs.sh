#!/usr/bin/env bash
# Makes the certificates the TLS tests use, in DIR (created), with the
# openssl command; none are checked in. EC keys (P-256): quick to make.
#   ca.pem ca.key            a CA
#   node.pem node.key        a node certificate from it, for 127.0.0.1 and localhost (127.0.0.1
#                            also as a DNS name: a BEAM checks the host of a node name so)
#   other.pem other.key      a node certificate from a second CA (other-ca.pem), for the same names
#   expired.pem expired.key  a node certificate from the CA that expired in 2020
#   plain.pem                node.pem and node.key in one file (inet_tls_dist's certfile may hold both)
# Usage: scripts/tls-certs.sh DIR
set -euo pipefail
dir=${1:?usage: tls-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { # name subject
	ec "$1.key"
	openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 30 -out "$1.pem" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}
leaf() { # name ca subject
	ec "$1.key"
	openssl req -new -key "$1.key" -subj "/CN=$3" -out "$1.csr"
	printf 'subjectAltName=IP:127.0.0.1,DNS:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > "$1.ext"
	openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 30 \
		-extfile "$1.ext" -out "$1.pem" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}
ca ca "shardnode test CA"
ca other-ca "another CA"
leaf node ca "shardnode test node"
leaf other other-ca "a node of another CA"
# An expired one: `openssl ca' sets the dates, with a throwaway database.
ec expired.key
openssl req -new -key expired.key -subj "/CN=expired node" \
	-addext "subjectAltName=IP:127.0.0.1,DNS:127.0.0.1,DNS:localhost" -out expired.csr
mkdir -p ca.db && : > ca.db/index.txt && echo 01 > ca.db/serial
printf '[ca]\ndefault_ca=t\n[t]\ndir=ca.db\ndatabase=ca.db/index.txt\nnew_certs_dir=ca.db\nserial=ca.db/serial\ndefault_md=sha256\npolicy=p\ncopy_extensions=copy\n[p]\ncommonName=supplied\n' > ca.db/ca.cnf
openssl ca -batch -config ca.db/ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \
	-startdate 20200101000000Z -enddate 20200201000000Z 2>/dev/null
rm -rf ca.db expired.csr
cat node.pem node.key > plain.pem
