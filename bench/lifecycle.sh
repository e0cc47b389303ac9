#!/usr/bin/env bash
# bench/lifecycle.sh: lifecycle transitions, the cold tier and expiration, on one shardstore
# on 127.0.0.1 (lifecycle_day_seconds = 1, passes started with POST /_/lifecycle/run).
#
# Usage: bench/lifecycle.sh          (about 5-10 minutes with the defaults)
#
# Figures (medians of BENCH_RUNS runs; all runs listed):
#   transition_big     hot -> cold MiB/s of one BENCH_BIG_MB checkpoint-like object (half
#                      float32-weights-like bytes: random mantissas, a few exponents; half
#                      text-like lines), rates unbounded; between runs the object is moved back
#                      with a CopyObject onto itself (x-amz-storage-class STANDARD), untimed.
#   compression        plain bytes / cold bytes of that object (shardstore_tier_used_bytes).
#   transition_small   hot -> cold objects/s and MiB/s of BENCH_SMALL_N objects of
#                      BENCH_SMALL_SIZE bytes (shard bench put payload: pseudo-random), one
#                      bucket per run.
#   fg_range           64 KiB range GET req/s on a hot object (shard bench range, BENCH_CONC
#                      connections, BENCH_SECS s) alone, then while a pass moves objects at the
#                      default rates (lifecycle_max_mib_per_s 64, 1000 objects/s); pairs
#                      alternate, ratio of medians (goal >= 0.9).
#   cold_vs_hot        64 KiB range req/s and single-stream GET MiB/s (shard --parallel 1 cat)
#                      of the big object in the cold tier and of a hot copy; ratios.
#   expire             seconds to expire BENCH_EXPIRE_N objects (rates unbounded) and objects/s
#                      (and, when BENCH_EXPIRE_N < 1,000,000, the extrapolated time for 1,000,000).
# Every read is checked first: the cold and hot objects' MD5 equals the file's.
#
# Env knobs: BENCH_RUNS=5 BENCH_BIG_MB=1024 (4096 for the 4 GiB case) BENCH_FILE=/tmp/bench-lifecycle-${BIG_MB}MiB.bin (kept
#            between runs) BENCH_SMALL_N=2000 BENCH_SMALL_SIZE=16384
#            BENCH_CONC=16 BENCH_SECS=6 BENCH_EXPIRE_N=50000 BENCH_DIR=/tmp (data + file)
#            BENCH_SMALL_RUNS=$BENCH_RUNS BENCH_VOLUME_MB, BENCH_COLD_VOLUME_MB, BENCH_MAX_VOLUMES
#            (volumes are preallocated: smaller ones when /tmp is short)
#            BENCH_PHASES="big cold_vs_hot small fg expire" (a subset runs only those: at the
#            issue's scale each phase is one bounded sitting; a phase that needs the cold
#            object moves it once, untimed)
set -euo pipefail
BENCH_TAG=lifecycle
BENCH_IDLE_DEFAULT=5
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

RUNS=${BENCH_RUNS:-5}
BIG_MB=${BENCH_BIG_MB:-1024}
SMALL_N=${BENCH_SMALL_N:-2000}
SMALL_SIZE=${BENCH_SMALL_SIZE:-16384}
CONC=${BENCH_CONC:-16}
SECS=${BENCH_SECS:-6}
EXPIRE_N=${BENCH_EXPIRE_N:-50000}
PHASES=" ${BENCH_PHASES:-big cold_vs_hot small fg expire} "
phase() { [[ "$PHASES" == *" $1 "* ]]; }
AK=benchkey SK=benchsecret
need_tools curl python3 awk
find_bin "$SRC/build/dev/shardstore" "$SRC/build/shardstore" "$SRC/shardstore"
SHARD=$(dirname "$BIN")/shard
[ -x "$SHARD" ] || die "shard (the client) not found next to $BIN"
W=$(mktemp -d "${BENCH_DIR:-/tmp}/bench-lifecycle.XXXXXX")
trap 'ss_stop; rm -rf "$W"' EXIT

shard() { AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$SHARD" --endpoint-url "$SS_EP" -q "$@"; }
lc_run() { ss_curl --max-time 3600 -X POST "$SS_EP/_/lifecycle/run?bucket=$1"; }
cold_bytes() { ss_curl --max-time 10 "$SS_EP/_/metrics" | awk '$1=="shardstore_tier_used_bytes{tier=\"COLD\"}"{print $2}'; }
put_lc() { # put_lc BUCKET RULE_BODY
  local body="<LifecycleConfiguration><Rule><ID>b</ID><Status>Enabled</Status><Filter></Filter>$2</Rule></LifecycleConfiguration>"
  local md5; md5=$(printf '%s' "$body" | openssl md5 -binary | base64)
  local out
  out=$(ss_curl -X PUT -H "Content-MD5: $md5" -H "Content-Type: application/xml" --data-binary "$body" \
    -w '%{http_code}' "$SS_EP/$1?lifecycle=")
  [ "${out: -3}" = 200 ] || die "put lifecycle on $1: $out"
}
TO_COLD="<Transition><Days>1</Days><StorageClass>COLD</StorageClass></Transition>"
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# ---------------- the checkpoint-like file ----------------
FILE=${BENCH_FILE:-${BENCH_DIR:-/tmp}/bench-lifecycle-${BIG_MB}MiB.bin}
NEED_BIG=0
if phase big || phase cold_vs_hot || phase fg; then NEED_BIG=1; fi
[ "$NEED_BIG" = 0 ] || [ -s "$FILE" ] || python3 - "$FILE" "$BIG_MB" <<'PY'
import random, sys
path, mb = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
# float32 ~ N(0, 0.02): random mantissa bytes, a sign/exponent byte among four values.
exp_table = bytes((0x3c, 0x3d, 0xbc, 0xbd)[i & 3] for i in range(256))
words = b"step loss grad norm layer attention weight bias epoch shard tensor checkpoint".split()
lines = []
for i in range(60000):
    lines.append(b"%d %s=%0.6f %s %s\n" % (i, rnd.choice(words), rnd.random(), rnd.choice(words), rnd.choice(words)))
text = b"".join(lines)
with open(path, "wb") as f:
    seg = 64 << 20
    for i in range(max(1, mb * (1 << 20) // seg)):
        if i % 2 == 0:
            w = bytearray(rnd.randbytes(seg))
            w[3::4] = bytes(w[3::4]).translate(exp_table)
            f.write(w)
        else:
            out = bytearray()
            while len(out) < seg:
                out += text
            f.write(out[:seg])
PY
SIZE=0 MD5=""
if [ "$NEED_BIG" = 1 ]; then
  SIZE=$(stat -c %s "$FILE")
  MD5=$(md5sum "$FILE" | cut -d' ' -f1)
  log "file: $((SIZE >> 20)) MiB checkpoint-like (half weights-like, half text-like), md5 $MD5"
fi

cat > "$W/ss.conf" <<EOF
volume_size = ${BENCH_VOLUME_MB:-$(( BIG_MB * 3 + 1024 ))}M
max_volumes = ${BENCH_MAX_VOLUMES:-4}
cold_volume_size = ${BENCH_COLD_VOLUME_MB:-$(( BIG_MB * 2 + 512 ))}M
cold_max_volumes = ${BENCH_MAX_VOLUMES:-4}
lifecycle_day_seconds = 1
lifecycle_interval_s = 0
lifecycle_max_objects_per_s = 0
lifecycle_max_mib_per_s = 0
EOF
ss_launch "$W/data" "$W/ss.conf"
log "shardstore $SS_EP (pid $SS_PID)"
if [ "$NEED_BIG" = 1 ]; then
  shard mb s3://big
  shard mb s3://hot
  shard cp "$FILE" s3://big/cold/0000000000
  shard cp "$FILE" s3://hot/hot/0000000000
  put_lc big "$TO_COLD"
  sleep 2
fi

# ---------------- transition_big ----------------
BIG_RUNS=""
if phase big; then
for i in $(seq 1 "$RUNS"); do
  if [ "$i" -gt 1 ]; then  # back to hot, untimed
    ss_curl -f -X PUT -H "x-amz-copy-source: /big/cold/0000000000" -H "x-amz-storage-class: STANDARD" \
      "$SS_EP/big/cold/0000000000" > /dev/null || die "move back to STANDARD"
    sleep 1.1
  fi
  quiet "transition_big_$i"
  t0=$(now); out=$(lc_run big); t1=$(now)
  n=$(echo "$out" | json_field objects_transitioned)
  [ "$n" = 1 ] || die "run $i: the big object did not move ($out)"
  mibs=$(mibs_of "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$SIZE")
  log "transition_big run $i: $mibs MiB/s"
  BIG_RUNS="$BIG_RUNS $mibs"
done
COLD=$(cold_bytes)
RATIO=$(awk -v p="$SIZE" -v c="$COLD" 'BEGIN{printf "%.3f", p/c}')
got=$(shard cat s3://big/cold/0000000000 | md5sum | cut -d' ' -f1)
[ "$got" = "$MD5" ] || die "cold object differs from the file"
echo "RESULT transition_big_mib_s=$(echo "$BIG_RUNS" | median) runs=$(csv $BIG_RUNS) size_mib=$((SIZE >> 20))"
echo "RESULT compression plain_bytes=$SIZE cold_bytes=$COLD ratio=$RATIO (zstd level 3, cold_block_size default)"
elif phase cold_vs_hot; then
  out=$(lc_run big)  # the cold object, untimed
  [ "$(echo "$out" | json_field objects_transitioned)" = 1 ] || die "the big object did not move ($out)"
fi

# ---------------- cold_vs_hot ----------------
range_rps() { # range_rps BUCKET PREFIX
  shard bench range --bucket "$1" --prefix "$2" --size "$SIZE" --objects 1 --no-prepare \
    --range-size 65536 --concurrency "$CONC" --duration "$SECS" | kv ops_per_s
}
CR="" HR="" CG="" HG=""
if phase cold_vs_hot; then
got=$(shard cat s3://big/cold/0000000000 | md5sum | cut -d' ' -f1)
[ "$got" = "$MD5" ] || die "cold object differs from the file"
for i in $(seq 1 "$RUNS"); do
  quiet "cold_vs_hot_$i"
  c=$(range_rps big cold/); h=$(range_rps hot hot/)
  t0=$(now); shard --parallel 1 cat s3://big/cold/0000000000 > /dev/null; t1=$(now)
  cg=$(mibs_of "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$SIZE")
  t0=$(now); shard --parallel 1 cat s3://hot/hot/0000000000 > /dev/null; t1=$(now)
  hg=$(mibs_of "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$SIZE")
  log "cold_vs_hot run $i: range cold $c hot $h req/s; GET cold $cg hot $hg MiB/s"
  CR="$CR $c" HR="$HR $h" CG="$CG $cg" HG="$HG $hg"
done
echo "RESULT cold_vs_hot range_64k cold=$(echo "$CR" | median) hot=$(echo "$HR" | median) req/s ratio=$(ratio "$(echo "$CR" | median)" "$(echo "$HR" | median)") runs_cold=$(csv $CR) runs_hot=$(csv $HR) conc=$CONC"
echo "RESULT cold_vs_hot get_single_stream cold=$(echo "$CG" | median) hot=$(echo "$HG" | median) MiB/s ratio=$(ratio "$(echo "$CG" | median)" "$(echo "$HG" | median)") runs_cold=$(csv $CG) runs_hot=$(csv $HG)"
fi

# ---------------- transition_small ----------------
SM_OPS="" SM_MIB=""
if phase small; then
for i in $(seq 1 "${BENCH_SMALL_RUNS:-$RUNS}"); do
  shard bench put --bucket "small$i" --prefix o/ --size "$SMALL_SIZE" --objects "$SMALL_N" \
    --concurrency 16 > /dev/null
  put_lc "small$i" "$TO_COLD"
  sleep 2
  quiet "transition_small_$i"
  t0=$(now); out=$(lc_run "small$i"); t1=$(now)
  n=$(echo "$out" | json_field objects_transitioned)
  [ "$n" = "$SMALL_N" ] || die "run $i: $n of $SMALL_N moved ($out)"
  s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')
  ops=$(awk -v n="$n" -v s="$s" 'BEGIN{printf "%.0f", n/s}')
  mib=$(mibs_of "$s" $((SMALL_N * SMALL_SIZE)))
  log "transition_small run $i: $ops objects/s, $mib MiB/s"
  SM_OPS="$SM_OPS $ops" SM_MIB="$SM_MIB $mib"
done
echo "RESULT transition_small objects_s=$(echo "$SM_OPS" | median) mib_s=$(echo "$SM_MIB" | median) runs_objects_s=$(csv $SM_OPS) n=$SMALL_N size=$SMALL_SIZE"
fi

# ---------------- fg_range: foreground range GETs with the worker at its default rate ----------
if phase fg; then
ss_stop
sed -i '/lifecycle_max_objects_per_s\|lifecycle_max_mib_per_s/d' "$W/ss.conf"
ss_launch "$W/data" "$W/ss.conf"
shard mb s3://bgw
shard bench put --bucket bgw --prefix o/ --size 1048576 --objects "${BENCH_FG_OBJECTS:-2000}" --concurrency 8 > /dev/null
ALONE="" BUSY=""
for i in $(seq 1 "$RUNS"); do
  # Back to hot (untimed) so that the pass has work for the whole measurement.
  ss_curl -f -X DELETE "$SS_EP/bgw?lifecycle=" > /dev/null || true
  quiet "fg_alone_$i"
  a=$(range_rps hot hot/)
  put_lc bgw "$TO_COLD"
  sleep 1.1
  lc_run bgw > "$W/pass.out" &
  PASS=$!
  sleep 0.5
  m0=$(ss_metric shardstore_tier_bytes_moved_total); t0=$(now)
  b=$(range_rps hot hot/)
  m1=$(ss_metric shardstore_tier_bytes_moved_total); t1=$(now)
  kill "$PASS" 2>/dev/null || true; wait "$PASS" 2>/dev/null || true
  wm=$(mibs_of "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$(awk -v a="${m0:-0}" -v b="${m1:-0}" 'BEGIN{printf "%.0f", b-a}')")
  log "fg_range run $i: alone $a req/s, with the worker $b req/s (the worker moved $wm MiB/s meanwhile)"
  ALONE="$ALONE $a" BUSY="$BUSY $b" WMIB="${WMIB:-} $wm"
  ss_stop; ss_launch "$W/data" "$W/ss.conf"   # ends the pass; the next run starts fresh
  ss_curl -f -X DELETE "$SS_EP/bgw?lifecycle=" > /dev/null || true
done
echo "RESULT fg_range alone=$(echo "$ALONE" | median) with_worker=$(echo "$BUSY" | median) req/s ratio=$(ratio "$(echo "$BUSY" | median)" "$(echo "$ALONE" | median)") goal>=0.9 runs_alone=$(csv $ALONE) runs_with=$(csv $BUSY) conc=$CONC worker_mib_s=$(csv $WMIB)"
fi

# ---------------- expire ----------------
if phase expire; then
t0=$(now)
shard bench put --bucket exp --prefix e/ --size 1 --objects "$EXPIRE_N" --concurrency 16 > /dev/null
t1=$(now)
log "expire: $EXPIRE_N objects written in $(f2 "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')") s"
ss_stop
cat >> "$W/ss.conf" <<EOF
lifecycle_max_objects_per_s = 0
EOF
ss_launch "$W/data" "$W/ss.conf"
put_lc exp "<Expiration><Days>1</Days></Expiration>"
sleep 2.1
t0=$(now); out=$(lc_run exp); t1=$(now)
n=$(echo "$out" | json_field objects_expired)
s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')
rate=$(awk -v n="$n" -v s="$s" 'BEGIN{printf "%.0f", n/s}')
[ "$n" = "$EXPIRE_N" ] || die "expire: $n of $EXPIRE_N expired ($out)"
left=$(shard ls -r s3://exp | head -1 | wc -l)
[ "$left" = 0 ] || die "expire: objects left after the pass"
if [ "$EXPIRE_N" -ge 1000000 ]; then
  echo "RESULT expire n=$n secs=$(f2 "$s") objects_s=$rate (measured, one run)"
else
  echo "RESULT expire n=$n secs=$(f2 "$s") objects_s=$rate extrapolated_1M_secs=$(awk -v r="$rate" 'BEGIN{printf "%.0f", 1000000/r}') (extrapolated from n, one run)"
fi
fi
ss_stop
