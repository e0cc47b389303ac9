#!/usr/bin/env bash
# bench/client.sh: the client side of reading and writing one big object on
# 127.0.0.1 (issue 5). Each figure is the median of BENCH_RUNS runs.
#
#   read  (to /dev/null):  shard cat --parallel 8  |  curl, one stream, SigV4 presigned URL
#                          boto3 download_fileobj(TransferConfig(max_concurrency=8))
#                          aws s3 cp s3://.. -
#   write (1 GiB file):    shard cp  |  aws s3 cp  |  boto3 upload_file
#   references:            shard cat and curl against nginx (peers; static file: the HTTP
#                          limit of this machine) and shard cat against Ceph RGW (peers).
# For each: MiB/s and client CPU seconds per GiB (user+sys of the client process
# tree, /usr/bin/time). Output: RESULT lines, then the ratios the issue asks for:
#   shard cat >= 0.9x what nginx serves to curl, >= 3x boto3.
#
# Env knobs: BENCH_RUNS=3 BENCH_SIZE_MB=1024 BENCH_PARALLEL=8 BENCH_CHUNK=1M
#   BENCH_PEERS="nginx ceph" ("" to skip them) BENCH_FILE=/tmp/bench-${SIZE}MiB.bin
#   BENCH_NGINX_PORT=18091 BENCH_CEPH_PORT=18094 SHARDSTORE_BIN, SHARD_BIN (default: ./shardstore, ./shard)
#   SHARDSTORE_PEERS (the peers directory: nginx/ and ceph/, each with start.sh and stop.sh;
#   needed unless BENCH_PEERS="")
set -euo pipefail
BENCH_TAG=client
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-3}
SIZE_MB=${BENCH_SIZE_MB:-1024}
PAR=${BENCH_PARALLEL:-8}
CHUNK=${BENCH_CHUNK:-1M}
PEERS=${BENCH_PEERS-nginx ceph}
FILE=${BENCH_FILE:-/tmp/bench-${SIZE_MB}MiB.bin}
NGINX_PORT=${BENCH_NGINX_PORT:-18091}
CEPH_PORT=${BENCH_CEPH_PORT:-18094}
BIN=${SHARDSTORE_BIN:-./shardstore}
SHARD=${SHARD_BIN:-$(dirname "$BIN")/shard}
AK=benchak SK=benchsk BUCKET=clientbench KEY=obj-${SIZE_MB}MiB
export AWS_DEFAULT_REGION=us-east-1

SKIP=""
WANT_PEERS=""; for p in nginx ceph; do peer_on $p && WANT_PEERS="$WANT_PEERS $p"; done
[ -z "$WANT_PEERS" ] || need_peers $WANT_PEERS
[ -x "$BIN" ] && [ -x "$SHARD" ] || die "set SHARDSTORE_BIN (and SHARD_BIN) to the built binaries"
for c in curl aws python3 /usr/bin/time; do command -v $c >/dev/null || die "$c missing"; done

W=$(mktemp -d /tmp/client-bench.XXXXXX)
NG_ON="" CE_ON=""
cleanup() {
  set +e
  [ -n "$SS_PID" ] && ss_stop
  [ -n "$NG_ON" ] && peer_stop nginx "$NGINX_PORT"
  [ -n "$CE_ON" ] && peer_stop ceph "$CEPH_PORT"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ ! -s "$FILE" ] || [ "$(stat -c %s "$FILE")" != $((SIZE_MB * 1048576)) ]; then
  log "writing $FILE ($SIZE_MB MiB random)"
  head -c $((SIZE_MB * 1048576)) /dev/urandom > "$FILE"
fi
BYTES=$((SIZE_MB * 1048576))

# timed NAME CMD...: runs CMD under /usr/bin/time; appends "secs cpu" to $W/NAME.
timed() {
  local name=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$W/time.$$" "$@" >/dev/null 2>"$W/err.$$" \
    || { cat "$W/err.$$" >&2; die "$name failed: $*"; }
  awk '{print $1, $2 + $3}' "$W/time.$$" >> "$W/$name"
}
report() { # NAME -> RESULT line with median MiB/s and CPU s per GiB
  local name=$1 secs cpu
  secs=$(awk '{print $1}' "$W/$name" | median)
  cpu=$(awk '{print $2}' "$W/$name" | median)
  MIBS[$name]=$(awk -v s="$secs" -v b=$BYTES 'BEGIN{printf "%.1f", b/1048576/s}')
  echo "RESULT client $name MiBps=${MIBS[$name]} cpu_s_per_GiB=$(awk -v c="$cpu" -v b=$BYTES 'BEGIN{printf "%.2f", c*1073741824/b}') secs_median=$secs runs=$(wc -l < "$W/$name")"
}
declare -A MIBS

# ---------------- shardstore ----------------
mkdir -p "$W/data"
ss_launch "$W/data"
EP=$SS_EP
export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_ENDPOINT_URL=$EP
"$SHARD" mb "s3://$BUCKET" -q

presign() { # ENDPOINT AK SK -> SigV4 presigned URL of the object
  python3 - "$1" "$2" "$3" "$BUCKET" "$KEY" <<'PY'
import sys, boto3
from botocore.config import Config
ep, ak, sk, b, k = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1", config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
print(s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": k}, ExpiresIn=3600))
PY
}
cat > "$W/boto3_get.py" <<'PY'
import sys, boto3
from boto3.s3.transfer import TransferConfig
class Null:
    def write(self, b): return len(b)
ep, b, k = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=ep, region_name="us-east-1")
s3.download_fileobj(b, k, Null(), Config=TransferConfig(max_concurrency=8))
PY
cat > "$W/boto3_put.py" <<'PY'
import sys, boto3
from boto3.s3.transfer import TransferConfig
ep, f, b, k = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=ep, region_name="us-east-1")
s3.upload_file(f, b, k, Config=TransferConfig(max_concurrency=8))
PY

log "upload $SIZE_MB MiB x $RUNS: shard cp, aws s3 cp, boto3 upload_file"
for i in $(seq "$RUNS"); do
  timed put_shard "$SHARD" cp -q --parallel "$PAR" "$FILE" "s3://$BUCKET/$KEY"
  timed put_aws aws s3 cp --only-show-errors "$FILE" "s3://$BUCKET/up-aws"
  timed put_boto3 python3 "$W/boto3_put.py" "$EP" "$FILE" "$BUCKET" up-boto3
done
# The object every reader reads is shard's upload: check it once, byte for byte.
"$SHARD" cat "s3://$BUCKET/$KEY" | cmp - "$FILE" || die "shard cat differs from the file"
URL=$(presign "$EP" "$AK" "$SK")
log "read $SIZE_MB MiB x $RUNS: shard cat, curl, boto3, aws"
timed warm curl -sf -o /dev/null "$URL"
for i in $(seq "$RUNS"); do
  timed get_shard "$SHARD" cat --parallel "$PAR" --chunk-size "$CHUNK" "s3://$BUCKET/$KEY"
  timed get_curl curl -sf -o /dev/null "$URL"
  timed get_boto3 python3 "$W/boto3_get.py" "$EP" "$BUCKET" "$KEY"
  timed get_aws aws s3 cp --only-show-errors "s3://$BUCKET/$KEY" -
done
ss_stop
rm -rf "$W/data"

# ---------------- peers ----------------
if peer_on nginx; then
  log "nginx on $NGINX_PORT"
  mkdir -p "$W/nginx/$BUCKET" && ln "$FILE" "$W/nginx/$BUCKET/$KEY" 2>/dev/null || cp "$FILE" "$W/nginx/$BUCKET/$KEY"
  peer_start nginx "$NGINX_PORT" "$W/nginx"; NG_ON=1
  NGURL=http://127.0.0.1:$NGINX_PORT/$BUCKET/$KEY
  timed warm curl -sf -o /dev/null "$NGURL"
  for i in $(seq "$RUNS"); do
    # nginx ignores the signature and serves HEAD and Range: shard reads it as an S3 endpoint.
    timed get_shard_nginx "$SHARD" --endpoint-url "http://127.0.0.1:$NGINX_PORT" cat --parallel "$PAR" \
      --chunk-size "$CHUNK" "s3://$BUCKET/$KEY"
    timed get_curl_nginx curl -sf -o /dev/null "$NGURL"
  done
  peer_stop nginx "$NGINX_PORT"; NG_ON=""
fi
if peer_on ceph; then
  log "ceph on $CEPH_PORT (~20 s to start)"
  CAK=cephbench CSK=cephbenchsecret
  AWS_ACCESS_KEY_ID=$CAK AWS_SECRET_ACCESS_KEY=$CSK peer_start ceph "$CEPH_PORT" && CE_ON=1
  if [ -n "$CE_ON" ]; then
    CEP=http://127.0.0.1:$CEPH_PORT
    AWS_ACCESS_KEY_ID=$CAK AWS_SECRET_ACCESS_KEY=$CSK "$SHARD" --endpoint-url "$CEP" mb -q "s3://$BUCKET" || true
    AWS_ACCESS_KEY_ID=$CAK AWS_SECRET_ACCESS_KEY=$CSK timed put_shard_ceph "$SHARD" --endpoint-url "$CEP" cp -q \
      --parallel "$PAR" "$FILE" "s3://$BUCKET/$KEY"
    CURL_CE=$(presign "$CEP" "$CAK" "$CSK")
    timed warm curl -sf -o /dev/null "$CURL_CE"
    for i in $(seq "$RUNS"); do
      AWS_ACCESS_KEY_ID=$CAK AWS_SECRET_ACCESS_KEY=$CSK timed get_shard_ceph "$SHARD" --endpoint-url "$CEP" \
        cat --parallel "$PAR" --chunk-size "$CHUNK" "s3://$BUCKET/$KEY"
      timed get_curl_ceph curl -sf -o /dev/null "$CURL_CE"
    done
    peer_stop ceph "$CEPH_PORT"; CE_ON=""
  else
    log "ceph did not start; skipped"
  fi
fi

for n in put_shard put_aws put_boto3 get_shard get_curl get_boto3 get_aws get_shard_nginx get_curl_nginx \
         put_shard_ceph get_shard_ceph get_curl_ceph; do
  [ -s "$W/$n" ] && report "$n"
done
mratio() { ratio "${MIBS[$1]:-0}" "${MIBS[$2]:-0}"; }
echo "RESULT client ratio shard_cat_vs_nginx_curl=$(mratio get_shard get_curl_nginx) (goal >= 0.9)"
echo "RESULT client ratio shard_cat_vs_boto3=$(mratio get_shard get_boto3) (goal >= 3)"
echo "RESULT client ratio shard_cat_vs_curl_same_server=$(mratio get_shard get_curl)"
echo "RESULT client ratio shard_cp_vs_aws=$(mratio put_shard put_aws) shard_cp_vs_boto3=$(mratio put_shard put_boto3)"
