# shellcheck shell=bash
# bench/lib.sh: the helpers every bench/*.sh script shares (sourced, never run).
#
# Before sourcing, a script sets BENCH_TAG (the word its log lines start with) and, if it
# wants another default than 15 s, BENCH_IDLE_DEFAULT (how long `quiet` waits for a calm
# machine). The library sets SRC (the source tree), HZ and T0, and defines:
#   logging     log MSG, die MSG
#   numbers     median (numbers on stdin, any of space/comma/newline separated), ratio A B,
#               f1 X, f2 X, csv WORDS, kv KEY [LINE] (value of KEY=... in LINE or stdin),
#               mibs_of SECS BYTES, now, pair_ratios "A..." "B..." (A_i/B_i)
#   knobs       skip WORD (WORD in $SKIP), peer_on NAME (NAME in $PEERS and not skipped)
#   tools       need_tools CMD... (installs the bench packages once, else dies),
#               find_bin CANDIDATE... (sets BIN, absolute, from SHARDSTORE_BIN or the first
#               executable candidate)
#   machine     cpu_ticks PID..., cpu_us_sy PID..., hwm_mib PID, busy_jiffies,
#               busy_cores B0 B1 T0 T1, quiet PHASE (appends to NOISE), cold_cache
#   shardstore  ss_launch DIR [CONF] (starts $BIN with AK/SK; sets SS_PID SS_PORT SS_EP),
#               ss_stop, ss_curl ARGS..., ss_metric NAME, s3curl EP AK SK ARGS...
#   peers       need_peers (checks SHARDSTORE_PEERS, sets PEERS_DIR), peer_start NAME PORT
#               [ARGS...], peer_stop NAME PORT [ARGS...], port_busy PORT
#   requests    (they use the script's W, SIZE, CONC, WTHREADS, RSECS)
#               presign EP AK SK BUCKET KEY (a 2-hour SigV4 presigned GET URL, boto3),
#               get_mibs URL [CURL ARGS...] (one timed whole GET of SIZE bytes, MiB/s),
#               range_reqs URL (one wrk run of 64 KiB random Range
#               GETs: CONC connections, WTHREADS threads, RSECS s; req/s, no non-2xx)
# The peers (nginx, Ceph RGW, ... each with start.sh/stop.sh) live outside this repository;
# SHARDSTORE_PEERS names their directory and is needed only when a script runs a peer.

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HZ=$(getconf CLK_TCK)
T0=$(date +%s)
BENCH_TAG=${BENCH_TAG:-bench}
NOISE=""
PEERS_DIR=""

# ---------------- logging ----------------
log() { echo "[$BENCH_TAG +$(($(date +%s) - T0))s] $*" >&2; }
die() { echo "[$BENCH_TAG] error: $*" >&2; exit 1; }

# ---------------- numbers ----------------
now() { date +%s.%N; }
median() { tr ' ,' '\n\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{ if(NR==0){print "nan"; exit} if(NR%2) print a[(NR+1)/2]; else printf "%.6g\n", (a[NR/2]+a[NR/2+1])/2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0>0 && b+0>0) printf "%.2f", a/b; else print "nan"}'; }
f1() { awk -v x="$1" 'BEGIN{ if (x == "nan" || x == "") print "nan"; else printf "%.1f", x}'; }
f2() { awk -v x="$1" 'BEGIN{ if (x == "nan" || x == "") print "nan"; else printf "%.2f", x}'; }
# shellcheck disable=SC2048,SC2086 # csv WORDS...: the words, split as given, joined by commas
csv() { echo $* | tr ' ' ,; }
kv() { # kv KEY [LINE]: the value of the first KEY=VALUE word of LINE (else of stdin)
  if [ $# -ge 2 ]; then echo "$2"; else cat; fi | tr ' ' '\n' | awk -F= -v k="$1" '$1==k{print $2; exit}'
}
# pair_ratios "A1 A2 ..." "B1 B2 ...": A_i / B_i for each run i (runs taken side by side), space
# separated; a pair with a value that is not positive is left out.
# shellcheck disable=SC2086
pair_ratios() {
  paste -d' ' <(echo $1 | tr ' ,' '\n\n') <(echo $2 | tr ' ,' '\n\n') |
    awk '$1 > 0 && $2 > 0 { printf "%.2f ", $1 / $2 }'
}
mibs_of() { awk -v s="$1" -v b="$2" 'BEGIN{ if (s>0) printf "%.1f", b/1048576/s; else print "nan"}'; }

# ---------------- knobs ----------------
skip() { [[ " $SKIP " == *" $1 "* ]]; }
peer_on() { [[ " $PEERS " == *" $1 "* ]] && ! skip "$1"; }

# ---------------- tools ----------------
# need_tools CMD...: a fresh machine lacks the load tools: the project's setup installs them.
need_tools() {
  local c
  for c in "$@"; do command -v "$c" >/dev/null || { "$SRC/scripts/setup.sh" --bench >&2 || die "setup.sh --bench failed"; break; }; done
  for c in "$@"; do command -v "$c" >/dev/null || die "$c missing"; done
}
# find_bin CANDIDATE...: BIN = $SHARDSTORE_BIN, else the first executable candidate; absolute.
find_bin() {
  local b
  BIN=${SHARDSTORE_BIN:-}
  if [ -z "$BIN" ]; then
    for b in "$@"; do [ -x "$b" ] && { BIN=$b; break; }; done
  fi
  [ -n "$BIN" ] && [ -x "$BIN" ] || die "shardstore binary not found; set SHARDSTORE_BIN"
  BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
}

# ---------------- CPU, RSS and machine load ----------------
cpu_ticks() { local t=0 p v; for p in "$@"; do
    v=$(awk '{sub(/.*\) /,""); print $12+$13}' /proc/$p/stat 2>/dev/null || echo 0); t=$((t + v)); done; echo $t; }
cpu_us_sy() { local u=0 s=0 p a b; for p in "$@"; do  # "user system" ticks summed over PIDS
    read -r a b < <(awk '{sub(/.*\) /,""); print $12, $13}' /proc/$p/stat 2>/dev/null || echo "0 0"); u=$((u + a)); s=$((s + b)); done; echo "$u $s"; }
hwm_mib() { awk '/^VmHWM/{printf "%.1f", $2/1024}' /proc/$1/status 2>/dev/null || echo nan; }
# The machine may be shared: busy_jiffies prints "busy total" from /proc/stat; busy_cores A B T0 T1.
busy_jiffies() { awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print t-$5-$6, t; exit}' /proc/stat; }
busy_cores() { awk -v a="$1" -v b="$2" -v t0="$3" -v t1="$4" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz/(t1-t0)}'; }
# quiet PHASE: wait (up to BENCH_WAIT_IDLE s, default BENCH_IDLE_DEFAULT or 15) until the other
# processes on the machine use less than BENCH_MAX_BUSY cores (default 0.3) over 1 s; records
# what it saw in NOISE (and how long it waited, when it did).
quiet() {
  local phase=$1 wait_s=${BENCH_WAIT_IDLE:-${BENCH_IDLE_DEFAULT:-15}} b0 b1 t0 t1 c waited=0 start deadline
  start=$(date +%s); deadline=$((start + wait_s))
  while :; do
    read -r b0 _ < <(busy_jiffies); t0=$(now); sleep 1; read -r b1 _ < <(busy_jiffies); t1=$(now)
    c=$(busy_cores "$b0" "$b1" "$t0" "$t1")
    awk -v c="$c" -v m="${BENCH_MAX_BUSY:-0.3}" 'BEGIN{exit !(c <= m)}' && break
    [ "$(date +%s)" -lt "$deadline" ] || { log "machine still busy ($c cores used by others) before $phase; going on"; break; }
    [ "$waited" = 0 ] && log "machine busy ($c cores used by others) before $phase; waiting up to ${wait_s}s"
    waited=1
  done
  if [ "$waited" = 1 ]; then NOISE="$NOISE $phase=$c(waited_$(( $(date +%s) - start ))s)"; else NOISE="$NOISE $phase=$c"; fi
}
# cold_cache: empties the page cache (root only; BENCH_DROP_CACHES=0 to keep it) so that every
# server's bytes are cached afresh by its own warm-up GET. Without it, the figures depend on the
# machine's history: 64 KiB range GETs of the same shardstore measured 40.1k vs 44.6k req/s
# depending on where its last PUT landed in the volume, and 46k for both after a drop
# (presumably small page-cache folios where the range was re-read after an O_DIRECT overwrite).
cold_cache() {
  [ "${BENCH_DROP_CACHES:-1}" = 1 ] && [ "$(id -u)" = 0 ] || return 0
  sync; echo 1 > /proc/sys/vm/drop_caches 2>/dev/null || log "cannot drop the page cache; figures may depend on its history"
}

# ---------------- shardstore ----------------
SS_PID="" SS_EP="" SS_PORT=""
# ss_launch DIR [CONF]: starts $BIN on 127.0.0.1:0 with data in DIR (and config file CONF), root
# keys $AK/$SK, stdout/stderr in $W/ss.out / $W/ss.err; waits for the port it prints.
ss_launch() {
  local dir=$1 conf=${2:-} _i
  local cfg=()
  [ -z "$conf" ] || cfg=(--config "$conf")
  : > "$W/ss.out"   # exists before the background child opens it (sed polls it below)
  SHARDSTORE_ACCESS_KEY=$AK SHARDSTORE_SECRET_KEY=$SK \
    "$BIN" "${cfg[@]}" --listen 127.0.0.1:0 --data "$dir" > "$W/ss.out" 2> "$W/ss.err" &
  SS_PID=$!
  for _i in $(seq 1 100); do
    SS_PORT=$(sed -n 's|^shardstore: listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$W/ss.out")
    [ -n "$SS_PORT" ] && break
    kill -0 "$SS_PID" 2>/dev/null || { cat "$W/ss.err" >&2; die "shardstore exited at start"; }
    sleep 0.1
  done
  [ -n "$SS_PORT" ] || die "shardstore did not print its port"
  SS_EP=http://127.0.0.1:$SS_PORT
}
# ss_stop: SIGTERM, up to 20 s for a clean exit, then SIGKILL.
ss_stop() {
  [ -n "$SS_PID" ] || return 0
  kill -TERM "$SS_PID" 2>/dev/null || true
  local _i; for _i in $(seq 1 100); do kill -0 "$SS_PID" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$SS_PID" 2>/dev/null && { log "shardstore $SS_PID still alive after 20 s, SIGKILL"; kill -KILL "$SS_PID" 2>/dev/null; }
  wait "$SS_PID" 2>/dev/null || true
  SS_PID=""
}
# s3curl EP AK SK ARGS...: a SigV4-signed curl against any endpoint
# (EP is not used: the URL among ARGS names the endpoint; it keeps the callers readable.)
s3curl() { local ak=$2 sk=$3; shift 3
  curl -s --aws-sigv4 aws:amz:us-east-1:s3 -u "$ak:$sk" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"; }
ss_curl() { s3curl "$SS_EP" "$AK" "$SK" "$@"; }
ss_metric() { ss_curl --max-time 10 "$SS_EP/_/metrics" | awk -v m="$1" '$1==m{print $2}'; }

# ---------------- peers ----------------
# need_peers: PEERS_DIR = $SHARDSTORE_PEERS, which must hold NAME/start.sh for each NAME given.
need_peers() {
  local p
  [ -n "${SHARDSTORE_PEERS:-}" ] || die "this run needs the peer servers ($*): set SHARDSTORE_PEERS to the directory that holds $(echo "$*" | sed 's|\([^ ]*\)|\1/start.sh|g'), or turn the peers off (see the knobs at the top of $0)"
  [ -d "$SHARDSTORE_PEERS" ] || die "SHARDSTORE_PEERS=$SHARDSTORE_PEERS is not a directory"
  PEERS_DIR=$(cd "$SHARDSTORE_PEERS" && pwd)
  for p in "$@"; do
    [ -x "$PEERS_DIR/$p/start.sh" ] && [ -x "$PEERS_DIR/$p/stop.sh" ] \
      || die "no $p peer in SHARDSTORE_PEERS=$PEERS_DIR ($p/start.sh and $p/stop.sh)"
  done
}
peer_start() { local p=$1; shift; "$PEERS_DIR/$p/start.sh" "$@" >&2; }
peer_stop() { local p=$1; shift; "$PEERS_DIR/$p/stop.sh" "$@" >&2; }
# port_busy PORT: true when something listens on 127.0.0.1:PORT
port_busy() { (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

# ---------------- requests ----------------
# presign EP AK SK BUCKET KEY: a SigV4 presigned GET URL (2 hours, path style) made by boto3.
presign() {
  python3 - "$@" <<'PY'
import sys, boto3
from botocore.config import Config
ep, ak, sk, bucket, key = sys.argv[1:6]
c = boto3.client('s3', endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name='us-east-1', config=Config(signature_version='s3v4', s3={'addressing_style': 'path'}))
print(c.generate_presigned_url('get_object', Params={'Bucket': bucket, 'Key': key}, ExpiresIn=7200))
PY
}
# get_mibs URL [CURL ARGS...]: one timed GET of the whole object (SIZE bytes, checked); MiB/s.
get_mibs() {
  local url=$1 out t n; shift
  out=$(curl -sf "$@" -o /dev/null -w '%{time_total} %{size_download}' "$url") || die "GET failed"
  t=${out% *}; n=${out#* }
  [ "$n" = "$SIZE" ] || die "GET returned $n bytes, expected $SIZE"
  mibs_of "$t" "$SIZE"
}
# range_reqs URL: one wrk run (WTHREADS threads, CONC connections, RSECS s) of 64 KiB Range
# GETs at random offsets of the SIZE-byte object at URL (http or https), half of them 4 KiB
# aligned (an unaligned range touches one more block); req/s. Any non-2xx answer is fatal.
range_reqs() {
  local url=$1 base path st requests dur non2xx
  [ -f "$W/range_reqs.lua" ] || cat > "$W/range_reqs.lua" <<'LUA'
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
  base=$(echo "$url" | sed -E 's|^(https?://[^/]*).*|\1|'); path=${url#"$base"}
  BR_SIZE=$SIZE BR_PATH=$path timeout $((RSECS + 40)) \
    wrk -t"$WTHREADS" -c"$CONC" -d"${RSECS}s" --timeout 10s -s "$W/range_reqs.lua" "$base" > "$W/wrk.out" 2>&1 \
    || { cat "$W/wrk.out" >&2; die "wrk failed"; }
  st=$(grep '^WRKSTAT' "$W/wrk.out") || die "no wrk summary"
  requests=$(kv requests "$st"); dur=$(kv dur_us "$st"); non2xx=$(kv non2xx "$st")
  [ "$non2xx" = 0 ] || die "wrk saw $non2xx non-2xx answers"
  awk -v r="$requests" -v d="$dur" 'BEGIN{printf "%.1f", r/(d/1e6)}'
}
