#!/usr/bin/env bash
# bench/access_log.sh: what the JSON access log costs (issue 15's goal: < 5% of range req/s).
# Two shardstore servers run side by side on 127.0.0.1, the same binary and the same object,
# one with `access_log` off and one writing it to a file in its data dir; wrk drives 64 KiB
# Range GETs on a presigned URL (every request authenticated and, on the second, logged),
# the two servers taking turns run by run (the order alternates, so drift hits both alike).
#
# Usage: bench/access_log.sh     (about 3 minutes at the defaults)
#
# Figures: range_64k req/s of each server, medians of BENCH_RUNS runs (all runs listed),
# the ratio on/off and the median of the per-pair ratios, the server CPU seconds per 10,000
# requests of each, and the log's bytes per request (lines checked: one per request, JSON).
#
# Env knobs (defaults):
#   BENCH_RUNS=5 BENCH_SIZE_MB=256 BENCH_CONC=16 BENCH_RANGE_SECS=8 BENCH_WRK_THREADS=2
#   BENCH_PAUSE=1 BENCH_WAIT_IDLE=15 BENCH_MAX_BUSY=0.3 (see lib.sh `quiet`)
#   BENCH_DATA=/tmp/shardstore-alog-bench (removed at the end unless BENCH_KEEP=1)
#   SHARDSTORE_BIN   default: /tmp/build-bench/shardstore, else ./shardstore
# Output: "RESULT ..." lines on stdout; progress on stderr.
set -euo pipefail

BENCH_TAG=access_log
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-5}
SIZE_MB=${BENCH_SIZE_MB:-256}
SIZE=$((SIZE_MB * 1048576))
CONC=${BENCH_CONC:-16}
RSECS=${BENCH_RANGE_SECS:-8}
WTHREADS=${BENCH_WRK_THREADS:-2}
PAUSE=${BENCH_PAUSE:-1}
DATA=${BENCH_DATA:-/tmp/shardstore-alog-bench}
AK=alogbenchAK000000000 SK=alogbenchSK0000000000000000000000000000000
BUCKET=alogbench
W=$(mktemp -d)
declare -A PID_OF EP_OF URL

cleanup() {
  local n
  for n in "${!PID_OF[@]}"; do SS_PID=${PID_OF[$n]} ss_stop; done
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$DATA"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_tools curl wrk python3 awk md5sum
find_bin /tmp/build-bench/shardstore ./shardstore "$SRC/shardstore"
rm -rf "$DATA"
mkdir -p "$DATA/off" "$DATA/on"
FILE=$DATA/obj.bin
head -c "$SIZE" /dev/urandom > "$FILE"
MD5=$(md5sum "$FILE" | cut -d' ' -f1)
LOG=$DATA/on/access.log

for n in off on; do
  printf 'volume_size = %dM\ninline_max = 0\nlog_level = warn\n' $((SIZE_MB * 2 + 256)) > "$W/$n.conf"
  [ "$n" = on ] && echo "access_log = $LOG" >> "$W/$n.conf"
  ss_launch "$DATA/$n/data" "$W/$n.conf"
  PID_OF[$n]=$SS_PID EP_OF[$n]=$SS_EP
  ss_curl -f -X PUT "$SS_EP/$BUCKET" -o /dev/null || die "cannot create the bucket on $n"
  ss_curl -f -T "$FILE" -o /dev/null "$SS_EP/$BUCKET/obj" || die "PUT failed on $n"
  URL[$n]=$(presign "$SS_EP" "$AK" "$SK" "$BUCKET" obj)
  got=$(curl -sf "${URL[$n]}" | md5sum | cut -d' ' -f1)
  [ "$got" = "$MD5" ] || die "GET from $n: MD5 $got, expected $MD5"
done
SS_PID=""

declare -A RUNS_OF CPU_OF
PAIRS=""
quiet range
for i in $(seq 1 "$RUNS"); do
  order="off on"; [ $((i % 2)) = 0 ] && order="on off"
  declare -A this
  for n in $order; do
    sleep "$PAUSE"
    c0=$(cpu_ticks "${PID_OF[$n]}")
    v=$(range_reqs "${URL[$n]}")
    c1=$(cpu_ticks "${PID_OF[$n]}")
    reqs=$(awk -v r="$v" -v s="$RSECS" 'BEGIN{printf "%d", r*s}')
    cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v r="$reqs" 'BEGIN{printf "%.3f", (b-a)/hz/r*10000}')
    RUNS_OF[$n]="${RUNS_OF[$n]:-} $v"
    CPU_OF[$n]="${CPU_OF[$n]:-} $cpu"
    this[$n]=$v
    log "run $i $n: $v req/s, $cpu CPU-s per 10k requests"
  done
  PAIRS="$PAIRS $(ratio "${this[on]}" "${this[off]}")"
done

# The log must hold one JSON line per answered request (flushed every 200 ms).
sleep 1
lines=$(wc -l < "$LOG")
bytes=$(stat -c %s "$LOG")
python3 - "$LOG" <<'PY' || die "the access log is not one JSON object per line"
import json, sys
n = 0
with open(sys.argv[1]) as f:
    for line in f:
        rec = json.loads(line)
        assert rec.get("status") in (200, 206), rec
        n += 1
assert n > 0
PY
total_on=$(echo ${RUNS_OF[on]} | awk -v s="$RSECS" '{t=0; for(i=1;i<=NF;i++) t+=$i*s; printf "%d", t}')
MOFF=$(echo ${RUNS_OF[off]} | median)
MON=$(echo ${RUNS_OF[on]} | median)
echo "RESULT metric=range_64k unit=req_s off=$(f1 "$MOFF") on=$(f1 "$MON") on_vs_off=$(ratio "$MON" "$MOFF") pair_ratio_median=$(echo $PAIRS | median) cpu_per_10k_off=$(echo ${CPU_OF[off]} | median) cpu_per_10k_on=$(echo ${CPU_OF[on]} | median) runs_off=$(csv ${RUNS_OF[off]}) runs_on=$(csv ${RUNS_OF[on]}) pair_ratios=$(csv $PAIRS)"
echo "RESULT metric=log lines=$lines approx_requests_on=$total_on bytes_per_line=$(awk -v b="$bytes" -v l="$lines" 'BEGIN{ if (l>0) printf "%.0f", b/l; else print "nan"}')"
echo "RESULT metric=setup size_mb=$SIZE_MB runs=$RUNS conc=$CONC range_secs=$RSECS noise=${NOISE:-} loadavg=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)"
