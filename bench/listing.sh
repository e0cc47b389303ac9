#!/usr/bin/env bash
# bench/listing.sh: namespace at scale (issue 4), side by side with Ceph RGW, on 127.0.0.1.
#
# Usage: bench/listing.sh     (full scale: ~2.2M keys, about 15-25 minutes with ceph)
#        LIST_PREFIXES=1000 bench/listing.sh     (a tenth of the keys, a few minutes)
#
# Load is driven by `shard bench` (libshard's load generator) only. Figures:
#   put            load LIST_PREFIXES x 200 keys under big/ (big/%08d/%08d) and the same
#                  number of prefixes x 20 keys under small/, 0-byte objects through the S3
#                  API (shard bench put, LIST_PUT_CONC clients); PUT/s of each load.
#   list_full      ListObjectsV2 of every key in 1000-key pages with continuation tokens
#                  (shard bench list --prefix ""), LIST_CONC clients, LIST_SECS s; keys/s.
#   list_delim     delimiter listing (--delimiter /, 1000 common prefixes a page) under
#                  small/ (20 keys a prefix) and big/ (200 keys a prefix); pages/s, and the
#                  big/small ratio (about 1 when a page costs what it returns). Each common
#                  prefix is one B-tree seek whatever it hides; what remains is memory latency:
#                  a big/ page touches ~10x more of the tree than a small/ page (measured with
#                  a ListObjectsV2 page loop: 1000 keys a prefix pages faster than 20 keys a
#                  prefix when the tree is hot), so expect ~0.7 here, not 0.1.
#   first_page     first-page latency (--first-page, 1 client) p50/p99 while 8 clients PUT
#                  0-byte objects under churn/ concurrently.
#   head           HeadObject ops/s over the big/ keys (LIST_HEAD_CONC clients).
#   ceph           the same list_full / list_delim / first_page / head against Ceph RGW
#                  loaded with LIST_CEPH_KEYS keys (90% big-shaped, 10% small-shaped), and the
#                  shardstore/ceph ratio of each.
# Each listing figure is the median of LIST_RUNS runs (all runs listed). The load average is
# printed with each figure: compare only figures measured on a quiet machine.
#
# Env knobs (defaults):
#   SHARD_BIN         the shard tool (default: `shard` on PATH, else next to SHARDSTORE_BIN)
#   SHARDSTORE_BIN    the server (default: ./shardstore, else <srcdir>/build/dev/shardstore)
#   LIST_PREFIXES=10000 LIST_RUNS=3 LIST_SECS=10 LIST_CONC=2 LIST_PUT_CONC=64
#   LIST_HEAD_CONC=16 LIST_CEPH_KEYS=100000 LIST_PEERS="ceph" ("" for shardstore alone)
#   LIST_DATA=/tmp/shardstore-list-bench (needs ~3 GiB for 2.2M keys; removed unless LIST_KEEP=1)
#   LIST_CEPH_PORT=18084
#   SHARDSTORE_PEERS  the peers directory (ceph/start.sh, ceph/stop.sh); needed unless LIST_PEERS=""
# Output: "RESULT ..." lines on stdout; progress on stderr.
set -euo pipefail

BENCH_TAG=listing
. "$(dirname "$0")/lib.sh"
PEERS=${LIST_PEERS-ceph}
NPFX=${LIST_PREFIXES:-10000}
RUNS=${LIST_RUNS:-3}
SECS=${LIST_SECS:-10}
LCONC=${LIST_CONC:-2}
PCONC=${LIST_PUT_CONC:-64}
HCONC=${LIST_HEAD_CONC:-16}
CEPH_KEYS=${LIST_CEPH_KEYS:-100000}
CEPH_PORT=${LIST_CEPH_PORT:-18084}
DATA=${LIST_DATA:-/tmp/shardstore-list-bench}
AK=listbench SK=listbenchsecret
CEPH_AK=cephbench CEPH_SK=cephbenchsecret
BUCKET=listbench
SKIP=""

load() { cut -d' ' -f1 /proc/loadavg; }

# ---------------- tools ----------------
peer_on ceph && need_peers ceph
find_bin ./shardstore "$SRC/build/dev/shardstore"
SHARD=${SHARD_BIN:-$(command -v shard || true)}
[ -n "$SHARD" ] || SHARD=$(dirname "$BIN")/shard
[ -x "$SHARD" ] || die "shard tool not found; set SHARD_BIN (libshard's shard binary)"
command -v curl >/dev/null || die "curl missing"

W=$(mktemp -d /tmp/list-bench.XXXXXX)
SS_PID="" STARTED_CEPH="" BG_PID=""
cleanup() {
  set +e
  [ -n "$BG_PID" ] && kill "$BG_PID" 2>/dev/null && wait "$BG_PID" 2>/dev/null
  [ -n "$SS_PID" ] && ss_stop
  [ -n "$STARTED_CEPH" ] && peer_stop ceph "$CEPH_PORT"
  [ "${LIST_KEEP:-0}" = 1 ] || rm -rf "$DATA"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shard with only the credentials we give it (no ~/.aws profile).
sh_bench() { # sh_bench ENDPOINT AK SK ARGS...
  local ep=$1 ak=$2 sk=$3; shift 3
  env -u AWS_PROFILE AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
    AWS_ACCESS_KEY_ID="$ak" AWS_SECRET_ACCESS_KEY="$sk" AWS_DEFAULT_REGION=us-east-1 \
    "$SHARD" --endpoint-url "$ep" bench "$@"
}
result_line() { grep '^RESULT ' | tail -1; }

# ---------------- shardstore ----------------
ss_start() {
  local dir=$DATA/ss
  rm -rf "$dir"; mkdir -p "$dir"
  printf 'volume_size = 1G\nmax_volumes = 4\ngroup_commit = on\nlog_level = warn\n' > "$DATA/ss.conf"
  ss_launch "$dir" "$DATA/ss.conf"
  log "shardstore pid $SS_PID on $SS_EP"
}

# ---------------- the measurements (any endpoint) ----------------
# load NAME EP AK SK PREFIX OBJECTS FANOUT: PUT the keys, prints PUT/s.
load_keys() {
  local name=$1 ep=$2 ak=$3 sk=$4 pfx=$5 n=$6 f=$7 line
  log "$name: loading $n keys under $pfx (fanout $f, $PCONC clients)"
  line=$(sh_bench "$ep" "$ak" "$sk" put --bucket "$BUCKET" --prefix "$pfx" --objects "$n" --fanout "$f" \
    --size 0 --concurrency "$PCONC" --duration 0 | result_line) || die "$name: load failed"
  [ "$(echo "$line" | kv errors)" = 0 ] || die "$name: load had errors: $line"
  echo "RESULT server=$name figure=put prefix=$pfx keys=$n fanout=$f put_per_s=$(echo "$line" | kv ops_per_s) p50_ms=$(echo "$line" | kv p50_ms) p99_ms=$(echo "$line" | kv p99_ms) conc=$PCONC load=$(load)"
}

# list_runs NAME EP AK SK FIELD LABEL ARGS...: RUNS list runs, median of FIELD.
list_runs() {
  local name=$1 ep=$2 ak=$3 sk=$4 field=$5 label=$6 line runs="" p99s="" p50s="" i
  shift 6
  for i in $(seq 1 "$RUNS"); do
    sleep 1
    line=$(sh_bench "$ep" "$ak" "$sk" list --bucket "$BUCKET" --no-prepare --duration "$SECS" "$@" | result_line) \
      || die "$name: shard bench list $* failed"
    [ "$(echo "$line" | kv errors)" = 0 ] || die "$name: list errors: $line"
    runs="$runs $(echo "$line" | kv "$field")"
    p50s="$p50s $(echo "$line" | kv p50_ms)"; p99s="$p99s $(echo "$line" | kv p99_ms)"
  done
  MED=$(echo "$runs" | median) MED_P50=$(echo "$p50s" | median) MED_P99=$(echo "$p99s" | median)
  echo "RESULT server=$name figure=$label $field=$MED p50_ms=$MED_P50 p99_ms=$MED_P99 runs=$(echo $runs | tr ' ' ,) secs=$SECS load=$(load) args=\"$*\""
}

# measure NAME EP AK SK NBIG NSMALL: every figure on a loaded endpoint; sets FIG[name.*].
declare -A FIG
measure() {
  local name=$1 ep=$2 ak=$3 sk=$4 nbig=$5 line
  list_runs "$name" "$ep" "$ak" "$sk" keys_per_s list_full --prefix "" --max-keys 1000 --concurrency "$LCONC"
  FIG[$name.full]=$MED
  list_runs "$name" "$ep" "$ak" "$sk" keys_per_s list_full_1client --prefix "" --max-keys 1000 --concurrency 1
  FIG[$name.full1]=$MED
  list_runs "$name" "$ep" "$ak" "$sk" ops_per_s list_delim_small --prefix small/ --delimiter / --max-keys 1000 --concurrency 1
  FIG[$name.dsmall]=$MED
  list_runs "$name" "$ep" "$ak" "$sk" ops_per_s list_delim_big --prefix big/ --delimiter / --max-keys 1000 --concurrency 1
  FIG[$name.dbig]=$MED
  echo "RESULT server=$name figure=list_delim_ratio big_over_small=$(ratio "${FIG[$name.dbig]}" "${FIG[$name.dsmall]}") (pages/s with 200 vs 20 keys a common prefix; ~1 = independent)"
  # First page while 8 clients PUT.
  log "$name: first-page latency under 8 PUT clients"
  sh_bench "$ep" "$ak" "$sk" put --bucket "$BUCKET" --prefix churn/ --objects 100000000 --size 0 \
    --concurrency 8 --duration $((SECS * RUNS + 3 * RUNS + 5)) > "$W/churn.out" 2>&1 &
  BG_PID=$!
  sleep 2
  list_runs "$name" "$ep" "$ak" "$sk" ops_per_s first_page_under_put --prefix "" --max-keys 1000 --first-page --concurrency 1
  FIG[$name.first_p50]=$MED_P50 FIG[$name.first_p99]=$MED_P99
  wait "$BG_PID" || true; BG_PID=""
  echo "RESULT server=$name figure=churn_put_during_first_page $(result_line < "$W/churn.out" | cut -d' ' -f2-)"
  # HeadObject.
  line=$(sh_bench "$ep" "$ak" "$sk" head --bucket "$BUCKET" --prefix big/ --objects "$nbig" --fanout 200 \
    --no-prepare --concurrency "$HCONC" --duration "$SECS" | result_line) || die "$name: head failed"
  FIG[$name.head]=$(echo "$line" | kv ops_per_s)
  echo "RESULT server=$name figure=head ops_per_s=${FIG[$name.head]} p50_ms=$(echo "$line" | kv p50_ms) p99_ms=$(echo "$line" | kv p99_ms) errors=$(echo "$line" | kv errors) conc=$HCONC load=$(load)"
}

# ---------------- shardstore ----------------
mkdir -p "$DATA"
ss_start
NBIG=$((NPFX * 200)) NSMALL=$((NPFX * 20))
load_keys shardstore "$SS_EP" "$AK" "$SK" big/ "$NBIG" 200
load_keys shardstore "$SS_EP" "$AK" "$SK" small/ "$NSMALL" 20
measure shardstore "$SS_EP" "$AK" "$SK" "$NBIG"
ss_stop

# ---------------- ceph ----------------
if peer_on ceph; then
  log "starting ceph on $CEPH_PORT (~20 s fresh)"
  STARTED_CEPH=1
  AWS_ACCESS_KEY_ID=$CEPH_AK AWS_SECRET_ACCESS_KEY=$CEPH_SK peer_start ceph "$CEPH_PORT" \
    || die "ceph did not start"
  CE_EP=http://127.0.0.1:$CEPH_PORT
  CBIG=$((CEPH_KEYS * 9 / 10 / 200 * 200)) CSMALL=$((CEPH_KEYS / 10 / 20 * 20))
  load_keys ceph "$CE_EP" "$CEPH_AK" "$CEPH_SK" big/ "$CBIG" 200
  load_keys ceph "$CE_EP" "$CEPH_AK" "$CEPH_SK" small/ "$CSMALL" 20
  measure ceph "$CE_EP" "$CEPH_AK" "$CEPH_SK" "$CBIG"
  peer_stop ceph "$CEPH_PORT"; STARTED_CEPH=""
  for f in full full1 dsmall dbig head; do
    echo "RESULT side_by_side figure=$f shardstore=${FIG[shardstore.$f]} ceph=${FIG[ceph.$f]} ratio=$(ratio "${FIG[shardstore.$f]}" "${FIG[ceph.$f]}")"
  done
  echo "RESULT side_by_side figure=first_page_p50_ms shardstore=${FIG[shardstore.first_p50]} ceph=${FIG[ceph.first_p50]}"
  echo "RESULT side_by_side figure=first_page_p99_ms shardstore=${FIG[shardstore.first_p99]} ceph=${FIG[ceph.first_p99]}"
fi
echo "RESULT goal keys_per_s=${FIG[shardstore.full]} (goal >= 1000000) scale=$NPFX prefixes ($((NBIG + NSMALL)) keys)"
log "done"
