#!/usr/bin/env bash
# bench/versioning.sh: what versioning costs (issue 12). Bounded: about 4 minutes.
#
#   put        4 KiB PUT/s, `shard bench put` of BENCH_PUT_N (5000) keys with BENCH_CONC
#              threads, the same keys every run, in an unversioned and a versioned
#              bucket of one server: both filled once untimed, so every timed PUT is an
#              overwrite (in the versioned bucket it adds a version, in the other it
#              frees the old bytes); then BENCH_PUT_PAIRS (9) pairs of runs, one per
#              bucket back to back, the first of a pair alternating (unver-ver, ver-unver,
#              ...) so that neither bucket always runs first or later in a drift of load.
#              The headline ratio is the median of the pairs' ratios (with quartiles)
#   get        single-stream GET MB/s of one 16 MiB object, both buckets, alternated
#   deep       GET p50 latency of the latest version of a key with 1000 versions vs 1
#   list       ListObjectVersions over 1,000,000 versions of 100,000 keys (every 7th key
#              ending in a delete marker), built by bench/version_speed through the index
#              API: entries/s in the index (pages of 1000), then end to end from a
#              shardstore started on the same data with `shard ls --versions -r` (libshard's
#              shard_list_versions: pages of 1000 on one connection, the next one requested
#              while one is scanned, every entry parsed and printed, lines counted by wc),
#              process start included: entries/s and distinct keys/s, with the CPU
#              seconds of the server and of the client; once, for reference, a Python
#              client (botocore signer, XML counted not parsed); version_speed also times
#              the index's share of a PUT (batches of 16 overwrites, no fsync, consecutive
#              and scattered keys) with the LMDB bytes written per PUT, both buckets
# Medians of BENCH_RUNS runs (all listed). Prints RESULT lines; ratios are versioned /
# unversioned (goal >= 0.9): the ratio of the medians, and the median of the ratios of
# the runs taken side by side (pair_ratio, less exposed to load that comes and goes: on
# this shared machine runs of one bucket spread 742 to 2,507 PUT/s within a sitting).
# The list figure's goal is >= 500,000 entries/s.
#
#   SHARDSTORE_BIN (default build/dev/shardstore), SHARD_BIN (shard next to it),
#   VERSION_SPEED_BIN (bench/version_speed next to it), BENCH_RUNS=5, BENCH_SECS=5,
#   BENCH_CONC=16, BENCH_PUT_N=5000, BENCH_PUT_PAIRS=9, BENCH_SKIP="put get deep list"
set -euo pipefail

BENCH_TAG=versioning
BENCH_IDLE_DEFAULT=5
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-5}
SECS=${BENCH_SECS:-5}
CONC=${BENCH_CONC:-16}
PUT_N=${BENCH_PUT_N:-5000}
PAIRS=${BENCH_PUT_PAIRS:-9}
SKIP=" ${BENCH_SKIP:-} "
AK=k SK=s
export AWS_DEFAULT_REGION=us-east-1

need_tools curl python3 awk
find_bin "$SRC/build/dev/shardstore" ./shardstore
SHARD=${SHARD_BIN:-$(dirname "$BIN")/shard}
VSPEED=${VERSION_SPEED_BIN:-$(dirname "$BIN")/bench/version_speed}
[ -x "$SHARD" ] || die "shard not found next to $BIN; set SHARD_BIN"

W=$(mktemp -d /tmp/versioning-bench.XXXXXX)
cleanup() {
  set +e
  [ -n "$SS_PID" ] && ss_stop
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

quartiles() { # quartiles < numbers: "Q1 Q3" (the medians of the lower and upper halves)
  tr ' ,' '\n\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {
    if (NR == 0) { print "nan nan"; exit }
    h = int(NR / 2); hi = NR - h + 1
    if (h == 0) { print a[1], a[1]; exit }
    q1 = (h % 2) ? a[(h + 1) / 2] : (a[h / 2] + a[h / 2 + 1]) / 2
    q3 = (h % 2) ? a[hi + (h - 1) / 2] : (a[hi + h / 2 - 1] + a[hi + h / 2]) / 2
    printf "%.2f %.2f\n", q1, q3 }'
}
cpu_s() { # cpu_s PID: user + system CPU seconds of a process so far
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

bench() { # bench OP BUCKET ARGS...: one `shard bench` run, its RESULT line
  local op=$1 b=$2 out; shift 2
  out=$(AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK timeout 300 \
    "$SHARD" --endpoint-url "$SS_EP" bench "$op" --bucket "$b" "$@" 2>&1) || true
  echo "$out" | grep "^RESULT op=$op " || die "shard bench $op failed: $out"
}

# Small volumes: the machine's disk is shared (the versioned bucket keeps every PUT).
printf 'volume_size = 768M\nmax_volumes = 2\n' > "$W/ss.conf"
ss_launch "$W/ss" "$W/ss.conf"
ss_curl -f -X PUT "$SS_EP/unver" -o /dev/null || die "create bucket"
ss_curl -f -X PUT "$SS_EP/ver" -o /dev/null || die "create bucket"
ss_curl -f -X PUT "$SS_EP/ver?versioning=" -o /dev/null \
  -d '<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>' || die "enable versioning"

if ! skip put; then
  put_run() { bench put "$1" --prefix "p/" --size 4096 --objects "$PUT_N" --duration 120 --concurrency "$CONC"; }
  for b in unver ver; do put_run "$b" > /dev/null; done # untimed: every key exists
  quiet put
  declare -A R=()
  for i in $(seq 1 "$PAIRS"); do
    order="unver ver"; [ $((i % 2)) = 0 ] && order="ver unver"
    for b in $order; do
      out=$(put_run "$b")
      log "put pair $i $b: ${out#RESULT }"
      R[$b]="${R[$b]:-} $(kv ops_per_s "$out")"
    done
  done
  mu=$(echo ${R[unver]} | median); mv=$(echo ${R[ver]} | median)
  pr=$(pair_ratios "${R[ver]}" "${R[unver]}")
  read -r q1 q3 < <(echo $pr | quartiles)
  above=$(echo $pr | tr ' ' '\n' | awk '$1 >= 0.9 { n++ } END { print n + 0 }')
  echo "RESULT metric=put_4k pairs=$PAIRS pair_ratio=$(echo $pr | median) pair_ratio_q1=$q1 pair_ratio_q3=$q3 pairs_at_or_above_0.9=$above unversioned_put_s=$(f1 "$mu") versioned_put_s=$(f1 "$mv") ratio_of_medians=$(ratio "$mv" "$mu") pair_ratios=$(csv $pr) runs_unversioned=$(csv ${R[unver]}) runs_versioned=$(csv ${R[ver]})"
fi

if ! skip get; then
  for b in unver ver; do bench put "$b" --prefix g/ --size 16M --objects 1 --count 1 >/dev/null; done
  quiet get
  declare -A G=()
  for i in $(seq 1 "$RUNS"); do
    for b in unver ver; do
      out=$(bench get "$b" --prefix g/ --size 16M --objects 1 --no-prepare --concurrency 1 --duration "$SECS")
      log "get $b run $i: ${out#RESULT }"
      G[$b]="${G[$b]:-} $(kv MBps "$out")"
    done
  done
  gu=$(echo ${G[unver]} | median); gv=$(echo ${G[ver]} | median)
  pr=$(pair_ratios "${G[ver]}" "${G[unver]}")
  echo "RESULT metric=get_single_stream unversioned_MBps=$(f1 "$gu") versioned_MBps=$(f1 "$gv") ratio=$(ratio "$gv" "$gu") pair_ratio=$(echo $pr | median) pair_ratios=$(csv $pr) runs_unversioned=$(csv ${G[unver]}) runs_versioned=$(csv ${G[ver]})"
fi

# s3.py PORT AK SK put BUCKET KEY N | count BUCKET PREFIX | list BUCKET: signed requests on
# one keep-alive connection (botocore's signer), for what `shard bench` does not do.
cat > "$W/s3.py" <<'PY'
import http.client, re, socket, sys, time, urllib.parse
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
port, ak, sk, what = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
creds = Credentials(ak, sk)
conn = http.client.HTTPConnection("127.0.0.1", port)
conn.connect()
conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle stalls
def call(method, path, q, body=b""):
    qs = urllib.parse.urlencode(q, quote_via=urllib.parse.quote, safe="")
    url = "http://127.0.0.1:%d%s%s" % (port, path, "?" + qs if qs else "")
    req = AWSRequest(method=method, url=url, data=body, headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    conn.request(method, url[len("http://127.0.0.1:%d" % port):], body=body or None, headers=dict(req.headers))
    r = conn.getresponse()
    data = r.read()
    assert r.status in (200, 204), (r.status, data[:300])
    return data
def versions(bucket, prefix):
    n, km, vm = 0, None, None
    while True:
        q = {"versions": "", "max-keys": "1000", "prefix": prefix}
        if km is not None:
            q["key-marker"], q["version-id-marker"] = km, vm
        body = call("GET", "/" + bucket, q)
        n += body.count(b"<Version>") + body.count(b"<DeleteMarker>")
        if b"<IsTruncated>true</IsTruncated>" not in body:
            return n
        km = re.search(rb"<NextKeyMarker>(.*?)</NextKeyMarker>", body).group(1).decode()
        vm = re.search(rb"<NextVersionIdMarker>(.*?)</NextVersionIdMarker>", body).group(1).decode()
if what == "put":
    for i in range(int(sys.argv[7])):
        call("PUT", "/%s/%s" % (sys.argv[5], sys.argv[6]), {}, b"v" * 4096)
elif what == "count":
    print(versions(sys.argv[5], sys.argv[6]))
else:
    t0 = time.monotonic()
    n = versions(sys.argv[5], "")
    secs = time.monotonic() - t0
    print("RESULT entries=%d secs=%.3f entries_per_s=%.0f" % (n, secs, n / secs))
PY
s3py() { python3 "$W/s3.py" "$SS_PORT" "$AK" "$SK" "$@"; }

if ! skip deep; then
  # shard bench names its keys PREFIX%010u: key 0 of deep/ gets 1000 versions, of shallow/ 1.
  s3py put ver deep/0000000000 1000 || die "PUTs of the deep key failed"
  s3py put ver shallow/0000000000 1 || die "PUT of the shallow key failed"
  n=$(s3py count ver deep/) || die "listing the deep key failed"
  [ "$n" = 1000 ] || die "deep key has $n versions, not 1000"
  quiet deep
  declare -A D=()
  for i in $(seq 1 "$RUNS"); do
    for p in shallow deep; do
      out=$(bench get ver --prefix "$p/" --size 4096 --objects 1 --no-prepare --concurrency 1 --duration 2)
      D[$p]="${D[$p]:-} $(kv p50_ms "$out")"
    done
  done
  ds=$(echo ${D[shallow]} | median); dd=$(echo ${D[deep]} | median)
  echo "RESULT metric=get_latest_latency p50_ms_1_version=$ds p50_ms_1000_versions=$dd ratio=$(ratio "$dd" "$ds") runs_1=$(csv ${D[shallow]}) runs_1000=$(csv ${D[deep]})"
fi
ss_stop

if ! skip list; then
  declare -A IP=() IPR=() IPB=()
  [ -x "$VSPEED" ] || die "bench/version_speed not found next to $BIN; set VERSION_SPEED_BIN"
  quiet list
  out=$("$VSPEED" "$W/vs" 100000 10 "$RUNS") || die "version_speed failed: $out"
  echo "$out" | grep '^LOAD' | while read -r l; do log "$l"; done
  for keys in consecutive scattered; do
    for b in unversioned versioned; do
      r=$(echo "$out" | grep "^RESULT op=index_put bucket=$b keys=$keys " | while read -r l; do kv ops_per_s "$l"; done)
      IP[$b]=$(echo $r | median); IPR[$b]=$(csv $r)
      r=$(echo "$out" | grep "^RESULT op=index_put bucket=$b keys=$keys " | while read -r l; do kv bytes_per_put "$l"; done)
      IPB[$b]=$(echo $r | median)
    done
    echo "RESULT metric=index_put_share keys=$keys unversioned_ops_s=${IP[unversioned]} versioned_ops_s=${IP[versioned]} ratio=$(ratio "${IP[versioned]}" "${IP[unversioned]}") unversioned_bytes_per_put=${IPB[unversioned]} versioned_bytes_per_put=${IPB[versioned]} runs_unversioned=${IPR[unversioned]} runs_versioned=${IPR[versioned]}"
  done
  runs=$(echo "$out" | grep '^RESULT op=list_versions' | while read -r l; do kv entries_per_s "$l"; done)
  echo "RESULT metric=list_versions_index entries=1000000 keys=100000 entries_per_s=$(echo $runs | median) runs=$(csv $runs)"
  ss_launch "$W/vs" "$W/ss.conf"
  shard_ls() { AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$SHARD" --endpoint-url "$SS_EP" ls --versions -r s3://versions; }
  # Once, untimed: what the listing holds (column 5 says latest: one per key).
  read -r n nk < <(shard_ls | awk '{ n++ } $5 == "latest" { k++ } END { print n, k }')
  [ "$n" = 1000000 ] && [ "$nk" = 100000 ] || die "shard ls --versions listed $n entries of $nk keys"
  runs="" kruns=""
  for i in $(seq 1 "$RUNS"); do
    c0=$(cpu_s "$SS_PID"); t0=$(date +%s.%N)
    TIMEFORMAT="%U %S"
    ct=$( { time shard_ls | wc -l > "$W/n"; } 2>&1 ) || die "shard ls --versions failed"
    t1=$(date +%s.%N); c1=$(cpu_s "$SS_PID")
    [ "$(cat "$W/n")" = 1000000 ] || die "shard ls --versions listed $(cat "$W/n") entries"
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    eps=$(awk -v s="$secs" 'BEGIN { printf "%.0f", 1000000 / s }')
    kps=$(awk -v s="$secs" 'BEGIN { printf "%.0f", 100000 / s }')
    log "list with shard ls --versions run $i: secs=$secs entries_per_s=$eps keys_per_s=$kps server_cpu_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') client_cpu_s(user,sys)=$ct"
    runs="$runs $eps" kruns="$kruns $kps"
  done
  echo "RESULT metric=list_versions_shard entries=1000000 keys=100000 entries_per_s=$(echo $runs | median) keys_per_s=$(echo $kruns | median) runs=$(csv $runs) keys_runs=$(csv $kruns)"
  out=$(s3py list versions) || die "HTTP listing failed: $out"
  [ "$(kv entries "$out")" = 1000000 ] || die "HTTP listing: $out"
  echo "RESULT metric=list_versions_python_reference entries=1000000 entries_per_s=$(kv entries_per_s "$out")"
  ss_stop
fi
log "noise (cores used by others before each phase):$NOISE"
