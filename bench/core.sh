#!/usr/bin/env bash
# bench/core.sh: benchmarks of shardstore's core store, side by side with nginx (static
# file, the HTTP limit of this machine) and Ceph RGW, all on 127.0.0.1, in one sitting.
#
# Usage: bench/core.sh            (from anywhere; about 5-8 minutes with both peers)
#
# Order: baselines (openssl, dd, fdatasync); shardstore's PUTs and multipart upload; nginx
# started beside it; then the GET phases with both servers up, interleaved: the page cache is
# emptied once and every object read gets one untimed GET, so all are cached alike; then round
# i is one timed run of shardstore, one of nginx and one of the multipart object, in that
# order, for i = 1..BENCH_RUNS (range_64k and range_64k_many: shardstore's run i, then
# nginx's). So each ratio is taken side by side: this machine is shared, and a script that timed
# nginx minutes after shardstore put the drift of others' load into its ratios (0.67-0.71x
# printed where interleaved runs gave 0.85-0.93x; docs/DESIGN.md, issue 19, fourth pass).
# Then the small PUTs (shardstore alone) and Ceph RGW in its own phase (started after the others
# stop: beside them it would take their memory and cores), so ratios against Ceph still carry the
# drift between phases.
#
# Figures (each the median of BENCH_RUNS runs; all runs listed):
#   get_single_stream  one 1 GiB random object, curl -o /dev/null on a SigV4 presigned URL
#                      (nginx: plain URL), MiB/s, and the server's CPU s per GET.
#   get_multipart      the same bytes uploaded as BENCH_MP_PARTS parts (shard cp, 16 in flight), read
#                      the same way, beside nginx's single-stream figure.
#   range_64k          wrk, BENCH_CONC connections, BENCH_RANGE_SECS s, Range GETs of
#                      BENCH_RANGE_BYTES at random offsets (half 4 KiB-aligned, half not) on the
#                      presigned URL, so the signature is verified on every request; req/s,
#                      p50/p99, and the server's CPU (cores busy, CPU s per run, CPU us per request).
#   range_64k_many     the same with BENCH_CONC_MANY connections (shardstore and nginx): what
#                      thousands of data-loader readers look like to the server.
#   pairs              for each interleaved figure, shardstore's run i over nginx's run i: the
#                      median of these pair ratios (less exposed to load that comes and goes),
#                      all of them, and the ratio of the medians ("RESULT pairs ..." lines).
#   put_single_stream  1 GiB single PUT into shardstore with curl -T:
#                      unsigned   x-amz-content-sha256: UNSIGNED-PAYLOAD (server hashes MD5 only)
#                      sha256     x-amz-content-sha256: <hex> precomputed (server: MD5 + SHA-256)
#                      boto3      put_object default config (signed body + CRC32; the client
#                                 hashes the file before sending, that time is included)
#                      beside `openssl speed -evp md5` (16384-byte column, one core) and
#                      dd oflag=direct conv=fdatasync of 1 GiB in the data dir's filesystem.
#   small_put          shard bench put (the project's load generator): BENCH_SMALL_SIZE-byte objects,
#                      BENCH_SMALL_CONC clients, BENCH_SMALL_N objects or BENCH_SMALL_SECS s,
#                      group_commit on and off (fresh server each); PUT/s, p50/p99, and
#                      ops per index commit from /_/metrics.
#   peak_rss           VmHWM of the shardstore process at the end of each phase.
# Every object is checked before it is measured: ETag = MD5 of the file after each PUT,
# one range compared byte for byte per server, and a tampered presigned URL must get 403.
#
# Env knobs (defaults):
#   BENCH_PEERS="nginx ceph"   peers to run beside shardstore ("" for shardstore alone)
#   BENCH_RUNS=3  BENCH_SIZE_MB=1024  BENCH_FILE=/tmp/bench-${SIZE}MiB.bin (shared with peers/bench.sh)
#   BENCH_CONC_MANY=512 ("" to skip)
#   BENCH_CONC=16 BENCH_RANGE_SECS=8 BENCH_RANGE_BYTES=65536 BENCH_WRK_THREADS=2
#   BENCH_RANGE_ALIGN=mixed    mixed | N (offsets are multiples of N; 1 = any byte)
#   BENCH_SMALL_N=20000 BENCH_SMALL_SECS=10 BENCH_SMALL_CONC=16 BENCH_SMALL_SIZE=4096
#   BENCH_SKIP=""              words among: put signed boto3 get mpget range small nginx ceph dd openssl sync
#                              (put: no timed PUTs, one untimed PUT loads the object the GETs read;
#                              signed and boto3 go with it). GET phases alone:
#                              BENCH_SKIP="put small dd openssl sync ceph"
#   BENCH_MP_PARTS=64          get_multipart: the object uploaded again as this many parts (shard cp)
#   BENCH_DROP_CACHES=1        as root, empty the page cache before the GET phases (and Ceph's), so
#                              every object is cached afresh by its warm-up GET (see cold_cache)
#   BENCH_WAIT_IDLE=15 BENCH_MAX_BUSY=0.3  before each phase wait up to this long for the machine
#                              to be quiet (others using <= MAX_BUSY cores); the level seen is reported
#   BENCH_DATA=/tmp/shardstore-core-bench   scratch dir (shardstore data, nginx docroot, dd file;
#                              needs ~3.6 GiB free; removed at the end unless BENCH_KEEP=1)
#   BENCH_CONN_MEMORY=""       shardstore "connection_memory" (MHD's per-connection pool; "": the
#                              server's default)
#   BENCH_EXTRA_CONF=""        more shardstore config lines ('\n'-separated), e.g.
#                              "thread_per_connection = on" to measure the older connection model
#   BENCH_NGINX_PORT=18081 BENCH_CEPH_PORT=18084  BENCH_PAUSE=2 (idle s before each timed run)
#   SHARDSTORE_BIN             default: /tmp/build-bench/shardstore, else ./shardstore
#   SHARD_BIN                  default: shard next to SHARDSTORE_BIN
#   SHARDSTORE_PEERS           the peers directory (nginx/ and ceph/, each with start.sh and
#                              stop.sh); needed unless BENCH_PEERS="" (or both are in BENCH_SKIP)
# Output: "RESULT ..." lines on stdout (side by side at the end, per-server "DETAIL" lines as
# they come); progress on stderr.
set -euo pipefail

BENCH_TAG=core
. "$(dirname "$0")/lib.sh"
PEERS=${BENCH_PEERS-nginx ceph}
RUNS=${BENCH_RUNS:-3}
SIZE_MB=${BENCH_SIZE_MB:-1024}
SIZE=$((SIZE_MB * 1024 * 1024))
FILE=${BENCH_FILE:-/tmp/bench-${SIZE_MB}MiB.bin}
CONC=${BENCH_CONC:-16}
MANY=${BENCH_CONC_MANY-512}
RSECS=${BENCH_RANGE_SECS:-8}
RBYTES=${BENCH_RANGE_BYTES:-65536}
RALIGN=${BENCH_RANGE_ALIGN:-mixed}
WTHREADS=${BENCH_WRK_THREADS:-2}
SMALL_N=${BENCH_SMALL_N:-20000}
SMALL_SECS=${BENCH_SMALL_SECS:-10}
SMALL_CONC=${BENCH_SMALL_CONC:-16}
SMALL_SIZE=${BENCH_SMALL_SIZE:-4096}
SKIP=" ${BENCH_SKIP:-} "
DATA=${BENCH_DATA:-/tmp/shardstore-core-bench}
CONN_MEMORY=${BENCH_CONN_MEMORY:-}
NGINX_PORT=${BENCH_NGINX_PORT:-18081}
CEPH_PORT=${BENCH_CEPH_PORT:-18084}
PAUSE=${BENCH_PAUSE:-2}
MP_PARTS=${BENCH_MP_PARTS:-64}
AK=k SK=s                      # shardstore root keys for this run
CEPH_AK=cephbench CEPH_SK=cephbenchsecret
BUCKET=bench KEY=obj-${SIZE_MB}MiB
export AWS_DEFAULT_REGION=us-east-1

WANT_PEERS=""; for p in nginx ceph; do peer_on $p && WANT_PEERS="$WANT_PEERS $p"; done
[ -z "$WANT_PEERS" ] || need_peers $WANT_PEERS
need_tools curl wrk python3 openssl awk
python3 -c 'import boto3' 2>/dev/null || die "python3 boto3 missing"

W=$(mktemp -d /tmp/core-bench.XXXXXX)
SS_PID="" STARTED_NGINX="" STARTED_CEPH=""
cleanup() {
  set +e
  [ -n "$SS_PID" ] && ss_stop
  [ -n "$STARTED_NGINX" ] && peer_stop nginx "$NGINX_PORT" "$DATA/nginx"
  [ -n "$STARTED_CEPH" ] && peer_stop ceph "$CEPH_PORT"
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$DATA"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------- tools ----------------
find_bin /tmp/build-bench/shardstore ./shardstore "$SRC/shardstore"
SHARD=${SHARD_BIN:-$(dirname "$BIN")/shard}
[ -x "$SHARD" ] || die "shard (the load generator) not found next to $BIN; set SHARD_BIN"

# Presign / put helper (boto3, SigV4, path-style).
cat > "$W/s3.py" <<'PY'
import sys, time, boto3
from botocore.config import Config
op, ep, ak, sk, bucket, key = sys.argv[1:7]
c = boto3.client('s3', endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name='us-east-1',
                 config=Config(signature_version='s3v4', s3={'addressing_style': 'path'},
                               retries={'max_attempts': 1}, read_timeout=900))
if op == 'presign':
    print(c.generate_presigned_url('get_object', Params={'Bucket': bucket, 'Key': key}, ExpiresIn=7200))
elif op == 'put':
    with open(sys.argv[7], 'rb') as f:
        t0 = time.monotonic()
        r = c.put_object(Bucket=bucket, Key=key, Body=f)
        t1 = time.monotonic()
    print('%.3f %s' % (t1 - t0, r['ETag'].strip('"')))
elif op == 'mb':
    try:
        c.create_bucket(Bucket=bucket)
    except c.exceptions.BucketAlreadyOwnedByYou:
        pass
elif op == 'size':
    try:
        print(c.head_object(Bucket=bucket, Key=key)['ContentLength'])
    except Exception:
        print(-1)
PY
s3py() { timeout 900 python3 "$W/s3.py" "$@"; }

# ---------------- the object ----------------
if [ ! -f "$FILE" ] || [ "$(stat -c %s "$FILE")" != "$SIZE" ]; then
  log "creating $FILE ($SIZE_MB MiB random)"
  head -c "$SIZE" /dev/urandom > "$FILE.tmp.$$" && mv "$FILE.tmp.$$" "$FILE"
fi
mkdir -p "$DATA"
# shardstore's object twice (a PUT's new extents before the old are freed; the multipart copy) and
# nginx's copy beside them
need_kib=$(( (SIZE / 1024) * 3 + 600 * 1024 ))
avail_kib=$(df -Pk "$DATA" | awk 'NR==2{print $4}')
[ "$avail_kib" -gt "$need_kib" ] || die "need $((need_kib / 1024)) MiB free under $DATA, have $((avail_kib / 1024)) MiB"
log "hashing $FILE"
FILE_MD5=$(md5sum "$FILE" | cut -d' ' -f1)
FILE_SHA256=$(sha256sum "$FILE" | cut -d' ' -f1)

echo "RESULT env date=$(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) cores=$(nproc) kernel=$(uname -r) commit=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown) runs=$RUNS object_MiB=$SIZE_MB fs=$(df -P "$DATA" | awk 'NR==2{print $1}') peers=$(csv $PEERS) loadavg=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)"

# ---------------- shardstore lifecycle ----------------
ss_start() { # ss_start DATADIR GROUP_COMMIT
  local dir=$1 gc=$2
  rm -rf "$dir"; mkdir -p "$dir"
  printf 'volume_size = %s\ngroup_commit = %s\ninline_max = 0\nlog_level = warn\n' \
    "${BENCH_VOLUME_SIZE:-8G}" "$gc" > "$dir.conf"
  [ -z "$CONN_MEMORY" ] || echo "connection_memory = $CONN_MEMORY" >> "$dir.conf"
  # All benchmark clients share one address: lift the per-address cap (a
  # binary older than the cap knows no such directive: before/after runs).
  if grep -q connection_limit_per_ip "$BIN" 2>/dev/null; then
    echo 'connection_limit_per_ip = 0' >> "$dir.conf"
  fi
  [ -z "${BENCH_EXTRA_CONF:-}" ] || printf '%b\n' "$BENCH_EXTRA_CONF" >> "$dir.conf"
  ss_launch "$dir" "$dir.conf"
  log "shardstore pid $SS_PID on $SS_EP (group_commit=$gc, data $dir)"
}

# ---------------- shared GET / range measurement ----------------
cat > "$W/range.lua" <<'LUA'
local size  = tonumber(os.getenv("BR_SIZE"))
local rlen  = tonumber(os.getenv("BR_LEN"))
local align = os.getenv("BR_ALIGN")
local path  = os.getenv("BR_PATH")
local counter = 0
function setup(thread) counter = counter + 1; thread:set("tid", counter) end
function init(args) math.randomseed(os.time() * 1000 + (tid or 0) * 7919); math.random(); math.random() end
function request()
  local off
  if align == "mixed" then
    if math.random(2) == 1 then off = math.random(0, math.floor((size - rlen) / 4096)) * 4096
    else off = math.random(0, size - rlen) end
  else
    local a = tonumber(align)
    off = math.random(0, math.floor((size - rlen) / a)) * a
  end
  return wrk.format("GET", path, { ["Range"] = "bytes=" .. off .. "-" .. (off + rlen - 1) })
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRKSTAT requests=%d bytes=%d non2xx=%d sockerr=%d p50_us=%d p99_us=%d dur_us=%d\n",
    summary.requests, summary.bytes, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), summary.duration))
end
LUA

# check_object NAME URL [TAMPERED_URL]: a range byte for byte, the size, and auth.
check_object() {
  local name=$1 url=$2 bad=${3:-} off code hs
  off=$(( (SIZE / 3) | 12345 ))
  cmp <(timeout 60 curl -sf -r "$off-$((off + RBYTES - 1))" "$url") <(tail -c +$((off + 1)) "$FILE" | head -c "$RBYTES") \
    || die "$name: range GET content mismatch"
  hs=$( (timeout 60 curl -sf -r 1-1 --max-time 30 -D - -o /dev/null "$url" || true) | tr -d '\r' | awk -F'/' 'tolower($0) ~ /^content-range:/{print $NF}')
  [ "$hs" = "$SIZE" ] || die "$name: object size from Content-Range is '$hs', expected $SIZE"
  if [ -n "$bad" ]; then
    code=$(timeout 60 curl -s -r 0-9 -o /dev/null -w '%{http_code}' "$bad")
    [ "$code" = 403 ] || die "$name: tampered presigned URL answered $code, not 403"
  fi
  log "$name: range at $off matches byte for byte, size $hs$([ -n "$bad" ] && echo ", tampered URL -> 403")"
}
tamper() { # flip the first hex digit of the signature
  local u=$1 c=${1##*X-Amz-Signature=}; c=${c:0:1}
  local r=0; [ "$c" = 0 ] && r=1
  echo "${u/X-Amz-Signature=$c/X-Amz-Signature=$r}"
}

# wait until a 1-byte GET answers within 1 s (a slow server may still serve abandoned requests)
drain() {
  local url=$1 deadline=$(( $(date +%s) + 120 ))
  until timeout 5 curl -sf -r 1-1 --max-time 1 -o /dev/null "$url"; do
    [ "$(date +%s)" -lt "$deadline" ] || { log "server still slow after 120 s; going on"; return 0; }
    sleep 1
  done
}

# The objects read: URL_OF[NAME] is the URL the GETs and wrk read, PIDS_OF[NAME] the processes
# whose CPU is counted. shardstore_many / nginx_many read the same URLs with BENCH_CONC_MANY
# connections; shardstore_mp is the multipart object.
declare -A URL_OF PIDS_OF
declare -A GET_MED GET_RUNS GET_CPU RNG_MED RNG_RUNS RNG_P50 RNG_P99 RNG_CORES RNG_CPUS RNG_ERR RNG_USPR
# warm NAME...: one untimed whole GET of each object. Called after cold_cache, before any timed
# run, so every server reads from the page cache alike (a volume written with O_DIRECT has none of
# its object cached; nginx's copy would be cached whole by cp).
# For a shardstore object it also says how that GET was sent: zero copy (one sendfile span) or
# streamed (pread and copy: the object's extents are not adjacent on disk), which changes its
# figure; the counters of the whole phase cannot tell the objects apart.
warm() {
  local n z0=0 s0=0 z1 s1
  for n in "$@"; do
    if [ "${PIDS_OF[$n]}" = "${SS_PID:-}" ]; then
      z0=$(ss_metric shardstore_get_zero_copy_total); s0=$(ss_metric shardstore_get_streamed_total)
    fi
    timeout 900 curl -sf -o /dev/null "${URL_OF[$n]}" || die "$n: warm-up GET failed"
    log "$n: warm-up GET done"
    if [ "${PIDS_OF[$n]}" = "${SS_PID:-}" ]; then
      z1=$(ss_metric shardstore_get_zero_copy_total); s1=$(ss_metric shardstore_get_streamed_total)
      echo "RESULT detail server=$n metric=get_path_of_object zero_copy=$((z1 - z0)) streamed=$((s1 - s0)) (its warm-up GET)"
    fi
  done
}
# measure_gets NAME...: RUNS rounds; round i times one single-stream GET of each NAME's object in
# the order given (all the servers are up), so run i of each server sees the same machine.
# MiB/s and the server's CPU s per GET.
measure_gets() {
  local n i out t c0 c1
  local -A mibs=() cpu_s=()
  for i in $(seq 1 "$RUNS"); do
    for n in "$@"; do
      sleep "$PAUSE"
      # shellcheck disable=SC2086 # PIDS_OF holds a list
      c0=$(cpu_ticks ${PIDS_OF[$n]})
      out=$(timeout 900 curl -sf -o /dev/null -w '%{time_total} %{size_download}' "${URL_OF[$n]}") || die "$n: GET failed"
      # shellcheck disable=SC2086
      c1=$(cpu_ticks ${PIDS_OF[$n]})
      t=${out% *}
      [ "${out#* }" = "$SIZE" ] || die "$n: GET returned ${out#* } bytes, expected $SIZE"
      mibs[$n]="${mibs[$n]:-} $(mibs_of "$t" "$SIZE")"
      cpu_s[$n]="${cpu_s[$n]:-} $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
      log "$n get run $i: $t s = $(mibs_of "$t" "$SIZE") MiB/s"
    done
  done
  for n in "$@"; do
    GET_MED[$n]=$(echo ${mibs[$n]} | median); GET_RUNS[$n]=$(csv ${mibs[$n]}); GET_CPU[$n]=$(csv ${cpu_s[$n]})
    echo "RESULT detail server=$n metric=get_single_stream MiB_s=$(f1 "${GET_MED[$n]}") runs=${GET_RUNS[$n]} server_cpu_s_runs=${GET_CPU[$n]}"
  done
}
# measure_ranges NAME...: RUNS rounds of wrk random-range runs (RCONC=N connections instead of
# CONC), round i one run per NAME in the order given; the CPU of PIDS_OF[NAME] during each run.
measure_ranges() {
  local conc=${RCONC:-$CONC} n i url pids path ep
  local c0 c1 w0 w1 m0 m1 st requests bytes non2xx sockerr p50_us p99_us dur_us rps
  local -A r_rps=() r_p50=() r_p99=() r_cores=() r_cpus=() r_uspr=() r_mach=() r_errs=()
  export BR_SIZE=$SIZE BR_LEN=$RBYTES BR_ALIGN=$RALIGN
  for i in $(seq 1 "$RUNS"); do
    for n in "$@"; do
      url=${URL_OF[$n]} pids=${PIDS_OF[$n]}
      path=/${url#http://*/} ep=${url%%/"${url#http://*/}"}
      sleep "$PAUSE"; drain "$url"
      # shellcheck disable=SC2086
      c0=$(cpu_ticks $pids); read -r m0 _ < <(busy_jiffies); w0=$(now)
      BR_PATH=$path timeout $((RSECS + 40)) wrk -t"$WTHREADS" -c"$conc" -d"${RSECS}s" --timeout 10s -s "$W/range.lua" "$ep" > "$W/wrk.out" 2>&1 \
        || { cat "$W/wrk.out" >&2; die "$n: wrk failed"; }
      # shellcheck disable=SC2086
      c1=$(cpu_ticks $pids); read -r m1 _ < <(busy_jiffies); w1=$(now)
      r_mach[$n]="${r_mach[$n]:-} $(busy_cores "$m0" "$m1" "$w0" "$w1")"
      st=$(grep '^WRKSTAT' "$W/wrk.out") || { cat "$W/wrk.out" >&2; die "$n: no wrk summary"; }
      requests=$(kv requests "$st"); bytes=$(kv bytes "$st"); non2xx=$(kv non2xx "$st"); sockerr=$(kv sockerr "$st")
      p50_us=$(kv p50_us "$st"); p99_us=$(kv p99_us "$st"); dur_us=$(kv dur_us "$st")
      [ "$requests" -gt 0 ] || die "$n: wrk made no requests"
      [ $((bytes / requests)) -ge "$RBYTES" ] || die "$n: responses average $((bytes / requests)) bytes < $RBYTES"
      rps=$(awk -v r="$requests" -v d="$dur_us" 'BEGIN{printf "%.1f", r/(d/1e6)}')
      r_rps[$n]="${r_rps[$n]:-} $rps"
      r_p50[$n]="${r_p50[$n]:-} $(awk -v x="$p50_us" 'BEGIN{printf "%.2f", x/1000}')"
      r_p99[$n]="${r_p99[$n]:-} $(awk -v x="$p99_us" 'BEGIN{printf "%.2f", x/1000}')"
      r_errs[$n]=$(( ${r_errs[$n]:-0} + non2xx + sockerr ))
      r_cores[$n]="${r_cores[$n]:-} $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v t0="$w0" -v t1="$w1" 'BEGIN{printf "%.2f", (b-a)/hz/(t1-t0)}')"
      r_cpus[$n]="${r_cpus[$n]:-} $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
      r_uspr[$n]="${r_uspr[$n]:-} $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v r="$requests" 'BEGIN{printf "%.1f", (b-a)/hz/r*1e6}')"
      log "$n range run $i: $rps req/s p50=${p50_us}us p99=${p99_us}us non2xx=$non2xx sockerr=$sockerr"
    done
  done
  for n in "$@"; do
    RNG_MED[$n]=$(echo ${r_rps[$n]} | median); RNG_RUNS[$n]=$(csv ${r_rps[$n]})
    RNG_P50[$n]=$(echo ${r_p50[$n]} | median); RNG_P99[$n]=$(echo ${r_p99[$n]} | median); RNG_ERR[$n]=${r_errs[$n]}
    RNG_CORES[$n]=$(echo ${r_cores[$n]} | median); RNG_CPUS[$n]=$(echo ${r_cpus[$n]} | median); RNG_USPR[$n]=$(csv ${r_uspr[$n]})
    echo "RESULT detail server=$n metric=range_64k req_s=$(f1 "${RNG_MED[$n]}") runs=${RNG_RUNS[$n]} p50_ms=${RNG_P50[$n]} p99_ms=${RNG_P99[$n]} errors=${r_errs[$n]} server_cores=${RNG_CORES[$n]} server_cpu_s_per_run=${RNG_CPUS[$n]} (${RSECS}s runs; cpu of pids $(csv ${PIDS_OF[$n]})) machine_busy_cores=$(csv ${r_mach[$n]}) (server+wrk+others, of $(nproc)) conc=$conc range_bytes=$RBYTES align=$RALIGN server_cpu_us_per_req_runs=${RNG_USPR[$n]}"
  done
}
# pair_line METRIC A B ARRAY: the runs of A and B in ARRAY (comma lists, taken round by round
# side by side): the median of the per-round ratios A/B, the ratios, and the ratio of the medians.
pair_line() {
  local metric=$1 a=$2 b=$3 pr
  local -n arr=$4
  [ -n "${arr[$a]:-}" ] && [ -n "${arr[$b]:-}" ] || return 0
  pr=$(pair_ratios "${arr[$a]}" "${arr[$b]}")
  echo "RESULT pairs metric=$metric of=$a/$b pair_ratio=$(f2 "$(echo $pr | median)") pair_ratios=$(csv $pr) ratio_of_medians=$(ratio "$(echo "${arr[$a]}" | median)" "$(echo "${arr[$b]}" | median)") runs_$a=${arr[$a]} runs_$b=${arr[$b]}"
}

# ---------------- machine baselines: MD5/SHA-256 on one core, direct-I/O dd ----------------
MD5_MIBS=nan SHA_MIBS=nan DD_MIBS=nan DD_RUNS=""
openssl_mibs() { # 16384-byte column of openssl speed, in MiB/s (openssl prints 1000s of bytes/s);
  # -elapsed: wall-clock like the PUT figures, so a busy machine slows both alike
  openssl speed -elapsed -seconds "${BENCH_OPENSSL_SECS:-2}" -evp "$1" 2>/dev/null | awk '
    /^type/ { for (i = 2; i <= NF; i++) if ($i == "16384") col = (i - 2) / 2 + 2 }  # "type 16 bytes 64 bytes ..."
    col && $1 != "type" && NF >= col { v = $(col); sub(/k$/, "", v); printf "%.1f\n", v * 1000 / 1048576; exit }'
}
if ! skip openssl; then
  quiet openssl
  log "openssl speed md5 / sha256 (one core)"
  MD5_MIBS=$(openssl_mibs md5); SHA_MIBS=$(openssl_mibs sha256)
  echo "RESULT detail metric=openssl_speed_16k md5_MiB_s=$MD5_MIBS sha256_MiB_s=$SHA_MIBS md5+sha256_serial_MiB_s=$(awk -v a="$MD5_MIBS" -v b="$SHA_MIBS" 'BEGIN{printf "%.1f", 1/(1/a+1/b)}')"
fi
if ! skip dd; then
  quiet dd
  for i in $(seq 1 "$RUNS"); do
    sleep 1
    s=$(LC_ALL=C dd if=/dev/zero of="$DATA/dd.bin" bs=1M count="$SIZE_MB" oflag=direct conv=fdatasync 2>&1 | awk '/copied/{for(i=1;i<=NF;i++) if($i=="s,") print $(i-1)}')
    rm -f "$DATA/dd.bin"
    DD_RUNS="$DD_RUNS $(mibs_of "$s" "$SIZE")"; log "dd run $i: $s s"
  done
  DD_MIBS=$(echo $DD_RUNS | median)
  echo "RESULT detail metric=dd_direct_write MiB_s=$DD_MIBS runs=$(csv $DD_RUNS) how=dd-bs1M-oflag=direct-conv=fdatasync dir=$DATA"
fi

# fdatasync latency after a 4 KiB write, appending (allocates: a journal commit) and overwriting
# (data only): each shardstore commit costs ~3 syncs (volume fdatasync, LMDB data fdatasync,
# LMDB meta page O_DSYNC write), which bounds PUT/s without group commit.
SYNC_APPEND=nan SYNC_OVER=nan
if ! skip sync; then
  quiet sync
  read -r SYNC_APPEND SYNC_OVER < <(python3 - "$DATA/sync.bin" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
def run():
    t = []
    for i in range(300):
        os.pwrite(fd, b'x' * 4096, i * 4096)
        t0 = time.perf_counter(); os.fdatasync(fd); t.append(time.perf_counter() - t0)
    t.sort(); return t[len(t) // 2] * 1e3
a = run(); o = run()
os.close(fd); os.unlink(sys.argv[1])
print('%.3f %.3f' % (a, o))
PY
)
  echo "RESULT detail metric=fdatasync_after_4k_write append_p50_ms=$SYNC_APPEND overwrite_p50_ms=$SYNC_OVER n=300 dir=$DATA"
fi

# ---------------- shardstore: big object ----------------
declare -A PUT_MED PUT_RUNS PUT_CPU
HWM_PUT=nan HWM_MP=nan HWM_GET=nan HWM_RANGE=nan
ss_start "$DATA/ss-big" on
ss_curl -f -X PUT "$SS_EP/$BUCKET" -o /dev/null || die "create bucket failed"
put_curl() { # put_curl LABEL SHA256HDR [N]: N (default RUNS) single PUTs of FILE with curl -T
  local label=$1 hdr=$2 n=${3:-$RUNS} i out t code etag runs="" c0 c1 cpus=""
  for i in $(seq 1 "$n"); do
    sleep "$PAUSE"
    c0=$(cpu_ticks "$SS_PID")
    out=$(timeout 900 curl -s --aws-sigv4 aws:amz:us-east-1:s3 -u "$AK:$SK" -H "x-amz-content-sha256: $hdr" \
      -T "$FILE" -D "$W/put.hdr" -o "$W/put.body" -w '%{time_total} %{http_code}' "$SS_EP/$BUCKET/$KEY") || die "PUT ($label) failed"
    c1=$(cpu_ticks "$SS_PID"); cpus="$cpus $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
    t=${out% *}; code=${out#* }
    [ "$code" = 200 ] || { cat "$W/put.body" >&2; die "PUT ($label) answered $code"; }
    etag=$(tr -d '\r"' < "$W/put.hdr" | awk 'tolower($1)=="etag:"{print $2}')
    [ "$etag" = "$FILE_MD5" ] || die "PUT ($label): ETag $etag != md5 $FILE_MD5"
    runs="$runs $(mibs_of "$t" "$SIZE")"; log "put $label run $i: $t s = $(mibs_of "$t" "$SIZE") MiB/s"
  done
  PUT_MED[$label]=$(echo $runs | median); PUT_RUNS[$label]=$(csv $runs); PUT_CPU[$label]=$(echo $cpus | median)
}
if skip put; then
  put_curl load UNSIGNED-PAYLOAD 1   # the object the GETs read; not a figure
else
  quiet put
  put_curl unsigned UNSIGNED-PAYLOAD
  skip signed || put_curl sha256 "$FILE_SHA256"
  if ! skip boto3; then
    runs=""
    for i in $(seq 1 "$RUNS"); do
      sleep "$PAUSE"
      out=$(s3py put "$SS_EP" "$AK" "$SK" "$BUCKET" "$KEY" "$FILE") || die "boto3 put_object failed"
      [ "${out#* }" = "$FILE_MD5" ] || die "boto3 put: ETag ${out#* } != md5"
      runs="$runs $(mibs_of "${out% *}" "$SIZE")"; log "put boto3 run $i: ${out% *} s"
    done
    PUT_MED[boto3]=$(echo $runs | median); PUT_RUNS[boto3]=$(csv $runs)
  fi
fi
HWM_PUT=$(hwm_mib "$SS_PID")
for l in unsigned sha256 boto3; do
  [ -n "${PUT_MED[$l]:-}" ] && echo "RESULT detail server=shardstore metric=put_single_stream_$l MiB_s=$(f1 "${PUT_MED[$l]}") runs=${PUT_RUNS[$l]} server_cpu_s=${PUT_CPU[$l]:-nan} MiB_per_server_cpu_s=$(ratio "$SIZE_MB" "${PUT_CPU[$l]:-0}")"
done
SS_URL=$(s3py presign "$SS_EP" "$AK" "$SK" "$BUCKET" "$KEY")
case "$SS_URL" in *X-Amz-Algorithm=AWS4-HMAC-SHA256*) ;; *) die "presigned URL is not SigV4: $SS_URL";; esac
af0=$(ss_metric shardstore_auth_failures_total)
check_object shardstore "$SS_URL" "$(tamper "$SS_URL")"
af1=$(ss_metric shardstore_auth_failures_total)
[ "${af1:-0}" -gt "${af0:-0}" ] || die "shardstore: auth_failures_total did not move on a tampered URL"
URL_OF[shardstore]=$SS_URL PIDS_OF[shardstore]=$SS_PID
URL_OF[shardstore_many]=$SS_URL PIDS_OF[shardstore_many]=$SS_PID
GET_NAMES=shardstore RANGE_NAMES=shardstore
if ! skip get && ! skip mpget; then
  # The same bytes as a BENCH_MP_PARTS-part multipart object (shard cp, 16 parts in flight):
  # a multipart checkpoint read back by one stream.
  AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK timeout 900 "$SHARD" --endpoint-url "$SS_EP" -q \
    --parallel 16 --part-size $(( (SIZE + MP_PARTS - 1) / MP_PARTS )) cp "$FILE" "s3://$BUCKET/$KEY.mp" \
    || die "multipart upload (shard cp) failed"
  HWM_MP=$(hwm_mib "$SS_PID")
  SS_MP_URL=$(s3py presign "$SS_EP" "$AK" "$SK" "$BUCKET" "$KEY.mp")
  check_object shardstore_mp "$SS_MP_URL"
  URL_OF[shardstore_mp]=$SS_MP_URL PIDS_OF[shardstore_mp]=$SS_PID
fi

# ---------------- nginx: the same bytes as a static file, up beside shardstore ----------------
if peer_on nginx; then
  NG_RUN=${PEERS_RUN:-/tmp/peers-run}/nginx-$NGINX_PORT
  if port_busy "$NGINX_PORT"; then die "port $NGINX_PORT busy; set BENCH_NGINX_PORT"; fi
  mkdir -p "$DATA/nginx/$BUCKET"; cp "$FILE" "$DATA/nginx/$BUCKET/$KEY"
  STARTED_NGINX=1
  peer_start nginx "$NGINX_PORT" "$DATA/nginx"
  NG_MASTER=$(cat "$NG_RUN/nginx.pid"); NG_PIDS="$NG_MASTER $(pgrep -P "$NG_MASTER" | tr '\n' ' ')"
  NG_URL=http://127.0.0.1:$NGINX_PORT/$BUCKET/$KEY
  check_object nginx "$NG_URL"
  URL_OF[nginx]=$NG_URL PIDS_OF[nginx]=$NG_PIDS
  URL_OF[nginx_many]=$NG_URL PIDS_OF[nginx_many]=$NG_PIDS
  GET_NAMES="shardstore nginx" RANGE_NAMES="shardstore nginx"
fi
[ -z "${URL_OF[shardstore_mp]:-}" ] || GET_NAMES="$GET_NAMES shardstore_mp"

# ---------------- GETs and range GETs, shardstore and nginx interleaved ----------------
# One page-cache state for all: empty it, then one untimed GET of every object read below.
if ! skip get || ! skip range; then
  cold_cache
  if skip get; then warm $RANGE_NAMES; else warm $GET_NAMES; fi
fi
if ! skip get; then
  quiet get; measure_gets $GET_NAMES; HWM_GET=$(hwm_mib "$SS_PID")
  if [ -n "${URL_OF[shardstore_mp]:-}" ]; then
    z=$(ss_metric shardstore_get_zero_copy_total); s=$(ss_metric shardstore_get_streamed_total)
    echo "RESULT detail server=shardstore metric=get_path zero_copy_total=${z:-nan} streamed_total=${s:-nan}"
  fi
fi
skip range || { quiet range; measure_ranges $RANGE_NAMES; HWM_RANGE=$(hwm_mib "$SS_PID"); }
# shellcheck disable=SC2046 # the names, each with _many
skip range || [ -z "$MANY" ] || { quiet range_many; RCONC=$MANY measure_ranges $(printf '%s_many ' $RANGE_NAMES); HWM_RANGE=$(hwm_mib "$SS_PID"); }
ss_stop
rm -rf "$DATA/ss-big"
if [ -n "$STARTED_NGINX" ]; then
  peer_stop nginx "$NGINX_PORT" "$DATA/nginx"; STARTED_NGINX=""
  rm -rf "$DATA/nginx"
fi

# ---------------- shardstore: small objects, group commit on / off ----------------
declare -A SM_MED SM_RUNS SM_P50 SM_P99 SM_OPC SM_HWM SM_ERR
if ! skip small; then
  for gc in on off; do
    ss_start "$DATA/ss-small-$gc" "$gc"
    ss_curl -f -X PUT "$SS_EP/$BUCKET" -o /dev/null || die "create bucket failed"
    quiet "small_gc_$gc"
    c0=$(ss_metric shardstore_index_commits_total); o0=$(ss_metric shardstore_index_committed_ops_total)
    runs="" p50="" p99="" errs=0
    for i in $(seq 1 "$RUNS"); do
      sleep "$PAUSE"
      out=$(AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK timeout $((SMALL_SECS + 120)) \
        "$SHARD" --endpoint-url "$SS_EP" bench put --bucket "$BUCKET" --prefix "gc$gc-run$i/" \
        --size "$SMALL_SIZE" --objects "$SMALL_N" --duration "$SMALL_SECS" \
        --concurrency "$SMALL_CONC" 2>&1) || true
      out=$(echo "$out" | grep '^RESULT op=put ') || die "shard bench put failed: $out"
      log "small gc=$gc run $i: ${out#RESULT }"
      runs="$runs $(kv ops_per_s "$out")"; p50="$p50 $(kv p50_ms "$out")"; p99="$p99 $(kv p99_ms "$out")"
      errs=$((errs + $(kv errors "$out")))
    done
    c1=$(ss_metric shardstore_index_commits_total); o1=$(ss_metric shardstore_index_committed_ops_total)
    # a GET of one written object must give the same size back
    got=$(ss_curl -f "$SS_EP/$BUCKET/gc$gc-run1/0000000007" | wc -c); [ "$got" = "$SMALL_SIZE" ] || die "small object read back $got bytes"
    SM_MED[$gc]=$(echo $runs | median); SM_RUNS[$gc]=$(csv $runs); SM_ERR[$gc]=$errs
    SM_P50[$gc]=$(echo $p50 | median); SM_P99[$gc]=$(echo $p99 | median)
    SM_OPC[$gc]=$(awk -v c=$((c1 - c0)) -v o=$((o1 - o0)) 'BEGIN{ if (c>0) printf "%.2f", o/c; else print "nan"}')
    SM_HWM[$gc]=$(hwm_mib "$SS_PID")
    echo "RESULT detail server=shardstore metric=small_put group_commit=$gc put_s=$(f1 "${SM_MED[$gc]}") runs=${SM_RUNS[$gc]} p50_ms=${SM_P50[$gc]} p99_ms=${SM_P99[$gc]} errors=$errs index_commits=$((c1 - c0)) committed_ops=$((o1 - o0)) ops_per_commit=${SM_OPC[$gc]}"
    ss_stop
    rm -rf "$DATA/ss-small-$gc"
  done
fi

# ---------------- Ceph RGW ----------------
if peer_on ceph; then
  CE_RUN=${PEERS_RUN:-/tmp/peers-run}/ceph-$CEPH_PORT
  log "starting ceph on $CEPH_PORT (~20 s fresh, ~5 s restart)"
  STARTED_CEPH=1
  # a fresh cluster's OSD sometimes fails its first boot ("wrong fsid"); one stop + start fixes it
  AWS_ACCESS_KEY_ID=$CEPH_AK AWS_SECRET_ACCESS_KEY=$CEPH_SK peer_start ceph "$CEPH_PORT" \
    || { log "ceph start failed; stopping and retrying once"; peer_stop ceph "$CEPH_PORT" || true
         AWS_ACCESS_KEY_ID=$CEPH_AK AWS_SECRET_ACCESS_KEY=$CEPH_SK peer_start ceph "$CEPH_PORT"; } \
    || die "ceph did not start"
  CE_EP=http://127.0.0.1:$CEPH_PORT
  for i in $(seq 1 30); do s3py mb "$CE_EP" "$CEPH_AK" "$CEPH_SK" "$BUCKET" x 2>/dev/null && break; sleep 2; done
  if [ "$(s3py size "$CE_EP" "$CEPH_AK" "$CEPH_SK" "$BUCKET" "$KEY")" != "$SIZE" ]; then
    log "uploading the object to ceph (aws s3 cp, multipart)"
    printf '[default]\ns3 =\n    signature_version = s3v4\n    addressing_style = path\n' > "$W/awscfg"
    AWS_CONFIG_FILE=$W/awscfg AWS_SHARED_CREDENTIALS_FILE=$W/nocreds AWS_ACCESS_KEY_ID=$CEPH_AK AWS_SECRET_ACCESS_KEY=$CEPH_SK \
      timeout 900 aws --endpoint-url "$CE_EP" s3 cp "$FILE" "s3://$BUCKET/$KEY" --only-show-errors >&2 || die "ceph upload failed"
  fi
  CE_URL=$(s3py presign "$CE_EP" "$CEPH_AK" "$CEPH_SK" "$BUCKET" "$KEY")
  check_object ceph "$CE_URL" "$(tamper "$CE_URL")"
  CE_PIDS="$(cat "$CE_RUN/radosgw.pid") $(cat "$CE_RUN/osd.pid")"
  URL_OF[ceph]=$CE_URL PIDS_OF[ceph]=$CE_PIDS
  # Ceph runs alone, after shardstore and nginx are gone (beside them it would take the memory
  # and cores they share): its ratios carry the machine's drift between phases.
  if ! skip get || ! skip range; then cold_cache; warm ceph; fi
  skip get || { quiet ceph_get; measure_gets ceph; }
  skip range || { quiet ceph_range; measure_ranges ceph; }
  peer_stop ceph "$CEPH_PORT"; STARTED_CEPH=""
fi

# ---------------- side by side ----------------
side() { # side ARRAYNAME UNIT: "shardstore=X UNIT nginx=Y UNIT ceph=Z UNIT ratio_vs_nginx=.. ratio_vs_ceph=.."
  local -n a=$1; local unit=$2 s out=""
  for s in shardstore nginx ceph; do [ -n "${a[$s]:-}" ] && out="$out $s=$(f1 "${a[$s]}") $unit"; done
  [ -n "${a[nginx]:-}" ] && out="$out ratio_vs_nginx=$(ratio "${a[shardstore]:-0}" "${a[nginx]}")"
  [ -n "${a[ceph]:-}" ] && out="$out ratio_vs_ceph=$(ratio "${a[shardstore]:-0}" "${a[ceph]}")"
  echo "$out"
}
echo "RESULT ===== side by side (medians of $RUNS) ====="
[ -n "${GET_MED[shardstore]:-}" ] && echo "RESULT get_single_stream$(side GET_MED MiB/s) goal_vs_nginx>=1.0"
[ -n "${GET_MED[shardstore_mp]:-}" ] && echo "RESULT get_multipart_${MP_PARTS}_parts shardstore=$(f1 "${GET_MED[shardstore_mp]}") MiB/s nginx=$(f1 "${GET_MED[nginx]:-nan}") MiB/s ratio_vs_nginx=$(ratio "${GET_MED[shardstore_mp]}" "${GET_MED[nginx]:-nan}") (nginx serves the same bytes as one file) goal_vs_nginx>=1.0"
if [ -n "${RNG_MED[shardstore]:-}" ]; then
  echo "RESULT range_64k_rps$(side RNG_MED req/s) goal_vs_nginx>=0.9 conc=$CONC secs=$RSECS align=$RALIGN"
  if [ -n "${RNG_MED[shardstore_many]:-}" ]; then
    echo "RESULT range_64k_rps_many shardstore=$(f1 "${RNG_MED[shardstore_many]}") req/s nginx=$(f1 "${RNG_MED[nginx_many]:-nan}") req/s ratio_vs_nginx=$(ratio "${RNG_MED[shardstore_many]}" "${RNG_MED[nginx_many]:-nan}") p50/p99 shardstore=${RNG_P50[shardstore_many]}/${RNG_P99[shardstore_many]}ms nginx=${RNG_P50[nginx_many]:-nan}/${RNG_P99[nginx_many]:-nan}ms conc=$MANY errors=${RNG_ERR[shardstore_many]}"
  fi
  l=""; for s in shardstore nginx ceph; do [ -n "${RNG_MED[$s]:-}" ] && l="$l $s=${RNG_P50[$s]}/${RNG_P99[$s]}ms"; done
  echo "RESULT range_64k_latency_p50/p99$l"
  l=""; for s in shardstore nginx ceph; do [ -n "${RNG_MED[$s]:-}" ] && l="$l $s=${RNG_CORES[$s]}cores(${RNG_CPUS[$s]}cpu_s) req_per_cpu_s=$(ratio "${RNG_MED[$s]}" "${RNG_CORES[$s]}")"; done
  echo "RESULT range_64k_server_cpu$l errors=$(for s in shardstore nginx ceph; do [ -n "${RNG_ERR[$s]:-}" ] && printf '%s:%s,' "$s" "${RNG_ERR[$s]}"; done)"
fi
# Round i of shardstore beside round i of nginx (taken one after the other, interleaved): the
# median of those pair ratios is less exposed to load that comes and goes than the ratio of medians.
pair_line get_single_stream shardstore nginx GET_RUNS
pair_line "get_multipart_${MP_PARTS}_parts" shardstore_mp nginx GET_RUNS
pair_line get_server_cpu_s shardstore nginx GET_CPU
pair_line range_64k_rps shardstore nginx RNG_RUNS
pair_line range_64k_server_cpu_us_per_req shardstore nginx RNG_USPR
pair_line range_64k_rps_many shardstore_many nginx_many RNG_RUNS
pair_line range_64k_server_cpu_us_per_req_many shardstore_many nginx_many RNG_USPR
[ -n "${PUT_MED[unsigned]:-}" ] && echo "RESULT put_single_stream shardstore_unsigned=$(f1 "${PUT_MED[unsigned]}") MiB/s (server $(ratio "$SIZE_MB" "${PUT_CPU[unsigned]:-0}") MiB per CPU-s) md5_1core=$MD5_MIBS MiB/s dd_direct=$DD_MIBS MiB/s ratio_vs_md5=$(ratio "${PUT_MED[unsigned]}" "$MD5_MIBS") ratio_vs_dd=$(ratio "${PUT_MED[unsigned]}" "$DD_MIBS")"
[ -n "${PUT_MED[sha256]:-}" ] && echo "RESULT put_single_stream_signed shardstore_sha256_header=$(f1 "${PUT_MED[sha256]}") MiB/s boto3_put_object=$(f1 "${PUT_MED[boto3]:-nan}") MiB/s md5+sha256_1core=$(awk -v a="$MD5_MIBS" -v b="$SHA_MIBS" 'BEGIN{printf "%.1f", 1/(1/a+1/b)}') MiB/s ratio_sha256hdr_vs_md5+sha256=$(ratio "${PUT_MED[sha256]}" "$(awk -v a="$MD5_MIBS" -v b="$SHA_MIBS" 'BEGIN{printf "%.1f", 1/(1/a+1/b)}')")"
if [ -n "${SM_MED[on]:-}" ]; then
  echo "RESULT small_put_${SMALL_SIZE}B conc=$SMALL_CONC group_commit=on: $(f1 "${SM_MED[on]}") PUT/s p50=${SM_P50[on]}ms p99=${SM_P99[on]}ms ops/commit=${SM_OPC[on]} | group_commit=off: $(f1 "${SM_MED[off]}") PUT/s p50=${SM_P50[off]}ms p99=${SM_P99[off]}ms ops/commit=${SM_OPC[off]} | on/off=$(ratio "${SM_MED[on]}" "${SM_MED[off]}") errors=${SM_ERR[on]}+${SM_ERR[off]} fdatasync_p50_ms(append/overwrite)=$SYNC_APPEND/$SYNC_OVER"
fi
echo "RESULT peak_rss_MiB shardstore after_put=$HWM_PUT after_mp_upload=$HWM_MP after_get=$HWM_GET after_range=$HWM_RANGE small_gc_on=${SM_HWM[on]:-nan} small_gc_off=${SM_HWM[off]:-nan} (VmHWM)"
echo "RESULT machine_noise other_cores_busy_before_phase:$(echo $NOISE | sed 's/^/ /; s/ / /g') (1-s sample of /proc/stat before each phase; the machine has $(nproc) cores; loadavg at end $(cut -d' ' -f1-3 /proc/loadavg))"
log "done"
