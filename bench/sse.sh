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

cat > "$W/presign.py" <<'PY'
import sys, boto3
from botocore.config import Config
ep, ak, sk, bucket, key = sys.argv[1:6]
c = boto3.client('s3', endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name='us-east-1', config=Config(signature_version='s3v4', s3={'addressing_style': 'path'}))
print(c.generate_presigned_url('get_object', Params={'Bucket': bucket, 'Key': key}, ExpiresIn=7200))
PY
cat > "$W/range.lua" <<'LUA'
local size  = tonumber(os.getenv("BR_SIZE"))
local rlen  = 65536
local path  = os.getenv("BR_PATH")
local counter = 0
function setup(thread) counter = counter + 1; thread:set("tid", counter) end
function init(args) math.randomseed(os.time() * 1000 + (tid or 0) * 7919); math.random(); math.random() end
function request()
  local off
  if math.random(2) == 1 then off = math.random(0, math.floor((size - rlen) / 4096)) * 4096
  else off = math.random(0, size - rlen) end
  return wrk.format("GET", path, { ["Range"] = "bytes=" .. off .. "-" .. (off + rlen - 1) })
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRKSTAT requests=%d bytes=%d non2xx=%d sockerr=%d dur_us=%d\n",
    summary.requests, summary.bytes, e.status, e.connect + e.read + e.write + e.timeout, summary.duration))
end
LUA

# put KEY [HEADER]: one timed PUT; prints MiB/s
put_once() {
  local key=$1 hdr=${2:-x-shard-bench: plain} out
  out=$(ss_curl -f -T "$FILE" -H "$hdr" -o /dev/null -w '%{time_total}' "$SS_EP/$BUCKET/$key") || die "PUT $key failed"
  mibs_of "$out" "$SIZE"
}
# get URL: one timed GET of the whole object; prints MiB/s
get_once() {
  local out t n
  out=$(curl -sf -o /dev/null -w '%{time_total} %{size_download}' "$1") || die "GET failed"
  t=${out% *}; n=${out#* }
  [ "$n" = "$SIZE" ] || die "GET returned $n bytes, expected $SIZE"
  mibs_of "$t" "$SIZE"
}
# range URL: one wrk run; prints req/s
range_once() {
  local url=$1 st requests dur non2xx
  BR_SIZE=$SIZE BR_PATH=/${url#http://*/} timeout $((RSECS + 40)) \
    wrk -t"$WTHREADS" -c"$CONC" -d"${RSECS}s" --timeout 10s -s "$W/range.lua" "${url%%/${url#http://*/}}" > "$W/wrk.out" 2>&1 \
    || { cat "$W/wrk.out" >&2; die "wrk failed"; }
  st=$(grep '^WRKSTAT' "$W/wrk.out") || die "no wrk summary"
  requests=$(kv requests "$st"); dur=$(kv dur_us "$st"); non2xx=$(kv non2xx "$st")
  [ "$non2xx" = 0 ] || die "wrk saw $non2xx non-2xx answers"
  awk -v r="$requests" -v d="$dur" 'BEGIN{printf "%.1f", r/(d/1e6)}'
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
URL_PLAIN=$(python3 "$W/presign.py" "$SS_EP" "$AK" "$SK" "$BUCKET" plain)
URL_SSE=$(python3 "$W/presign.py" "$SS_EP" "$AK" "$SK" "$BUCKET" enc)
for u in "$URL_PLAIN" "$URL_SSE"; do
  got=$(curl -sf "$u" | md5sum | cut -d' ' -f1)
  [ "$got" = "$MD5" ] || die "GET of $u: MD5 $got, expected $MD5"
done

quiet get
for i in $(seq 1 "$RUNS"); do
  if [ $((i % 2)) = 1 ]; then
    sleep "$PAUSE"; measure get_plain get_once "$URL_PLAIN"
    sleep "$PAUSE"; measure get_sse get_once "$URL_SSE"
  else
    sleep "$PAUSE"; measure get_sse get_once "$URL_SSE"
    sleep "$PAUSE"; measure get_plain get_once "$URL_PLAIN"
  fi
done

quiet range
for i in $(seq 1 "$RUNS"); do
  if [ $((i % 2)) = 1 ]; then
    sleep "$PAUSE"; measure range_plain range_once "$URL_PLAIN"
    sleep "$PAUSE"; measure range_sse range_once "$URL_SSE"
  else
    sleep "$PAUSE"; measure range_sse range_once "$URL_SSE"
    sleep "$PAUSE"; measure range_plain range_once "$URL_PLAIN"
  fi
done

GCM=$(openssl speed -elapsed -seconds 2 -evp aes-256-gcm 2>/dev/null | awk '
  /^type/ { for (i = 2; i <= NF; i++) if ($i == "16384") col = (i - 2) / 2 + 2 }
  col && $1 != "type" && NF >= col { v = $(col); sub(/k$/, "", v); printf "%.1f\n", v * 1000 / 1048576; exit }')
AESNI=$(grep -qw aes /proc/cpuinfo && echo yes || echo no)

for m in put get range; do
  unit=MiB_s; [ "$m" = range ] && unit=req_s
  p=$(echo ${RUNS_OF[${m}_plain]} | median); e=$(echo ${RUNS_OF[${m}_sse]} | median)
  cp_=$(echo ${CPU_OF[${m}_plain]} | median); ce=$(echo ${CPU_OF[${m}_sse]} | median)
  echo "RESULT metric=${m} plain_${unit}=$(f1 "$p") sse_${unit}=$(f1 "$e") ratio=$(ratio "$e" "$p") plain_runs=$(csv ${RUNS_OF[${m}_plain]}) sse_runs=$(csv ${RUNS_OF[${m}_sse]}) server_cpu_s_plain=$cp_ sse=$ce cpu_ratio=$(ratio "$ce" "$cp_") cpu_runs_plain=$(csv ${CPU_OF[${m}_plain]}) cpu_runs_sse=$(csv ${CPU_OF[${m}_sse]})"
done
echo "RESULT metric=openssl_aes_256_gcm_16k MiB_s=$GCM aes_ni=$AESNI size_mb=$SIZE_MB runs=$RUNS conc=$CONC range_secs=$RSECS noise=${NOISE:-}"
