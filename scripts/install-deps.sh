#!/usr/bin/env bash
# Installs the Debian packages shardnode needs to build, run and test, if any
# is missing. Runs apt-get as root (directly, or through sudo).
set -euo pipefail

packages=(
	build-essential   # gcc, make
	erlang-dev        # ei: the external term format codec, and its headers
	erlang-nox        # erl, epmd: the BEAM the tests talk to
	erlang-src        # OTP sources, for reading (gen.erl, dist_util.erl)
	erlang-common-test
	erlang-ssl        # inet_tls_dist: the TLS BEAM nodes the TLS tests talk to
	erlang-tools
	erlang-edoc       # make docs: the wrapper's API docs
	rebar3            # builds erl_wrapper/ and runs common_test
	elixir            # mix: make test adopts the repository from a Mix project, with ExUnit
	libssl-dev        # OpenSSL: MD5 for the handshake digest, TLS distribution
	libbsd-dev        # strlcpy
	liblmdb-dev       # state_store = lmdb: the embedded durable store
	libpq-dev         # state_store = postgres: libpq
	postgresql        # the real server the postgres tests start (scripts/pg-server.sh)
	libcriterion-dev  # unit tests
	clang             # the compiler the static analyzer drives, and the fuzz targets
	libclang-rt-14-dev # libFuzzer and the sanitizer runtimes clang links: make fuzz, fuzz-check
	clang-tools       # scan-build: make analyze, run by make test
	openssl           # the command the TLS tests make their certificates with (scripts/tls-certs.sh)
	prometheus        # promtool: the metrics suite checks a real page with it
	iproute2          # network namespaces for partition tests (scripts/partition-scenarios.sh)
	iptables          # cutting links and dropping packets inside them
	dnsmasq-base      # the DNS server the discovery tests resolve --join-dns names from
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
