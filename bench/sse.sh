#!/usr/bin/env bash
# bench/sse.sh: the cost of encryption at rest. One shardstore, one sitting, encrypted
# (x-amz-server-side-encryption: AES256) and plain runs alternated so machine noise hits both.
#
# Usage: bench/sse.sh            (from anywhere; about 3-5 minutes at the defaults)
#
# Figures (medians of BENCH_RUNS runs; all runs listed; ratio = encrypted / plain):
#   put_single_stream  a BENCH_SIZE_MB random file PUT with curl -T (UNSIGNED-PAYLOAD), MiB/s
#   get_single_stream  the same object GET with curl -o /dev/null, MiB/s (plain goes out by
#                      sendfile, encrypted through the package decryptor)
#   range_64k          wrk, BENCH_CONC connections, BENCH_RANGE_SECS s per run, 64 KiB Range GETs
#                      at random offsets (half 4 KiB-aligned, half not: an unaligned range
#                      touches two packages) on a presigned URL; req/s
#   openssl            `openssl speed -evp aes-256-gcm` (16 KiB column, one core), the ceiling
# Every GET is checked: the size, and one MD5 of each object against the file's.
#
# Env knobs (defaults):
#   BENCH_RUNS=5 BENCH_SIZE_MB=1024 BENCH_CONC=16 BENCH_RANGE_SECS=5 BENCH_WRK_THREADS=2
#   BENCH_DATA=/tmp/shardstore-sse-bench (needs ~3.5 GiB free; removed unless BENCH_KEEP=1)
#   BENCH_WAIT_IDLE=15 BENCH_MAX_BUSY=0.3 (see lib.sh `quiet`)  BENCH_PAUSE=1
#   SHARDSTORE_BIN   default: /tmp/build-bench/shardstore, else ./shardstore
#   BENCH_PHASES="put get range" (a subset, e.g. BENCH_PHASES=put, times only those; the PUTs
#                      always run: the GETs read their objects)
# Output: "RESULT ..." lines on stdout; progress on stderr.
set -euo pipefail

BENCH_TAG=sse
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-5}
SIZE_MB=${BENCH_SIZE_MB:-1024}
SIZE=$((SIZE_MB * 1048576))
CONC=${BENCH_CONC:-16}
RSECS=${BENCH_RANGE_SECS:-5}
WTHREADS=${BENCH_WRK_THREADS:-2}
PAUSE=${BENCH_PAUSE:-1}
PHASES=" ${BENCH_PHASES:-put get range} "
DATA=${BENCH_DATA:-/tmp/shardstore-sse-bench}
AK=ssebenchAK0000000000 SK=ssebenchSK00000000000000000000000000000000
BUCKET=ssebench
W=$(mktemp -d)
SS_PID=""

cleanup() {
  ss_stop
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$DATA"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_tools curl wrk python3 openssl awk
find_bin /tmp/build-bench/shardstore ./shardstore "$SRC/shardstore"

rm -rf "$DATA"
mkdir -p "$DATA/ss"
FILE=$DATA/obj.bin
log "making a $SIZE_MB MiB random file"
head -c "$SIZE" /dev/urandom > "$FILE"
MD5=$(md5sum "$FILE" | cut -d' ' -f1)
printf 'volume_size = %dM\ninline_max = 0\n' $((SIZE_MB * 3 + 256)) > "$W/ss.conf"
ss_launch "$DATA/ss" "$W/ss.conf"
SS_EP="http://127.0.0.1:$SS_PORT"
ss_curl -f -X PUT "$SS_EP/$BUCKET" -o /dev/null || die "cannot create the bucket"

# put KEY [HEADER]: one timed PUT; prints MiB/s
put_once() {
  local key=$1 hdr=${2:-x-shard-bench: plain} out
  out=$(ss_curl -f -T "$FILE" -H "$hdr" -o /dev/null -w '%{time_total}' "$SS_EP/$BUCKET/$key") || die "PUT $key failed"
  mibs_of "$out" "$SIZE"
}
declare -A RUNS_OF CPU_OF
# measure NAME CMD...: runs CMD (which prints the figure); records it and the server's CPU
# seconds during it (a figure the other load on the machine disturbs less than wall time).
measure() {
  local name=$1 c0 c1 v cpu; shift
  c0=$(cpu_ticks "$SS_PID"); v=$("$@"); c1=$(cpu_ticks "$SS_PID")
  cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')
  RUNS_OF[$name]="${RUNS_OF[$name]:-} $v"; CPU_OF[$name]="${CPU_OF[$name]:-} $cpu"
  log "$name: $v (server CPU ${cpu}s)"
}

quiet put
for i in $(seq 1 "$RUNS"); do
  # Alternate which goes first; each overwrites its key (the old extents are freed).
  if [ $((i % 2)) = 1 ]; then
    sleep "$PAUSE"; measure put_plain put_once plain
    sleep "$PAUSE"; measure put_sse put_once enc 'x-amz-server-side-encryption: AES256'
  else
    sleep "$PAUSE"; measure put_sse put_once enc 'x-amz-server-side-encryption: AES256'
    sleep "$PAUSE"; measure put_plain put_once plain
  fi
done
hdr=$(ss_curl -sI "$SS_EP/$BUCKET/enc" | tr -d '\r')
echo "$hdr" | grep -qi '^x-amz-server-side-encryption: AES256' || die "the encrypted object is not SSE-S3"
URL_PLAIN=$(presign "$SS_EP" "$AK" "$SK" "$BUCKET" plain)
URL_SSE=$(presign "$SS_EP" "$AK" "$SK" "$BUCKET" enc)
for u in "$URL_PLAIN" "$URL_SSE"; do
  got=$(curl -sf "$u" | md5sum | cut -d' ' -f1)
  [ "$got" = "$MD5" ] || die "GET of $u: MD5 $got, expected $MD5"
done

[[ $PHASES == *" get "* ]] && quiet get
[[ $PHASES == *" get "* ]] && for i in $(seq 1 "$RUNS"); do
  if [ $((i % 2)) = 1 ]; then
    sleep "$PAUSE"; measure get_plain get_mibs "$URL_PLAIN"
    sleep "$PAUSE"; measure get_sse get_mibs "$URL_SSE"
  else
    sleep "$PAUSE"; measure get_sse get_mibs "$URL_SSE"
    sleep "$PAUSE"; measure get_plain get_mibs "$URL_PLAIN"
  fi
done

[[ $PHASES == *" range "* ]] && quiet range
[[ $PHASES == *" range "* ]] && for i in $(seq 1 "$RUNS"); do
  if [ $((i % 2)) = 1 ]; then
    sleep "$PAUSE"; measure range_plain range_reqs "$URL_PLAIN"
    sleep "$PAUSE"; measure range_sse range_reqs "$URL_SSE"
  else
    sleep "$PAUSE"; measure range_sse range_reqs "$URL_SSE"
    sleep "$PAUSE"; measure range_plain range_reqs "$URL_PLAIN"
  fi
done

GCM=$(openssl speed -elapsed -seconds 2 -evp aes-256-gcm 2>/dev/null | awk '
  /^type/ { for (i = 2; i <= NF; i++) if ($i == "16384") col = (i - 2) / 2 + 2 }
  col && $1 != "type" && NF >= col { v = $(col); sub(/k$/, "", v); printf "%.1f\n", v * 1000 / 1048576; exit }')
AESNI=$(grep -qw aes /proc/cpuinfo && echo yes || echo no)

for m in put get range; do
  [[ $PHASES == *" $m "* ]] || continue
  unit=MiB_s; [ "$m" = range ] && unit=req_s
  p=$(echo ${RUNS_OF[${m}_plain]} | median); e=$(echo ${RUNS_OF[${m}_sse]} | median)
  cp_=$(echo ${CPU_OF[${m}_plain]} | median); ce=$(echo ${CPU_OF[${m}_sse]} | median)
  echo "RESULT metric=${m} plain_${unit}=$(f1 "$p") sse_${unit}=$(f1 "$e") ratio=$(ratio "$e" "$p") plain_runs=$(csv ${RUNS_OF[${m}_plain]}) sse_runs=$(csv ${RUNS_OF[${m}_sse]}) server_cpu_s_plain=$cp_ sse=$ce cpu_ratio=$(ratio "$ce" "$cp_") cpu_runs_plain=$(csv ${CPU_OF[${m}_plain]}) cpu_runs_sse=$(csv ${CPU_OF[${m}_sse]})"
done
echo "RESULT metric=openssl_aes_256_gcm_16k MiB_s=$GCM aes_ni=$AESNI size_mb=$SIZE_MB runs=$RUNS conc=$CONC range_secs=$RSECS noise=${NOISE:-}"
