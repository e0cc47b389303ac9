#!/usr/bin/env bash
# Installs the Debian packages shardstore builds, tests and benchmarks with,
# then bootstraps autotools. Idempotent: does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_PKGS="autoconf automake libtool pkg-config make gcc libmicrohttpd-dev libgnutls28-dev libssl-dev
  liburing-dev liblmdb-dev libxxhash-dev libexpat1-dev libcurl4-openssl-dev zlib1g-dev libisal-dev libzstd-dev curl
  libfabric-dev libfabric-bin"
TEST_PKGS="s3cmd rclone clang libclang-rt-14-dev clang-format cppcheck chromium chromium-driver python3-torch"
# What bench/*.sh drive the servers with, and nginx, which bench/tls.sh runs beside shardstore
# (the peers install their own servers).
BENCH_PKGS="wrk linux-perf binutils nginx"

want="$BUILD_PKGS"
case "${1:-}" in
    --test) want="$want $TEST_PKGS" ;;
    --bench) want="$want $BENCH_PKGS" ;;
esac
missing=()
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x configure ] || [ configure.ac -nt configure ] || [ ! -f build-aux/test-driver ]; then
    echo "setup: bootstrapping autotools"
    mkdir -p m4
    autoreconf -fi >/dev/null
fi
