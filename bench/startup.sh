#!/usr/bin/env bash
# bench/startup.sh: what a process that links libshard pays at start (issue
# of the lazily loaded libfabric). Two builds side by side, A (before) and B
# (after), against one local server with an empty bucket:
#   shard ls        BENCH_CALLS (20) x `shard ls s3://BUCKET`, wall seconds of the batch
#   python          BENCH_CALLS x python3 -c "import shardstore; shardstore.default_client()"
#                   (ctypes loads libshard.so), wall seconds of the batch
# A and B alternate, BENCH_RUNS (5) batches each; every batch is listed, then the
# medians and B/A. Per call = batch / BENCH_CALLS.
#
# Env: SHARDSTORE_BIN (the server, default ./shardstore), SHARD_A, SHARD_B (the two
#   shard binaries), LIBSHARD_A, LIBSHARD_B (the two libshard.so; python skipped unless
#   both are set), BENCH_RUNS=5 BENCH_CALLS=20
set -euo pipefail
BENCH_TAG=startup
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-5}
CALLS=${BENCH_CALLS:-20}
BIN=${SHARDSTORE_BIN:-./shardstore}
SA=${SHARD_A:?set SHARD_A to the shard binary before the change}
SB=${SHARD_B:?set SHARD_B to the shard binary after the change}
LA=${LIBSHARD_A:-}
LB=${LIBSHARD_B:-}
AK=benchak SK=benchsk BUCKET=startbench
[ -x "$BIN" ] && [ -x "$SA" ] && [ -x "$SB" ] || die "SHARDSTORE_BIN, SHARD_A, SHARD_B must be executables"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

W=$(mktemp -d /tmp/bench-startup.XXXXXX)
cleanup() { ss_stop; rm -rf "$W"; }
trap cleanup EXIT
mkdir -p "$W/data"
ss_launch "$W/data"
export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_ENDPOINT_URL=$SS_EP AWS_DEFAULT_REGION=us-east-1
"$SA" mb -q "s3://$BUCKET"
log "loadavg: $(cat /proc/loadavg)"

batch_shard() { # batch_shard SHARD: wall seconds of CALLS x shard ls
  local t0 t1 i
  t0=$(now)
  for i in $(seq 1 "$CALLS"); do "$1" ls "s3://$BUCKET" > /dev/null; done
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'
}
batch_py() { # batch_py LIBSHARD: wall seconds of CALLS x python import + default_client
  local t0 t1 i
  t0=$(now)
  for i in $(seq 1 "$CALLS"); do
    SHARDSTORE_LIBSHARD=$1 PYTHONPATH=$SRC/python python3 -c "import shardstore; shardstore.default_client()"
  done
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'
}

A=() B=() PA=() PB=()
for r in $(seq 1 "$RUNS"); do
  A+=("$(batch_shard "$SA")")
  B+=("$(batch_shard "$SB")")
  if [ -n "$LA" ] && [ -n "$LB" ]; then
    PA+=("$(batch_py "$LA")")
    PB+=("$(batch_py "$LB")")
  fi
done
ma=$(echo "${A[*]}" | median) mb=$(echo "${B[*]}" | median)
echo "RESULT shard_ls calls=$CALLS A_runs=$(csv "${A[*]}") B_runs=$(csv "${B[*]}") A_median_s=$ma B_median_s=$mb" \
  "A_per_call_ms=$(awk -v m="$ma" -v c="$CALLS" 'BEGIN{printf "%.1f", m*1000/c}')" \
  "B_per_call_ms=$(awk -v m="$mb" -v c="$CALLS" 'BEGIN{printf "%.1f", m*1000/c}') B/A=$(ratio "$mb" "$ma")"
if [ ${#PA[@]} -gt 0 ]; then
  pa=$(echo "${PA[*]}" | median) pb=$(echo "${PB[*]}" | median)
  echo "RESULT python calls=$CALLS A_runs=$(csv "${PA[*]}") B_runs=$(csv "${PB[*]}") A_median_s=$pa B_median_s=$pb" \
    "A_per_call_ms=$(awk -v m="$pa" -v c="$CALLS" 'BEGIN{printf "%.1f", m*1000/c}')" \
    "B_per_call_ms=$(awk -v m="$pb" -v c="$CALLS" 'BEGIN{printf "%.1f", m*1000/c}') B/A=$(ratio "$pb" "$pa")"
fi
log "loadavg: $(cat /proc/loadavg)"
