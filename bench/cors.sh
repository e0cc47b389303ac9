#!/usr/bin/env bash
# bench/cors.sh: what CORS costs a 64 KiB range GET (issue 13). One shardstore, one
# BENCH_SIZE_MB random object stored twice: in a bucket without CORS rules and in one
# with five rules (the match is the last). wrk (BENCH_CONC connections, BENCH_SECS s per
# run) sends random 64 KiB Range GETs on a SigV4 presigned URL, so every request verifies
# its signature. Three variants, interleaved run by run (BENCH_RUNS each):
#   plain        bucket without rules, no Origin header (the baseline)
#   rules        bucket with rules, no Origin header (must cost nothing)
#   origin       bucket with rules, an Origin the last rule allows (headers added)
# Prints every run and the medians, and the ratios to plain.
#
# Usage: bench/cors.sh   (about 2 minutes)
# Knobs: BENCH_RUNS=5 BENCH_SECS=5 BENCH_CONC=16 BENCH_SIZE_MB=64 SHARDSTORE_BIN=...
set -euo pipefail
BENCH_TAG=cors
BENCH_IDLE_DEFAULT=5
source "$(dirname "$0")/lib.sh"

RUNS=${BENCH_RUNS:-5} SECS=${BENCH_SECS:-5} CONC=${BENCH_CONC:-16} SIZE_MB=${BENCH_SIZE_MB:-64}
SIZE=$((SIZE_MB << 20))
AK=benchkey SK=benchsecret
need_tools curl wrk python3
W=$(mktemp -d /tmp/bench-cors.XXXXXX)
cleanup() { ss_stop; rm -rf "$W"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
find_bin "$SRC/build/dev/shardstore" ./shardstore "$SRC/shardstore"

head -c "$SIZE" /dev/urandom > "$W/obj"
printf 'volume_size = 1G\nconnection_limit_per_ip = 0\nlog_level = warn\ninline_max = 0\n' > "$W/ss.conf"
ss_launch "$W/data" "$W/ss.conf"
log "shardstore pid $SS_PID on $SS_EP"

python3 - "$SS_EP" "$AK" "$SK" "$W" <<'PY'
import sys, boto3
from botocore.config import Config
ep, ak, sk, w = sys.argv[1:5]
c = boto3.client('s3', endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk, region_name='us-east-1',
                 config=Config(signature_version='s3v4', retries={'max_attempts': 1}))
rules = [{"AllowedOrigins": ["http://o%d.example" % i], "AllowedMethods": ["GET", "HEAD"], "ExposeHeaders": ["ETag"]} for i in range(4)]
rules.append({"AllowedOrigins": ["http://*.app.example"], "AllowedMethods": ["GET"], "AllowedHeaders": ["range"], "ExposeHeaders": ["ETag", "Content-Range"], "MaxAgeSeconds": 600})
for b in ("plain", "rules"):
    c.create_bucket(Bucket=b)
    with open(w + "/obj", "rb") as f:
        c.put_object(Bucket=b, Key="obj", Body=f)
c.put_bucket_cors(Bucket="rules", CORSConfiguration={"CORSRules": rules})
for b in ("plain", "rules"):
    with open("%s/url.%s" % (w, b), "w") as f:
        f.write(c.generate_presigned_url('get_object', Params={'Bucket': b, 'Key': 'obj'}, ExpiresIn=7200))
PY

cat > "$W/range.lua" <<'LUA'
local size = tonumber(os.getenv("BR_SIZE"))
local path = os.getenv("BR_PATH")
local origin = os.getenv("BR_ORIGIN")
function init(args) math.randomseed(os.time() * 1000 + math.random(1000)) end
function request()
  local off = math.random(0, math.floor((size - 65536) / 4096)) * 4096
  local h = { ["Range"] = "bytes=" .. off .. "-" .. (off + 65535) }
  if origin ~= "" then h["Origin"] = origin end
  return wrk.format("GET", path, h)
end
function done(summary, latency, requests)
  io.write(string.format("WRKSTAT requests=%d non2xx=%d p50_us=%d dur_us=%d\n", summary.requests,
    summary.errors.status, latency:percentile(50), summary.duration))
end
LUA

# The origin variant must really get the headers.
url=$(cat "$W/url.rules")
curl -s -D - -o /dev/null -H 'Origin: http://x.app.example' -H 'Range: bytes=0-9' "$url" \
  | grep -qi '^Access-Control-Allow-Origin: http://x.app.example' || die "no CORS headers on the origin variant"

declare -A RES
for run in $(seq 1 "$RUNS"); do
  for v in plain rules origin; do
    b=$v origin=""
    [ "$v" = origin ] && b=rules origin=http://x.app.example
    url=$(cat "$W/url.$b")
    ep=${url%%/"$b"/*} path=/${url#"$ep"/}
    BR_SIZE=$SIZE BR_PATH=$path BR_ORIGIN=$origin wrk -t2 -c"$CONC" -d"${SECS}s" -s "$W/range.lua" "$ep" > "$W/wrk.out" 2>&1
    st=$(grep '^WRKSTAT' "$W/wrk.out") || { cat "$W/wrk.out" >&2; die "no wrk summary"; }
    [ "$(kv non2xx "$st")" = 0 ] || die "$v: non-2xx answers: $st"
    rs=$(awk -v r="$(kv requests "$st")" -v d="$(kv dur_us "$st")" 'BEGIN{printf "%.0f", r/(d/1e6)}')
    RES[$v]="${RES[$v]:-} $rs"
    echo "RESULT run=$run variant=$v req_s=$rs p50_us=$(kv p50_us "$st")"
  done
done
m_plain=$(echo "${RES[plain]}" | median)
for v in plain rules origin; do
  m=$(echo "${RES[$v]}" | median)
  echo "RESULT median variant=$v req_s=$m runs=$(csv ${RES[$v]}) ratio_to_plain=$(ratio "$m" "$m_plain")"
done
