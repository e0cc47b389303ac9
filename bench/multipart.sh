#!/usr/bin/env bash
# bench/multipart.sh: the multipart ("checkpoint write") benchmark of shardstore, beside a
# direct-I/O dd of the same size on the data dir's filesystem and the same upload to Ceph RGW,
# all on 127.0.0.1, in one sitting.
#
# Usage: bench/multipart.sh       (from anywhere; about 4-6 minutes with ceph)
#
# Figures (medians of BENCH_RUNS runs; all runs listed):
#   checkpoint_write  BENCH_SIZE_MB (4096) MiB written as BENCH_PART_MB (64) MiB parts, BENCH_CONC (16)
#                     UploadParts in flight, by bench/mpload (libcurl multi, SigV4 UNSIGNED-PAYLOAD,
#                     parts read from one random file in /dev/shm, mmap'd and pre-faulted). Timed from
#                     CreateMultipartUpload sent to CompleteMultipartUpload's 200; MiB/s. Every run is
#                     checked: each part ETag = MD5 of its bytes, the object's ETag =
#                     md5(concat(binary part MD5s))-N, and one random 1 MiB range compared byte for
#                     byte. The object is deleted (untimed) after each run. Beside it:
#                       dd      dd if=/dev/zero bs=1M count=SIZE oflag=direct conv=fdatasync in the data
#                               dir's filesystem
#                       ceph    the same mpload upload into Ceph RGW (started here, fresh cluster)
#                       boto3   upload_file, TransferConfig(max_concurrency=16, multipart_chunksize=64 MiB),
#                               botocore's default checksums (signed payload): client-bound on 2 cores
#                     Server CPU (utime+stime of the shardstore process) per run and per GiB; the
#                     client's CPU; whole-machine busy cores during the run.
#   perf              one more (untimed-for-the-median) checkpoint upload under `perf record -g -p PID`;
#                     top symbols by self time, and the share of MD5 (libcrypto md5_block_*) and of
#                     the kernel's copy/checksum/tcp paths.
#   complete_latency  CompleteMultipartUpload round trip alone (parts uploaded first, 16 in flight):
#                     100 / 1,000 / 10,000 parts of 1 KiB on a server with min_part_size = 1, and 100
#                     parts of 5 MiB vs 100 parts of 64 MiB (6.4 GiB) on the default server.
#   visible           last UploadPart's 200 -> Complete's 200 -> first HEAD 200 (and a 1-byte GET), in
#                     the checkpoint runs: the object is readable this long after the last part.
#   peak_rss          VmHWM of the shardstore process after the checkpoint runs (and the perf run).
#
# Env knobs (defaults):
#   BENCH_RUNS=3 BENCH_SIZE_MB=4096 BENCH_PART_MB=64 BENCH_CONC=16
#   BENCH_FILE=/dev/shm/mp-bench-${SIZE}MiB.bin  (random source; removed at exit unless BENCH_KEEP=1)
#   BENCH_DATA=/tmp/shardstore-mp-bench  scratch dir (shardstore data, dd file, ceph cluster; needs
#                                ~2x BENCH_VOLUME_SIZE + SIZE + ceph's writes free; removed at exit)
#   BENCH_VOLUME_SIZE=8G BENCH_MAX_VOLUMES=2   shardstore volume_size / max_volumes
#   BENCH_COMPLETE_PARTS="100 1000 10000" BENCH_TINY_PART=1024 BENCH_BIG_PARTS=100 (x 5 MiB, x 64 MiB)
#   BENCH_SKIP=""                words among: dd ceph boto3 perf complete big
#   BENCH_EXTRA_CONF=""          more shardstore config lines ('\n'-separated)
#   BENCH_CEPH_PORT=18094        (core.sh uses 18084)
#   BENCH_WAIT_IDLE=30 BENCH_MAX_BUSY=0.3  before each phase wait up to this long for the machine to
#                                be quiet (others using <= MAX_BUSY cores); the level seen is reported
#   BENCH_PAUSE=2                idle seconds before each timed run
#   SHARDSTORE_BIN               default: /tmp/build-mpbench/shardstore, /tmp/build-bench/shardstore, ./shardstore
#   BENCH_MPLOAD                 default: bench/mpload next to SHARDSTORE_BIN, else gcc-built in tmp
#   SHARDSTORE_PEERS             the peers directory (ceph/start.sh, ceph/stop.sh); needed
#                                unless BENCH_SKIP has ceph
# Output: "RESULT ..." lines on stdout (per-figure "RESULT detail" lines as they come, then a
# side-by-side summary); progress on stderr.
set -euo pipefail

BENCH_TAG=mp BENCH_IDLE_DEFAULT=30
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-3}
SIZE_MB=${BENCH_SIZE_MB:-4096}
SIZE=$((SIZE_MB * 1024 * 1024))
PART_MB=${BENCH_PART_MB:-64}
PART=$((PART_MB * 1024 * 1024))
NPARTS=$(( (SIZE + PART - 1) / PART ))
CONC=${BENCH_CONC:-16}
FILE=${BENCH_FILE:-/dev/shm/mp-bench-${SIZE_MB}MiB.bin}
DATA=${BENCH_DATA:-/tmp/shardstore-mp-bench}
VOLSIZE=${BENCH_VOLUME_SIZE:-8G}
MAXVOL=${BENCH_MAX_VOLUMES:-2}
COMPLETE_PARTS=${BENCH_COMPLETE_PARTS:-100 1000 10000}
TINY=${BENCH_TINY_PART:-1024}
BIG_PARTS=${BENCH_BIG_PARTS:-100}
SKIP=" ${BENCH_SKIP:-} "
CEPH_PORT=${BENCH_CEPH_PORT:-18094}
PAUSE=${BENCH_PAUSE:-2}
AK=k SK=s
CEPH_AK=cephbench CEPH_SK=cephbenchsecret
BUCKET=bench KEY=checkpoint
export AWS_DEFAULT_REGION=us-east-1

skip ceph || need_peers ceph
need_tools curl python3 awk gcc cmp shuf
skip boto3 || python3 -c 'import boto3' 2>/dev/null || die "python3 boto3 missing (or BENCH_SKIP=boto3)"
skip perf || command -v perf >/dev/null || "$SRC/scripts/setup.sh" --bench >&2 || true
skip perf || command -v perf >/dev/null || die "perf missing (or BENCH_SKIP=perf)"

W=$(mktemp -d /tmp/mp-bench.XXXXXX)
SS_PID="" STARTED_CEPH="" CEPH_DONE="" PERF_PID="" MADE_FILE=""
cleanup() {
  set +e
  [ -n "$PERF_PID" ] && kill -INT "$PERF_PID" 2>/dev/null && wait "$PERF_PID" 2>/dev/null
  [ -n "$SS_PID" ] && ss_stop
  [ -n "$STARTED_CEPH" ] && peer_stop ceph "$CEPH_PORT" "$DATA/ceph"
  [ -n "$STARTED_CEPH$CEPH_DONE" ] && [ "${BENCH_KEEP:-0}" != 1 ] && rm -rf "${PEERS_RUN:-/tmp/peers-run}/ceph-$CEPH_PORT"
  if [ "${BENCH_KEEP:-0}" != 1 ]; then
    rm -rf "$DATA"
    [ -n "$MADE_FILE" ] && rm -f "$FILE"
  fi
  rm -f "$FILE.tmp.$$"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------- tools ----------------
find_bin /tmp/build-mpbench/shardstore /tmp/build-bench/shardstore ./shardstore "$SRC/shardstore"
MPLOAD=${BENCH_MPLOAD:-$(dirname "$BIN")/bench/mpload}
if ! [ -x "$MPLOAD" ] || [ "$MPLOAD" -ot "$SRC/bench/mpload.c" ]; then
  MPLOAD=$W/mpload
  gcc -O2 -std=gnu11 -o "$MPLOAD" "$SRC/bench/mpload.c" -lcurl || die "cannot build mpload"
fi

# ---------------- the source file and its part MD5s ----------------
mkdir -p "$DATA"
if [ ! -f "$FILE" ] || [ "$(stat -c %s "$FILE")" != "$SIZE" ]; then
  avail_kib=$(df -Pk "$(dirname "$FILE")" | awk 'NR==2{print $4}')
  [ "$avail_kib" -gt $((SIZE / 1024 + 512 * 1024)) ] || die "need $((SIZE_MB + 512)) MiB free for $FILE"
  log "creating $FILE ($SIZE_MB MiB random)"
  MADE_FILE=1
  head -c "$SIZE" /dev/urandom > "$FILE.tmp.$$" && mv "$FILE.tmp.$$" "$FILE"
fi
need_kib=$(( SIZE / 1024 * 2 + 1024 * 1024 ))
avail_kib=$(df -Pk "$DATA" | awk 'NR==2{print $4}')
[ "$avail_kib" -gt "$need_kib" ] || die "need $((need_kib / 1024)) MiB free under $DATA, have $((avail_kib / 1024)) MiB"
log "hashing $FILE in $PART_MB MiB parts"
# md5s: one hex MD5 per part; the expected multipart ETag
python3 - "$FILE" "$PART" > "$W/md5s" <<'PY'
import hashlib, sys
with open(sys.argv[1], 'rb') as f:
    while True:
        b = f.read(int(sys.argv[2]))
        if not b: break
        print(hashlib.md5(b).hexdigest())
PY
EXPECT_ETAG=$(python3 -c 'import hashlib,sys; d=[bytes.fromhex(l.strip()) for l in open(sys.argv[1]) if l.strip()]; print(hashlib.md5(b"".join(d)).hexdigest()+"-%d"%len(d))' "$W/md5s")
[ "$(wc -l < "$W/md5s")" = "$NPARTS" ] || die "expected $NPARTS part MD5s"
log "expected ETag $EXPECT_ETAG"

echo "RESULT env date=$(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) cores=$(nproc) mem_GiB=$(awk '/MemTotal/{printf "%.0f", $2/1048576}' /proc/meminfo) kernel=$(uname -r) commit=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown) runs=$RUNS object_MiB=$SIZE_MB part_MiB=$PART_MB parts=$NPARTS conc=$CONC fs=$(df -P "$DATA" | awk 'NR==2{print $1}') source=$FILE"

# ---------------- shardstore lifecycle ----------------
ss_start() { # ss_start DATADIR MIN_PART_SIZE
  local dir=$1 mps=$2
  rm -rf "$dir"; mkdir -p "$dir"
  printf 'volume_size = %s\nmax_volumes = %s\ngroup_commit = on\nmin_part_size = %s\nlog_level = warn\n' \
    "$VOLSIZE" "$MAXVOL" "$mps" > "$dir.conf"
  [ -z "${BENCH_EXTRA_CONF:-}" ] || printf '%b\n' "$BENCH_EXTRA_CONF" >> "$dir.conf"
  ss_launch "$dir" "$dir.conf"
  ss_curl -f -X PUT "$SS_EP/$BUCKET" -o /dev/null || die "create bucket failed"
  log "shardstore pid $SS_PID on $SS_EP (min_part_size=$mps, data $dir)"
}
# verify NAME EP AK SK KEY ETAGFILE ETAG: part ETags = part MD5s, object ETag, one random range
verify() {
  local name=$1 ep=$2 ak=$3 sk=$4 key=$5 etags=$6 etag=$7 off len=$((1024 * 1024)) hs
  if [ -n "$etags" ]; then
    awk '{print $2}' "$etags" | cmp -s - "$W/md5s" || die "$name: part ETags differ from the part MD5s"
  fi
  [ "$etag" = "$EXPECT_ETAG" ] || die "$name: ETag $etag != expected $EXPECT_ETAG"
  off=$(shuf -i 0-$((SIZE - len)) -n 1)
  cmp <(s3curl "$ep" "$ak" "$sk" --max-time 60 -f -r "$off-$((off + len - 1))" "$ep/$BUCKET/$key") \
      <(tail -c +$((off + 1)) "$FILE" | head -c "$len") || die "$name: range at $off differs from the file"
  hs=$(s3curl "$ep" "$ak" "$sk" --max-time 60 -f -I "$ep/$BUCKET/$key" | tr -d '\r' | awk 'tolower($1)=="content-length:"{print $2}')
  [ "$hs" = "$SIZE" ] || die "$name: HEAD Content-Length $hs != $SIZE"
  log "$name: part ETags = part MD5s, ETag $etag ok, 1 MiB range at $off matches byte for byte"
}

# checkpoint NAME EP AK SK PIDS...: RUNS timed mpload uploads of FILE; sets CK_* for NAME.
declare -A CK_MED CK_RUNS CK_CPU CK_CPUGIB CK_US CK_SY CK_CLI CK_MACH CK_COMPLETE CK_VISIBLE CK_HEAD CK_PARTP50
checkpoint() {
  local name=$1 ep=$2 ak=$3 sk=$4; shift 4
  local pids="$*" i out runs="" cpus="" us="" sy="" cli="" mach="" comp="" vis="" head="" pp50=""
  local c0 c1 u0 s0 u1 s1 m0 m1 w0 w1 e from=""
  # untimed warm-up: a small multipart upload (a fresh Ceph creates its pools on the first write)
  out=$(timeout 300 "$MPLOAD" -e "$ep" -b "$BUCKET" -k warmup -a "$ak" -s "$sk" -f "$FILE" -z $((5 * 1024 * 1024)) -n 4 -c 4 -H) \
    || die "$name: warm-up upload failed: $out"
  log "$name warm-up: create_ms=$(kv create_ms "$out") total_s=$(kv total_s "$out")"
  s3curl "$ep" "$ak" "$sk" -X DELETE -o /dev/null "$ep/$BUCKET/warmup" || true
  for i in $(seq 1 "$RUNS"); do
    sleep "$PAUSE"
    c0=$(cpu_ticks $pids); read -r u0 s0 < <(cpu_us_sy $pids); read -r m0 _ < <(busy_jiffies); w0=$(now)
    out=$(timeout 600 "$MPLOAD" -e "$ep" -b "$BUCKET" -k "$KEY" -a "$ak" -s "$sk" -f "$FILE" -z "$PART" -c "$CONC" -H -E "$W/etags") \
      || die "$name: mpload failed: $out"
    c1=$(cpu_ticks $pids); read -r u1 s1 < <(cpu_us_sy $pids); read -r m1 _ < <(busy_jiffies); w1=$(now)
    e=$(kv etag "$out"); from=$(kv etag_from "$out")
    verify "$name" "$ep" "$ak" "$sk" "$KEY" "$W/etags" "$e"
    runs="$runs $(kv MiB_s "$out")"; comp="$comp $(kv complete_ms "$out")"; vis="$vis $(kv visible_ms "$out")"
    head="$head $(kv head_ms "$out")"; pp50="$pp50 $(kv part_p50_ms "$out")"; cli="$cli $(kv client_cpu_s "$out")"
    cpus="$cpus $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
    us="$us $(awk -v a="$u0" -v b="$u1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
    sy="$sy $(awk -v a="$s0" -v b="$s1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
    mach="$mach $(busy_cores "$m0" "$m1" "$w0" "$w1")"
    log "$name run $i: ${out#mpload }"
    s3curl "$ep" "$ak" "$sk" -X DELETE -o /dev/null "$ep/$BUCKET/$KEY" || true
  done
  CK_MED[$name]=$(echo $runs | median); CK_RUNS[$name]=$(csv $runs)
  CK_CPU[$name]=$(echo $cpus | median); CK_US[$name]=$(echo $us | median); CK_SY[$name]=$(echo $sy | median)
  CK_CPUGIB[$name]=$(awk -v c="${CK_CPU[$name]}" -v s="$SIZE_MB" 'BEGIN{printf "%.2f", c/(s/1024)}')
  CK_CLI[$name]=$(echo $cli | median); CK_MACH[$name]=$(csv $mach)
  CK_COMPLETE[$name]=$(echo $comp | median); CK_VISIBLE[$name]=$(echo $vis | median); CK_HEAD[$name]=$(echo $head | median)
  CK_PARTP50[$name]=$(echo $pp50 | median)
  echo "RESULT detail server=$name metric=checkpoint_write MiB_s=$(f1 "${CK_MED[$name]}") runs=${CK_RUNS[$name]} server_cpu_s=${CK_CPU[$name]} (user ${CK_US[$name]} sys ${CK_SY[$name]}; pids $(csv $pids)) server_cpu_s_per_GiB=${CK_CPUGIB[$name]} client_cpu_s=${CK_CLI[$name]} machine_busy_cores=${CK_MACH[$name]} (of $(nproc)) complete_ms=$(f2 "${CK_COMPLETE[$name]}") part_p50_ms=${CK_PARTP50[$name]} parts=$NPARTS x ${PART_MB}MiB conc=$CONC etag_from=$from"
}

# ---------------- dd: the disk ----------------
DD_MIBS=nan DD_RUNS=""
if ! skip dd; then
  quiet dd
  for i in $(seq 1 "$RUNS"); do
    sleep 1
    s=$(LC_ALL=C dd if=/dev/zero of="$DATA/dd.bin" bs=1M count="$SIZE_MB" oflag=direct conv=fdatasync 2>&1 | awk '/copied/{for(i=1;i<=NF;i++) if($i=="s,") print $(i-1)}')
    rm -f "$DATA/dd.bin"
    DD_RUNS="$DD_RUNS $(mibs_of "$s" "$SIZE")"; log "dd run $i: $s s = $(mibs_of "$s" "$SIZE") MiB/s"
  done
  DD_MIBS=$(echo $DD_RUNS | median)
  echo "RESULT detail metric=dd_direct_write MiB_s=$DD_MIBS runs=$(csv $DD_RUNS) how=dd-bs1M-count=$SIZE_MB-oflag=direct-conv=fdatasync dir=$DATA"
fi

# ---------------- shardstore: checkpoint write, perf, boto3, 100 x 5 MiB vs 100 x 64 MiB ----------------
ss_start "$DATA/ss" 5M
HWM_START=$(hwm_mib "$SS_PID")
quiet shardstore_checkpoint
checkpoint shardstore "$SS_EP" "$AK" "$SK" "$SS_PID"
HWM_CK=$(hwm_mib "$SS_PID")

PERF_MIBS=nan PERF_MD5=nan PERF_KCOPY=nan PERF_SYS=nan PERF_CPUGIB=nan PERF_XXH=nan PERF_LIBC=nan PERF_MEMMOVE=nan PERF_CRYPTO=nan PERF_SELF=nan PERF_MD5GIB=nan
if ! skip perf; then
  quiet perf
  sleep "$PAUSE"
  perf record -q -g -F 999 -p "$SS_PID" -o "$W/perf.data" > "$W/perf.rec.out" 2>&1 &
  PERF_PID=$!
  sleep 1
  c0=$(cpu_ticks "$SS_PID")
  out=$(timeout 600 "$MPLOAD" -e "$SS_EP" -b "$BUCKET" -k "$KEY" -a "$AK" -s "$SK" -f "$FILE" -z "$PART" -c "$CONC" -E "$W/etags") \
    || die "perf run: mpload failed: $out"
  c1=$(cpu_ticks "$SS_PID")
  kill -INT "$PERF_PID" 2>/dev/null; wait "$PERF_PID" 2>/dev/null || true; PERF_PID=""
  verify shardstore-perf "$SS_EP" "$AK" "$SK" "$KEY" "$W/etags" "$(kv etag "$out")"
  ss_curl -X DELETE -o /dev/null "$SS_EP/$BUCKET/$KEY" || true
  PERF_MIBS=$(kv MiB_s "$out")
  PERF_CPUGIB=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v s="$SIZE_MB" 'BEGIN{printf "%.2f", (b-a)/hz/(s/1024)}')
  log "perf run: ${out#mpload }"
  # self time by symbol (the whole process, kernel included). libcrypto is stripped: its samples
  # are attributed to md5_block_asm_data_order when they fall between the first and the last MD5
  # round constant's instruction (lea -0x28955b88 = +0xd76aa478 ... lea -0x14792c6f = +0xeb86d391).
  CRYPTO_SO=$(awk '$6 ~ /libcrypto\.so/{print $6; exit}' /proc/$SS_PID/maps)
  MD5_RANGE=""
  if [ -n "$CRYPTO_SO" ] && command -v objdump >/dev/null; then
    MD5_RANGE=$(objdump -d "$CRYPTO_SO" 2>/dev/null | awk '/lea +-0x28955b88\(/ && !a {a=$1} /lea +-0x14792c6f\(/ && a && !b {b=$1} END{ if (a && b) print a, b}' | tr -d :)
  fi
  perf report -i "$W/perf.data" --stdio --no-children --sort dso,symbol --percent-limit 0 -g none 2>/dev/null \
    > "$W/perf.txt" || true
  python3 - "$W/perf.txt" "$MD5_RANGE" > "$W/perf.top" <<'PY'
import re, sys, collections
rng = sys.argv[2].split()
lo, hi = (int(rng[0], 16) - 0x40, int(rng[1], 16) + 0x70) if len(rng) == 2 else (1, 0)
agg = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'^\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(\S+)', line)
    if not m: continue
    pct, dso, sym = float(m.group(1)), m.group(2), m.group(4)
    if sym.startswith('0x'):
        a = int(sym, 16)
        if 'libcrypto' in dso and lo <= a < hi: sym = 'md5_block_asm_data_order(stripped,by-constants)'
        else: sym = '[unresolved]'
    agg[(dso, sym)] += pct
for (dso, sym), pct in sorted(agg.items(), key=lambda kv: -kv[1]):
    print('%.2f\t%s\t%s' % (pct, dso, sym))
PY
  [ -s "$W/perf.top" ] || { cat "$W/perf.rec.out" >&2; die "perf report gave nothing"; }
  psum() { awk -F'\t' "$1"' {s+=$1} END{printf "%.1f", s}' "$W/perf.top"; }
  PERF_MD5=$(psum 'tolower($3) ~ /md5/')
  PERF_XXH=$(psum '$3 ~ /XXH/')
  PERF_SYS=$(psum '$2 ~ /kernel/')
  PERF_KCOPY=$(psum '$2 ~ /kernel/ && $3 ~ /copy_user|copyout|copyin|csum|rep_movs|copy_page|_copy_to_iter|_copy_from_iter|memcpy/')
  PERF_LIBC=$(psum '$2 ~ /^libc[.-]/')
  PERF_MEMMOVE=$(psum '$2 ~ /^libc[.-]/ && $3 ~ /mem(move|cpy)/')
  PERF_CRYPTO=$(psum '$2 ~ /libcrypto/')
  PERF_SELF=$(psum '$2 ~ /shardstore/')
  PERF_SAMPLES=$(awk '/^# Samples:/{print $3; exit}' "$W/perf.txt")
  PERF_MD5GIB=$(awk -v p="$PERF_MD5" -v c="$PERF_CPUGIB" 'BEGIN{printf "%.2f", p/100*c}')
  # MD5 on one core, for scale: openssl speed's 16384-byte column (1000s of bytes/s)
  MD5_1CORE=$(openssl speed -elapsed -seconds 2 -evp md5 2>/dev/null | awk '
    /^type/ { for (i = 2; i <= NF; i++) if ($i == "16384") col = (i - 2) / 2 + 2 }
    col && $1 != "type" && NF >= col { v = $(col); sub(/k$/, "", v); printf "%.1f\n", v * 1000 / 1048576; exit }')
  echo "RESULT detail server=shardstore metric=perf_profile upload_MiB_s=$(f1 "$PERF_MIBS") (one extra run under perf record -g -F 999) server_cpu_s_per_GiB=$PERF_CPUGIB samples=$PERF_SAMPLES self_pct: md5=$PERF_MD5 (= ${PERF_MD5GIB} cpu_s/GiB; openssl speed md5 one core ${MD5_1CORE:-nan} MiB/s = $(awk -v m="${MD5_1CORE:-0}" 'BEGIN{ if (m>0) printf "%.2f", 1024/m; else print "nan"}') cpu_s/GiB) xxhash=$PERF_XXH libc=$PERF_LIBC (memmove/memcpy $PERF_MEMMOVE) kernel=$PERF_SYS (copy_to/from_iter etc. $PERF_KCOPY) libcrypto=$PERF_CRYPTO shardstore_binary=$PERF_SELF md5_range=${MD5_RANGE:-none}"
  head -n "${BENCH_PERF_TOP:-15}" "$W/perf.top" | awk -F'\t' '{printf "RESULT perf_top rank=%d self_pct=%s dso=%s symbol=%s\n", NR, $1, $2, $3}'
fi
HWM_PERF=$(hwm_mib "$SS_PID")

# boto3, signed payload (botocore's defaults over http), one run per BENCH_RUNS
BOTO_MED=nan BOTO_RUNS="" BOTO_MODE="" BOTO_CPU=nan
if ! skip boto3; then
  cat > "$W/boto_up.py" <<'PY'
import sys, time, boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
ep, ak, sk, bucket, key, path, part, conc = sys.argv[1:9]
c = boto3.client('s3', endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name='us-east-1',
                 config=Config(signature_version='s3v4', s3={'addressing_style': 'path'},
                               retries={'max_attempts': 1}, read_timeout=900,
                               max_pool_connections=int(conc)))
mode = {}
def rec(request, **kw):
    h = request.headers
    mode['sha256'] = (h.get('x-amz-content-sha256') or b'-')
    if isinstance(mode['sha256'], bytes): mode['sha256'] = mode['sha256'].decode()
    if len(mode['sha256']) == 64: mode['sha256'] = 'hex-sha256'
    mode['ck'] = ','.join(sorted(k.lower() for k in h.keys() if k.lower().startswith('x-amz-checksum') or k.lower() == 'x-amz-trailer')) or '-'
c.meta.events.register('before-send.s3.UploadPart', rec)
cfg = TransferConfig(max_concurrency=int(conc), multipart_chunksize=int(part), multipart_threshold=int(part), use_threads=True)
t0 = time.monotonic()
c.upload_file(path, bucket, key, Config=cfg)
t1 = time.monotonic()
etag = c.head_object(Bucket=bucket, Key=key)['ETag'].strip('"')
print('%.3f %s %s %s' % (t1 - t0, etag, mode.get('sha256', '?'), mode.get('ck', '?')))
PY
  quiet boto3
  cli=""
  for i in $(seq 1 "${BENCH_BOTO_RUNS:-$RUNS}"); do
    sleep "$PAUSE"
    c0=$(cpu_ticks "$SS_PID")
    out=$(timeout 600 python3 "$W/boto_up.py" "$SS_EP" "$AK" "$SK" "$BUCKET" "$KEY" "$FILE" "$PART" "$CONC") || die "boto3 upload_file failed"
    c1=$(cpu_ticks "$SS_PID")
    read -r t e m1 m2 <<< "$out"
    verify shardstore-boto3 "$SS_EP" "$AK" "$SK" "$KEY" "" "$e"
    ss_curl -X DELETE -o /dev/null "$SS_EP/$BUCKET/$KEY" || true
    BOTO_RUNS="$BOTO_RUNS $(mibs_of "$t" "$SIZE")"; BOTO_MODE="x-amz-content-sha256=$m1 checksum_headers=$m2"
    cli="$cli $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
    log "boto3 run $i: $t s = $(mibs_of "$t" "$SIZE") MiB/s ($BOTO_MODE)"
  done
  BOTO_MED=$(echo $BOTO_RUNS | median); BOTO_CPU=$(echo $cli | median)
  echo "RESULT detail server=shardstore metric=checkpoint_write_boto3 MiB_s=$(f1 "$BOTO_MED") runs=$(csv $BOTO_RUNS) server_cpu_s=$BOTO_CPU how=upload_file-TransferConfig(max_concurrency=$CONC,multipart_chunksize=${PART_MB}MiB) $BOTO_MODE"
fi

# CompleteMultipartUpload of 100 x 5 MiB vs 100 x 64 MiB parts (default min_part_size)
declare -A CL_MED CL_RUNS
complete_runs() { # complete_runs LABEL PARTS PARTBYTES [FILE]: RUNS uploads, Complete's latency
  local label=$1 n=$2 z=$3 f=${4:-} i out runs="" fo=()
  [ -n "$f" ] && fo=(-f "$f")
  for i in $(seq 1 "$RUNS"); do
    sleep 1
    out=$(timeout 600 "$MPLOAD" -e "$SS_EP" -b "$BUCKET" -k "cl-$label" -a "$AK" -s "$SK" "${fo[@]}" -z "$z" -n "$n" -c "$CONC" -H) \
      || die "complete $label: mpload failed: $out"
    [ "$(kv parts "$out")" = "$n" ] || die "complete $label: $out"
    case "$(kv etag "$out")" in *-"$n") ;; *) die "complete $label: ETag $(kv etag "$out") is not ...-$n";; esac
    runs="$runs $(kv complete_ms "$out")"
    log "complete $label run $i: complete_ms=$(kv complete_ms "$out") (parts_s=$(kv parts_s "$out") head_ms=$(kv head_ms "$out"))"
    ss_curl -X DELETE -o /dev/null "$SS_EP/$BUCKET/cl-$label" || true
  done
  CL_MED[$label]=$(echo $runs | median); CL_RUNS[$label]=$(csv $runs)
  echo "RESULT detail server=shardstore metric=complete_latency parts=$n part_bytes=$z median_ms=$(f2 "${CL_MED[$label]}") runs=${CL_RUNS[$label]}"
}
if ! skip complete && ! skip big; then
  quiet complete_big
  complete_runs "${BIG_PARTS}x5MiB" "$BIG_PARTS" $((5 * 1024 * 1024)) "$FILE"
  complete_runs "${BIG_PARTS}x64MiB" "$BIG_PARTS" $((64 * 1024 * 1024)) "$FILE"
fi
HWM_END=$(hwm_mib "$SS_PID")
ss_stop
rm -rf "$DATA/ss"

# ---------------- CompleteMultipartUpload latency vs part count (min_part_size = 1) ----------------
if ! skip complete; then
  ss_start "$DATA/ss-tiny" 1
  quiet complete_tiny
  for n in $COMPLETE_PARTS; do complete_runs "${n}x${TINY}B" "$n" "$TINY"; done
  ss_stop
  rm -rf "$DATA/ss-tiny"
fi

# ---------------- Ceph RGW: the same checkpoint upload ----------------
if ! skip ceph; then
  CE_RUN=${PEERS_RUN:-/tmp/peers-run}/ceph-$CEPH_PORT
  if port_busy "$CEPH_PORT"; then die "port $CEPH_PORT busy; set BENCH_CEPH_PORT"; fi
  log "starting ceph on $CEPH_PORT (fresh cluster in $DATA/ceph, ~20 s)"
  STARTED_CEPH=1
  AWS_ACCESS_KEY_ID=$CEPH_AK AWS_SECRET_ACCESS_KEY=$CEPH_SK peer_start ceph "$CEPH_PORT" "$DATA/ceph" \
    || { log "ceph start failed; stopping and retrying once"; peer_stop ceph "$CEPH_PORT" "$DATA/ceph" || true
         AWS_ACCESS_KEY_ID=$CEPH_AK AWS_SECRET_ACCESS_KEY=$CEPH_SK peer_start ceph "$CEPH_PORT" "$DATA/ceph"; } \
    || die "ceph did not start"
  CE_EP=http://127.0.0.1:$CEPH_PORT
  for i in $(seq 1 30); do
    code=$(s3curl "$CE_EP" "$CEPH_AK" "$CEPH_SK" -X PUT -o /dev/null -w '%{http_code}' "$CE_EP/$BUCKET") || true
    [ "$code" = 200 ] || [ "$code" = 409 ] && break; sleep 2
  done
  CE_PIDS="$(cat "$CE_RUN/radosgw.pid") $(cat "$CE_RUN/osd.pid")"
  quiet ceph_checkpoint
  checkpoint ceph "$CE_EP" "$CEPH_AK" "$CEPH_SK" $CE_PIDS
  peer_stop ceph "$CEPH_PORT" "$DATA/ceph"; STARTED_CEPH="" CEPH_DONE=1
  rm -rf "$DATA/ceph"
fi

# ---------------- side by side ----------------
S=shardstore
echo "RESULT ===== side by side (medians of $RUNS; ${SIZE_MB} MiB as $NPARTS x ${PART_MB} MiB parts, $CONC in flight) ====="
l="RESULT checkpoint_write shardstore=$(f1 "${CK_MED[$S]}") MiB/s dd_direct=$(f1 "$DD_MIBS") MiB/s"
[ -n "${CK_MED[ceph]:-}" ] && l="$l ceph=$(f1 "${CK_MED[ceph]}") MiB/s"
l="$l ratio_vs_dd=$(ratio "${CK_MED[$S]}" "$DD_MIBS") (goal>=0.8)"
[ -n "${CK_MED[ceph]:-}" ] && l="$l ratio_vs_ceph=$(ratio "${CK_MED[$S]}" "${CK_MED[ceph]}")"
echo "$l runs: shardstore=${CK_RUNS[$S]} dd=$(csv $DD_RUNS)${CK_RUNS[ceph]:+ ceph=${CK_RUNS[ceph]}}"
skip boto3 || echo "RESULT checkpoint_write_signed shardstore_boto3=$(f1 "$BOTO_MED") MiB/s ratio_vs_dd=$(ratio "$BOTO_MED" "$DD_MIBS") ($BOTO_MODE; python client on the same $(nproc) cores)"
l="RESULT checkpoint_server_cpu shardstore=${CK_CPUGIB[$S]} cpu_s/GiB (user ${CK_US[$S]} + sys ${CK_SY[$S]} s per ${SIZE_MB} MiB)"
[ -n "${CK_MED[ceph]:-}" ] && l="$l ceph(radosgw+osd)=${CK_CPUGIB[ceph]} cpu_s/GiB"
CEIL=$(awk -v s="${CK_CPU[$S]}" -v c="${CK_CLI[$S]}" -v n="$(nproc)" -v m="$SIZE_MB" 'BEGIN{ if (s+c>0) printf "%.0f", n*m/(s+c); else print "nan"}')
echo "$l client_mpload=${CK_CLI[$S]} cpu_s/run machine_busy_cores=${CK_MACH[$S]} of $(nproc) cpu_ceiling=$CEIL MiB/s (= $(nproc) cores / (server + client CPU per MiB))"
skip perf || echo "RESULT checkpoint_profile md5_share=${PERF_MD5}% (${PERF_MD5GIB} of ${PERF_CPUGIB} cpu_s/GiB) xxhash=${PERF_XXH}% libc=${PERF_LIBC}% kernel=${PERF_SYS}% (copy_*_iter ${PERF_KCOPY}%) shardstore=${PERF_SELF}% of the server's samples (self); top: $(head -n 5 "$W/perf.top" | awk -F'\t' '{printf "%s%s %s%%", (NR>1?", ":""), $3, $1}')"
if ! skip complete; then
  l="RESULT complete_latency_ms"
  for n in $COMPLETE_PARTS; do l="$l ${n}x${TINY}B=$(f2 "${CL_MED[${n}x${TINY}B]}")"; done
  skip big || l="$l | ${BIG_PARTS}x5MiB=$(f2 "${CL_MED[${BIG_PARTS}x5MiB]}") ${BIG_PARTS}x64MiB=$(f2 "${CL_MED[${BIG_PARTS}x64MiB]}") ratio_64M/5M=$(ratio "${CL_MED[${BIG_PARTS}x64MiB]}" "${CL_MED[${BIG_PARTS}x5MiB]}")"
  echo "$l (median of $RUNS, Complete request alone)"
fi
l="RESULT visible_after_last_part shardstore: complete=$(f2 "${CK_COMPLETE[$S]}") ms + head=$(f2 "${CK_HEAD[$S]}") ms -> readable $(f2 "${CK_VISIBLE[$S]}") ms after the last part's 200"
[ -n "${CK_MED[ceph]:-}" ] && l="$l | ceph: complete=$(f2 "${CK_COMPLETE[ceph]}") ms readable $(f2 "${CK_VISIBLE[ceph]}") ms"
echo "$l (medians, ${NPARTS}-part ${SIZE_MB} MiB uploads)"
echo "RESULT peak_rss_MiB shardstore start=$HWM_START after_checkpoint_runs=$HWM_CK after_perf_run=$HWM_PERF end_of_default_server=$HWM_END (VmHWM; $CONC x ${PART_MB} MiB parts in flight)"
echo "RESULT machine_noise other_cores_busy_before_phase:$NOISE (1-s sample of /proc/stat; the machine has $(nproc) cores; loadavg at end $(cut -d' ' -f1-3 /proc/loadavg))"
log "done"
