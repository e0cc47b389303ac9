#!/usr/bin/env bash
# bench/tar.sh: the cost of tar member indexes, in one sitting.
#
# Usage: bench/tar.sh     (about 3-5 minutes; needs ~3 GiB free under BENCH_DATA's filesystem)
#
# Figures (medians of BENCH_RUNS runs; all runs listed):
#   put_overhead   a BENCH_SIZE_MB tar of ~BENCH_MEMBER_KB KiB members PUT with curl -T
#                  (UNSIGNED-PAYLOAD) under a key ending in .tar (indexed as it streams in) and
#                  the same bytes under a key that does not end in .tar (not indexed); runs
#                  alternate (bin, tar, tar, bin, ...) so drift hits both alike. MiB/s and the
#                  overhead (1 - tar/bin); and the server's CPU seconds per PUT, which a busy
#                  machine disturbs less than the wall time.
#   member_get     wrk, BENCH_CONC connections, BENCH_SECS s: GET ?member=NAME on presigned URLs
#                  (one per member, random member per request) of a tar of BENCH_SMALL_N members
#                  of BENCH_SMALL_KB KiB, vs plain Range GETs of the same bytes on the object's
#                  presigned URL; req/s, alternating.
# The machine load (cores used by others) before each phase is reported (NOISE).
#
# Env knobs (defaults): BENCH_RUNS=5 BENCH_SIZE_MB=1024 BENCH_MEMBER_KB=100 BENCH_SMALL_N=5000
#   BENCH_SMALL_KB=10 BENCH_CONC=16 BENCH_SECS=8 BENCH_WRK_THREADS=2 BENCH_PAUSE=2
#   BENCH_SKIP="" (words among: put get)
#   BENCH_DATA=/tmp/shardstore-tar-bench (removed at the end unless BENCH_KEEP=1)
#   SHARDSTORE_BIN (default: build/dev/shardstore of this tree, else ./shardstore)
# Output: "RESULT ..." lines on stdout; progress on stderr.
set -euo pipefail

BENCH_TAG=tar
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-5}
SIZE_MB=${BENCH_SIZE_MB:-1024}
MEMBER_KB=${BENCH_MEMBER_KB:-100}
SMALL_N=${BENCH_SMALL_N:-5000}
SMALL_KB=${BENCH_SMALL_KB:-10}
CONC=${BENCH_CONC:-16}
SECS=${BENCH_SECS:-8}
THREADS=${BENCH_WRK_THREADS:-2}
PAUSE=${BENCH_PAUSE:-2}
DATA=${BENCH_DATA:-/tmp/shardstore-tar-bench}
SKIP=${BENCH_SKIP:-}
AK=benchkey SK=benchsecret BUCKET=tarbench
need_tools curl wrk python3
find_bin "$SRC/build/dev/shardstore" ./shardstore

W=$(mktemp -d /tmp/tar-bench.XXXXXX)
cleanup() {
  set +e
  [ -n "$SS_PID" ] && ss_stop
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$DATA"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$DATA"

# ---------------- inputs ----------------
BIG=$DATA/big.tar SMALL=$DATA/small.tar
log "making $BIG ($SIZE_MB MiB of ~$MEMBER_KB KiB members) and $SMALL ($SMALL_N x $SMALL_KB KiB)"
python3 - "$BIG" "$SIZE_MB" "$MEMBER_KB" "$SMALL" "$SMALL_N" "$SMALL_KB" "$W/members.txt" <<'PY'
import io, os, sys, tarfile
big, size_mb, member_kb, small, small_n, small_kb, listing = sys.argv[1:8]
def write(path, n, size, listing=None):
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        block = os.urandom(size + 4096)
        for i in range(n):
            for ext, data in ((".jpg", block[i % 4096:i % 4096 + size]), (".cls", b"%d" % (i % 10))):
                ti = tarfile.TarInfo("%08d%s" % (i, ext))
                ti.size = len(data)
                ti.mtime = 1700000000
                tf.addfile(ti, io.BytesIO(data))
    if listing:
        with tarfile.open(path) as tf, open(listing, "w") as f:
            for m in tf.getmembers():
                if m.name.endswith(".jpg"):
                    f.write("%s %d %d\n" % (m.name, m.offset_data, m.size))
size = int(member_kb) * 1024
write(big, int(size_mb) * 1024 * 1024 // (size + 1536), size)
write(small, int(small_n), int(small_kb) * 1024, listing)
PY
SIZE=$(stat -c %s "$BIG")

# ---------------- server ----------------
printf 'volume_size = 8G\nlog_level = warn\nconnection_limit_per_ip = 0\ninline_max = 0\n' > "$DATA/ss.conf"
ss_launch "$DATA/ss" "$DATA/ss.conf"
log "shardstore pid $SS_PID on $SS_EP ($BIN)"
ss_curl -f -X PUT "$SS_EP/$BUCKET" -o /dev/null || die "create bucket failed"

# ---------------- PUT overhead ----------------
put_one() { # put_one KEY: one PUT of BIG; prints "MiB/s server-CPU-s"
  local out t code c0 c1
  c0=$(cpu_ticks "$SS_PID")
  out=$(timeout 900 curl -s --aws-sigv4 aws:amz:us-east-1:s3 -u "$AK:$SK" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -T "$BIG" -o "$W/put.body" \
    -w '%{time_total} %{http_code}' "$SS_EP/$BUCKET/$1") || die "PUT $1 failed"
  t=${out% *}; code=${out#* }
  [ "$code" = 200 ] || { cat "$W/put.body" >&2; die "PUT $1 answered $code"; }
  c1=$(cpu_ticks "$SS_PID")
  echo "$(mibs_of "$t" "$SIZE") $(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')"
}
TAR_RUNS="" BIN_RUNS="" TAR_CPU="" BIN_CPU=""
if ! skip put; then
quiet put
for i in $(seq 1 "$RUNS"); do
  # Alternate which goes first, so neither always follows the other.
  if [ $((i % 2)) = 1 ]; then order="bin tar"; else order="tar bin"; fi
  for kind in $order; do
    sleep "$PAUSE"
    if [ "$kind" = tar ]; then read -r v c < <(put_one shard.tar); TAR_RUNS="$TAR_RUNS $v"; TAR_CPU="$TAR_CPU $c"
    else read -r v c < <(put_one shard.bin); BIN_RUNS="$BIN_RUNS $v"; BIN_CPU="$BIN_CPU $c"; fi
    log "put $kind run $i: $v MiB/s, server CPU $c s"
  done
done
n_idx=$(ss_metric shardstore_index_member_indexes)
[ "${n_idx%.*}" -ge 1 ] || die "the .tar PUT built no member index"
TAR_MED=$(echo $TAR_RUNS | median) BIN_MED=$(echo $BIN_RUNS | median)
echo "RESULT put_overhead size_MiB=$((SIZE / 1048576)) members=$(python3 -c "import tarfile;print(len(tarfile.open('$BIG').getmembers()))") indexed_MiB_s=$(f1 "$TAR_MED") plain_MiB_s=$(f1 "$BIN_MED") overhead_pct=$(awk -v a="$TAR_MED" -v b="$BIN_MED" 'BEGIN{printf "%.1f", (1-a/b)*100}') runs_indexed=$(csv $TAR_RUNS) runs_plain=$(csv $BIN_RUNS) server_cpu_s_indexed=$(echo $TAR_CPU | median) server_cpu_s_plain=$(echo $BIN_CPU | median) cpu_runs_indexed=$(csv $TAR_CPU) cpu_runs_plain=$(csv $BIN_CPU)"
fi
skip get && { echo "RESULT load cores_used_by_others_before:$NOISE loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"; exit 0; }

# ---------------- member GET vs range GET ----------------
ss_curl -f -T "$SMALL" "$SS_EP/$BUCKET/small.tar" -o /dev/null || die "PUT small.tar failed"
python3 - "$SS_EP" "$AK" "$SK" "$BUCKET" "$W/members.txt" "$W/member_paths.txt" "$W/range_path.txt" <<'PY'
import sys, urllib.parse
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
ep, ak, sk, bucket, listing, out_members, out_range = sys.argv[1:8]
cred = Credentials(ak, sk)
def presign(query):
    req = AWSRequest(method="GET", url="%s/%s/small.tar%s" % (ep, bucket, query))
    S3SigV4QueryAuth(cred, "s3", "us-east-1", expires=7200).add_auth(req)
    u = urllib.parse.urlsplit(req.url)
    return u.path + "?" + u.query
with open(listing) as f, open(out_members, "w") as o:
    for i, line in enumerate(f):
        if i >= 1000:
            break
        name, off, size = line.split()
        o.write("%s %s %s\n" % (presign("?member=" + urllib.parse.quote(name, safe="")), off, size))
with open(out_range, "w") as o:
    o.write(presign("") + "\n")
PY
# Check one of each before measuring.
first=$(head -1 "$W/member_paths.txt")
read -r p off sz <<< "$first"
curl -sf "$SS_EP$p" -o "$W/m1" || die "member GET failed"
curl -sf -H "Range: bytes=$off-$((off + sz - 1))" "$SS_EP$(cat "$W/range_path.txt")" -o "$W/r1" || die "range GET failed"
cmp -s "$W/m1" "$W/r1" || die "member bytes differ from the range"
cat > "$W/member.lua" <<LUA
local paths = {}
for line in io.lines("$W/member_paths.txt") do
  local p = line:match("^(%S+)")
  paths[#paths + 1] = p
end
math.randomseed(7)
request = function()
  return wrk.format("GET", paths[math.random(#paths)])
end
LUA
cat > "$W/range.lua" <<LUA
local ranges = {}
for line in io.lines("$W/member_paths.txt") do
  local _, off, size = line:match("^(%S+) (%d+) (%d+)")
  ranges[#ranges + 1] = "bytes=" .. off .. "-" .. (tonumber(off) + tonumber(size) - 1)
end
local path = io.open("$W/range_path.txt"):read("*l")
math.randomseed(7)
request = function()
  return wrk.format("GET", path, { ["Range"] = ranges[math.random(#ranges)] })
end
LUA
wrk_rps() { # wrk_rps SCRIPT: req/s of one wrk run (non-2xx fail the run)
  local out
  out=$(wrk -t"$THREADS" -c"$CONC" -d"${SECS}s" -s "$1" "$SS_EP" 2>&1)
  if echo "$out" | grep -q "Non-2xx"; then echo "$out" >&2; die "wrk saw errors"; fi
  echo "$out" | awk '/^Requests\/sec:/{print $2}'
}
M_RUNS="" R_RUNS=""
quiet get
for i in $(seq 1 3); do
  if [ $((i % 2)) = 1 ]; then order="member range"; else order="range member"; fi
  for kind in $order; do
    sleep "$PAUSE"
    v=$(wrk_rps "$W/$kind.lua")
    if [ "$kind" = member ]; then M_RUNS="$M_RUNS $v"; else R_RUNS="$R_RUNS $v"; fi
    log "$kind GET run $i: $v req/s"
  done
done
M_MED=$(echo $M_RUNS | median) R_MED=$(echo $R_RUNS | median)
echo "RESULT member_get member_KiB=$SMALL_KB conc=$CONC member_req_s=$(f1 "$M_MED") range_req_s=$(f1 "$R_MED") ratio=$(ratio "$M_MED" "$R_MED") runs_member=$(csv $M_RUNS) runs_range=$(csv $R_RUNS)"
echo "RESULT load cores_used_by_others_before:$NOISE loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
