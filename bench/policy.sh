#!/usr/bin/env bash
# bench/policy.sh: what bucket policies and ACLs cost on the hot paths, in one sitting.
#
# Usage: bench/policy.sh     (about 2-3 minutes)
#
# Figures (medians of BENCH_RUNS runs; all runs listed; runs alternate plain, guarded,
# plain, ... so drift hits both alike):
#   range   shard bench range: 64 KiB range GETs (BENCH_CONC connections, BENCH_SECS s) of
#           BENCH_OBJECTS objects of 1 MiB, req/s, in a default new bucket ("plain": no
#           configuration but its BucketOwnerEnforced ownership)
#           and in one with a 20-statement bucket policy (Allow and Deny statements with
#           conditions on aws:SourceIp, s3:prefix, aws:CurrentTime, s3:ExistingObjectTag, ...,
#           none of which denies the caller), a bucket ACL and object ACLs ("guarded",
#           created ObjectWriter so ACLs are on);
#           the ratio guarded/plain (goal >= 0.97).
#   put     shard bench put: 4 KiB objects, PUT/s, same two buckets and ratio.
#   post    POST Object (browser form upload, curl -F, SigV4-signed policy) of BENCH_POST_MB
#           MiB vs a PUT of the same file (curl -T), MiB/s, alternating.
# The machine load (cores used by others) before each phase is reported (NOISE).
#
# Env knobs (defaults): BENCH_RUNS=5 BENCH_SECS=5 BENCH_CONC=16 BENCH_OBJECTS=64
#   BENCH_POST_MB=256 BENCH_SKIP="" (words among: range put post)
#   BENCH_DATA=/tmp/shardstore-policy-bench (removed at the end unless BENCH_KEEP=1)
#   SHARDSTORE_BIN (default: build/dev/shardstore of this tree, else ./shardstore)
# Output: "RESULT ..." lines on stdout; progress on stderr.
set -euo pipefail

BENCH_TAG=policy
BENCH_IDLE_DEFAULT=5
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-5}
SECS=${BENCH_SECS:-5}
CONC=${BENCH_CONC:-16}
OBJECTS=${BENCH_OBJECTS:-64}
POST_MB=${BENCH_POST_MB:-256}
DATA=${BENCH_DATA:-/tmp/shardstore-policy-bench}
SKIP=${BENCH_SKIP:-}
AK=benchkey SK=benchsecret
need_tools curl python3
find_bin "$SRC/build/dev/shardstore" ./shardstore
SHARD=$(dirname "$BIN")/shard
[ -x "$SHARD" ] || die "shard (the load generator) not found next to $BIN"

W=$(mktemp -d /tmp/policy-bench.XXXXXX)
cleanup() {
  set +e
  [ -n "$SS_PID" ] && ss_stop
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$DATA"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$DATA"
mkdir -p "$DATA"

ss_launch "$DATA/ss"
log "shardstore at $SS_EP"
# plain: a default bucket (BucketOwnerEnforced); guarded: ACLs on (ObjectWriter) for its ACLs.
ss_curl -f -X PUT "$SS_EP/plain" -o /dev/null || die "create bucket plain failed"
ss_curl -f -X PUT "$SS_EP/guarded" -H "x-amz-object-ownership: ObjectWriter" -o /dev/null || die "create bucket guarded failed"

# ---------------- the guarded bucket's configuration ----------------
python3 - > "$W/policy.json" <<'PY'
import json
B = "arn:aws:s3:::guarded"
st = []
for i in range(8):   # Deny statements that never match the caller
    st.append({"Sid": "deny%d" % i, "Effect": "Deny", "Principal": "*",
               "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
               "Resource": B + "/*",
               "Condition": {"IpAddress": {"aws:SourceIp": ["10.%d.0.0/16" % i, "192.168.%d.0/24" % i]}}})
for i in range(6):
    st.append({"Sid": "deny-tag%d" % i, "Effect": "Deny", "Principal": "*",
               "Action": "s3:Get*", "Resource": B + "/secret%d/*" % i,
               "Condition": {"StringEquals": {"s3:ExistingObjectTag/class": "secret"}}})
for i in range(4):
    st.append({"Sid": "allow%d" % i, "Effect": "Allow",
               "Principal": {"CanonicalUser": "%064d" % i},
               "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": [B, B + "/*"],
               "Condition": {"StringLike": {"s3:prefix": ["team%d/*" % i]},
                             "DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"}}})
st.append({"Sid": "tls", "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": B + "/*",
           "Condition": {"Bool": {"aws:SecureTransport": "false"}, "StringEquals": {"aws:username": "nobody"}}})
st.append({"Sid": "lan", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
           "Resource": B + "/*", "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}})
assert len(st) == 20
print(json.dumps({"Version": "2012-10-17", "Statement": st}))
PY
ss_curl -f -X PUT "$SS_EP/guarded?policy=" --data-binary @"$W/policy.json" -o /dev/null || die "put policy failed"
ss_curl -f -X PUT "$SS_EP/guarded?acl=" -H 'x-amz-grant-read: uri="http://acs.amazonaws.com/groups/global/AuthenticatedUsers"' \
  -H 'x-amz-grant-write: uri="http://acs.amazonaws.com/groups/global/AuthenticatedUsers"' -o /dev/null \
  || die "put bucket acl failed"

bench() { # bench OP BUCKET EXTRA...: one shard bench run, prints its RESULT line
  local op=$1 b=$2 out; shift 2
  out=$(AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK timeout $((SECS + 300)) \
    "$SHARD" --endpoint-url "$SS_EP" bench "$op" --bucket "$b" --concurrency "$CONC" "$@" 2>&1) || true
  echo "$out" | grep "^RESULT op=$op " || die "shard bench $op on $b failed: $out"
}

# ---------------- range GETs ----------------
declare -A MED RUNS_OF
if ! skip range; then
  for b in plain guarded; do
    bench put "$b" --prefix r/ --size 1048576 --objects "$OBJECTS" --count "$OBJECTS" >/dev/null
  done
  # Object ACLs on the guarded bucket's objects (the ACL is read only when denied, so this
  # costs the hot path nothing; it is here so the bucket has "ACLs" in every sense).
  for i in 0 1 2 3; do
    ss_curl -f -X PUT "$SS_EP/guarded/r/$(printf %010d $i)?acl=" -H 'x-amz-acl: authenticated-read' -o /dev/null || true
  done
  quiet range
  for i in $(seq 1 "$RUNS"); do
    for b in plain guarded; do
      out=$(bench range "$b" --prefix r/ --size 1048576 --objects "$OBJECTS" --range-size 65536 \
        --duration "$SECS" --no-prepare)
      log "range $b run $i: ${out#RESULT }"
      RUNS_OF[range_$b]="${RUNS_OF[range_$b]:-} $(kv ops_per_s "$out")"
    done
  done
  for b in plain guarded; do MED[range_$b]=$(echo ${RUNS_OF[range_$b]} | median); done
  echo "RESULT phase=range plain_rps=$(f1 "${MED[range_plain]}") guarded_rps=$(f1 "${MED[range_guarded]}") ratio=$(ratio "${MED[range_guarded]}" "${MED[range_plain]}") plain_runs=$(csv ${RUNS_OF[range_plain]}) guarded_runs=$(csv ${RUNS_OF[range_guarded]})"
fi

# ---------------- 4 KiB PUTs ----------------
if ! skip put; then
  quiet put
  for i in $(seq 1 "$RUNS"); do
    for b in plain guarded; do
      out=$(bench put "$b" --prefix "p$i/" --size 4096 --objects 100000 --duration "$SECS")
      log "put $b run $i: ${out#RESULT }"
      RUNS_OF[put_$b]="${RUNS_OF[put_$b]:-} $(kv ops_per_s "$out")"
    done
  done
  for b in plain guarded; do MED[put_$b]=$(echo ${RUNS_OF[put_$b]} | median); done
  echo "RESULT phase=put plain_ops=$(f1 "${MED[put_plain]}") guarded_ops=$(f1 "${MED[put_guarded]}") ratio=$(ratio "${MED[put_guarded]}" "${MED[put_plain]}") plain_runs=$(csv ${RUNS_OF[put_plain]}) guarded_runs=$(csv ${RUNS_OF[put_guarded]})"
fi

# ---------------- POST Object vs PUT ----------------
if ! skip post; then
  head -c $((POST_MB * 1048576)) /dev/urandom > "$DATA/post.bin"
  quiet post
  post_runs="" put_runs=""
  for i in $(seq 1 "$RUNS"); do
    # A SigV4 POST policy for key post/$i (signed here, as a browser's backend would).
    python3 - "$AK" "$SK" plain "post/$i" > "$W/form.txt" <<'PY'
import base64, datetime, hashlib, hmac, json, sys
ak, sk, bucket, key = sys.argv[1:5]
now = datetime.datetime.now(datetime.timezone.utc)
date = now.strftime("%Y%m%d")
amz_date = now.strftime("%Y%m%dT%H%M%SZ")
cred = "%s/%s/us-east-1/s3/aws4_request" % (ak, date)
pol = {"expiration": (now + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
       "conditions": [{"bucket": bucket}, {"key": key}, {"x-amz-algorithm": "AWS4-HMAC-SHA256"},
                      {"x-amz-credential": cred}, {"x-amz-date": amz_date}]}
b64 = base64.b64encode(json.dumps(pol).encode()).decode()
def h(k, m): return hmac.new(k, m.encode(), hashlib.sha256).digest()
k = h(h(h(h(("AWS4" + sk).encode(), date), "us-east-1"), "s3"), "aws4_request")
sig = hmac.new(k, b64.encode(), hashlib.sha256).hexdigest()
for n, v in (("key", key), ("x-amz-algorithm", "AWS4-HMAC-SHA256"), ("x-amz-credential", cred),
             ("x-amz-date", amz_date), ("policy", b64), ("x-amz-signature", sig)):
    print("-F\n%s=%s" % (n, v))
PY
    mapfile -t form < "$W/form.txt"
    t0=$(now)
    code=$(curl -s -o /dev/null -w '%{http_code}' "${form[@]}" -F "file=@$DATA/post.bin" "$SS_EP/plain")
    t1=$(now)
    [ "$code" = 204 ] || die "POST upload answered $code"
    post_runs="$post_runs $(mibs_of "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" $((POST_MB * 1048576)))"
    t0=$(now)
    ss_curl -f -T "$DATA/post.bin" "$SS_EP/plain/put/$i" -o /dev/null || die "PUT failed"
    t1=$(now)
    put_runs="$put_runs $(mibs_of "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" $((POST_MB * 1048576)))"
    log "post run $i: post=$(echo $post_runs | awk '{print $NF}') put=$(echo $put_runs | awk '{print $NF}') MiB/s"
  done
  pm=$(echo $post_runs | median); um=$(echo $put_runs | median)
  echo "RESULT phase=post post_mibs=$(f1 "$pm") put_mibs=$(f1 "$um") ratio=$(ratio "$pm" "$um") post_runs=$(csv $post_runs) put_runs=$(csv $put_runs)"
fi
echo "RESULT noise=$(csv $NOISE)"
