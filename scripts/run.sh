#!/usr/bin/env bash
# Quick start, part 1: install what is needed, build, and start shardstore
# on its embedded defaults (127.0.0.1:9000, data in ./shardstore-data).
# Extra arguments go to shardstore, e.g. scripts/run.sh --listen 127.0.0.1:9100
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p build/release
cd build/release
[ -f Makefile ] || ../../configure --quiet
make -j"$(nproc)" shardstore shard >/dev/null  # shard: what `shardstore admin` runs
cd ../..
exec build/release/shardstore "$@"
