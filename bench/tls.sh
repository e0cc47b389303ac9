#!/usr/bin/env bash
# bench/tls.sh: the cost of HTTPS. One shardstore serving plain HTTP and HTTPS (tls_listen)
# beside nginx (Debian's, started here with the same certificate, TLS 1.2/1.3, ECDHE + AEAD
# ciphers in shardstore's order, and a plain listener), all on 127.0.0.1, one sitting, runs
# alternated. Both must negotiate the same protocol and cipher (checked with openssl s_client).
#
# Usage: bench/tls.sh            (from anywhere; about 4-6 minutes at the defaults)
#
# Figures (medians of BENCH_RUNS runs; all runs listed):
#   get_single_stream  one BENCH_SIZE_MB random object, curl -o /dev/null (shardstore: a SigV4
#                      presigned URL, so every GET is authenticated; nginx: the plain file), MiB/s
#   range_64k          wrk, BENCH_CONC keep-alive connections, BENCH_RANGE_SECS s per run, 64 KiB
#                      Range GETs at random offsets (half 4 KiB-aligned, half not); req/s
# for shardstore http, shardstore https, nginx https, nginx http; ratios https/nginx-https
# (the issue's goal: >= 0.9) and https/http. Every server's bytes are checked by MD5 first.
#
# Env knobs (defaults):
#   BENCH_RUNS=5 BENCH_SIZE_MB=1024 BENCH_CONC=16 BENCH_RANGE_SECS=5 BENCH_WRK_THREADS=2
#   BENCH_DATA=/tmp/shardstore-tls-bench (needs ~2.5 GiB free; removed unless BENCH_KEEP=1)
#   BENCH_NGINX_PORT=18443 (its plain listener: +1)  BENCH_PAUSE=1
#   BENCH_WAIT_IDLE=15 BENCH_MAX_BUSY=0.3 (see lib.sh `quiet`)
#   SHARDSTORE_BIN   default: /tmp/build-bench/shardstore, else ./shardstore
# Output: "RESULT ..." lines on stdout; progress on stderr.
set -euo pipefail

BENCH_TAG=tls
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-5}
SIZE_MB=${BENCH_SIZE_MB:-1024}
SIZE=$((SIZE_MB * 1048576))
CONC=${BENCH_CONC:-16}
RSECS=${BENCH_RANGE_SECS:-5}
WTHREADS=${BENCH_WRK_THREADS:-2}
PAUSE=${BENCH_PAUSE:-1}
DATA=${BENCH_DATA:-/tmp/shardstore-tls-bench}
NGX_PORT=${BENCH_NGINX_PORT:-18443}
NGX_HTTP_PORT=$((NGX_PORT + 1))
AK=tlsbenchAK0000000000 SK=tlsbenchSK00000000000000000000000000000000
BUCKET=tlsbench
W=$(mktemp -d)
SS_PID="" NGX_PID=""

cleanup() {
  ss_stop
  if [ -n "$NGX_PID" ]; then
    kill -TERM "$NGX_PID" 2>/dev/null || true
    local _i; for _i in $(seq 1 50); do kill -0 "$NGX_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$DATA"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_tools curl wrk python3 openssl awk nginx md5sum
find_bin /tmp/build-bench/shardstore ./shardstore "$SRC/shardstore"
port_busy "$NGX_PORT" && die "127.0.0.1:$NGX_PORT is in use (BENCH_NGINX_PORT)"
port_busy "$NGX_HTTP_PORT" && die "127.0.0.1:$NGX_HTTP_PORT is in use"

rm -rf "$DATA"
mkdir -p "$DATA/ss" "$DATA/www"
FILE=$DATA/www/obj.bin
log "making a $SIZE_MB MiB random file and a P-256 certificate for 127.0.0.1"
head -c "$SIZE" /dev/urandom > "$FILE"
MD5=$(md5sum "$FILE" | cut -d' ' -f1)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -keyout "$W/key.pem" -out "$W/cert.pem" -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 2> /dev/null || die "openssl could not make the certificate"

# shardstore: plain HTTP on the port it picks, HTTPS on a second free port.
TLS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'volume_size = %dM\ninline_max = 0\ntls_cert_file = %s\ntls_key_file = %s\ntls_listen = 127.0.0.1:%s\n' \
  $((SIZE_MB * 2 + 256)) "$W/cert.pem" "$W/key.pem" "$TLS_PORT" > "$W/ss.conf"
ss_launch "$DATA/ss" "$W/ss.conf"
for _i in $(seq 1 50); do grep -q "listening on https://127.0.0.1:$TLS_PORT" "$W/ss.out" && break; sleep 0.1; done
grep -q "listening on https://127.0.0.1:$TLS_PORT" "$W/ss.out" || { cat "$W/ss.out" "$W/ss.err" >&2; die "no HTTPS listener"; }
ss_curl -f -X PUT "$SS_EP/$BUCKET" -o /dev/null || die "cannot create the bucket"
ss_curl -f -T "$FILE" -o /dev/null "$SS_EP/$BUCKET/obj" || die "PUT failed"

# nginx: the same file and certificate.
mkdir -p "$W/ngx/tmp"
USERLINE=""; [ "$(id -u)" = 0 ] && USERLINE="user root;"
cat > "$W/ngx/nginx.conf" <<CONF
$USERLINE
worker_processes auto;
pid $W/ngx/nginx.pid;
error_log $W/ngx/error.log warn;
events { worker_connections 4096; }
http {
  sendfile on;
  tcp_nopush off;
  tcp_nodelay on;
  keepalive_requests 1000000;
  access_log off;
  default_type application/octet-stream;
  client_body_temp_path $W/ngx/tmp/body;
  proxy_temp_path $W/ngx/tmp/proxy;
  fastcgi_temp_path $W/ngx/tmp/fastcgi;
  uwsgi_temp_path $W/ngx/tmp/uwsgi;
  scgi_temp_path $W/ngx/tmp/scgi;
  ssl_protocols TLSv1.2 TLSv1.3;
  # shardstore's preference order (tls_priorities in server/tls.c): AES-128-GCM first. Left to
  # OpenSSL's defaults nginx picks TLS_AES_256_GCM_SHA384 where shardstore picks
  # TLS_AES_128_GCM_SHA256, and the two would not encrypt the same way.
  ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305;
  ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;
  ssl_prefer_server_ciphers on;
  server {
    listen 127.0.0.1:$NGX_PORT ssl;
    listen 127.0.0.1:$NGX_HTTP_PORT;
    ssl_certificate $W/cert.pem;
    ssl_certificate_key $W/key.pem;
    root $DATA/www;
  }
}
CONF
nginx -c "$W/ngx/nginx.conf" -p "$W/ngx" -g 'daemon off;' 2> "$W/ngx/stderr" &
NGX_PID=$!
for _i in $(seq 1 50); do port_busy "$NGX_PORT" && break; sleep 0.1; done
port_busy "$NGX_PORT" || { cat "$W/ngx/stderr" >&2; die "nginx did not start"; }

declare -A URL
URL[ss_http]=$(presign "$SS_EP" "$AK" "$SK" "$BUCKET" obj)
URL[ss_https]=$(presign "https://127.0.0.1:$TLS_PORT" "$AK" "$SK" "$BUCKET" obj)
URL[nginx_https]=https://127.0.0.1:$NGX_PORT/obj.bin
URL[nginx_http]=http://127.0.0.1:$NGX_HTTP_PORT/obj.bin
NAMES="ss_http ss_https nginx_https nginx_http"
for n in $NAMES; do
  got=$(curl -sf --cacert "$W/cert.pem" "${URL[$n]}" | md5sum | cut -d' ' -f1)
  [ "$got" = "$MD5" ] || die "GET of $n: MD5 $got, expected $MD5"
done
# The protocol and cipher each TLS server negotiates (reported beside the figures): they must be
# the same, else the ratio compares unlike work.
declare -A NEG_OF
for n in ss_https nginx_https; do
  u=${URL[$n]#https://}; hp=${u%%/*}
  neg=$(openssl s_client -connect "$hp" -CAfile "$W/cert.pem" < /dev/null 2>/dev/null | sed -n 's/^New, \([^,]*\), Cipher is \(.*\)/\1 \2/p' | head -1)
  log "$n negotiates: $neg"
  NEG="${NEG:-}$n=$(echo $neg | tr ' ' /) "
  NEG_OF[$n]=$neg
done
[ -n "${NEG_OF[ss_https]}" ] && [ "${NEG_OF[ss_https]}" = "${NEG_OF[nginx_https]}" ] \
  || die "the TLS servers negotiate different protocols or ciphers (${NEG% }); the ratio would compare unlike work"

declare -A RUNS_OF
measure() {
  local name=$1 v; shift
  v=$("$@")
  RUNS_OF[$name]="${RUNS_OF[$name]:-} $v"
  log "$name: $v"
}
# Each run visits the four in a rotated order, so drift hits them alike.
rotate() { local i=$1 a=($NAMES) k; for k in 0 1 2 3; do echo "${a[$(((i + k) % 4))]}"; done; }

for phase in get range; do
  quiet "$phase"
  for i in $(seq 1 "$RUNS"); do
    for n in $(rotate "$i"); do
      sleep "$PAUSE"
      if [ "$phase" = get ]; then measure "get_$n" get_mibs "${URL[$n]}" --cacert "$W/cert.pem"
      else measure "range_$n" range_reqs "${URL[$n]}"; fi
    done
  done
done

for m in get range; do
  unit=MiB_s; [ "$m" = range ] && unit=req_s
  line="RESULT metric=$m unit=$unit"
  declare -A MED
  for n in $NAMES; do
    MED[$n]=$(echo ${RUNS_OF[${m}_$n]} | median)
    line="$line $n=$(f1 "${MED[$n]}")"
  done
  line="$line https_vs_nginx_https=$(ratio "${MED[ss_https]}" "${MED[nginx_https]}") https_vs_http=$(ratio "${MED[ss_https]}" "${MED[ss_http]}") nginx_https_vs_http=$(ratio "${MED[nginx_https]}" "${MED[nginx_http]}")"
  for n in $NAMES; do line="$line runs_$n=$(csv ${RUNS_OF[${m}_$n]})"; done
  echo "$line"
done
echo "RESULT metric=setup size_mb=$SIZE_MB runs=$RUNS conc=$CONC range_secs=$RSECS negotiated=${NEG% } noise=${NOISE:-} loadavg=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)"
