"""test_tls.py: shardstore over HTTPS (tls_cert_file / tls_key_file).

A throwaway CA and server certificates for 127.0.0.1/localhost are made
with openssl at test time. Checked: TLS 1.2 and 1.3 accepted, 1.1 refused,
plain HTTP to the TLS port fails without harming the server; boto3 (its
default checksums make PUTs aws-chunked with trailers over HTTPS; multipart,
GET, Range), aws-cli (--ca-bundle), rclone (--ca-cert), s3cmd (--ca-certs)
and `shard` (AWS_CA_BUNDLE) work; SIGHUP swaps the certificate for new
connections while an open keep-alive connection goes on; an over-size
chunked upload gets its EntityTooLarge as a TLS record, then a close; a
stalled handshake is dropped by header_timeout; with tls_listen, plain HTTP
and HTTPS are served side by side.
"""
import http.client
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, same_bytes  # noqa: E402

MIB = 1 << 20
TMP = None
OPENSSL = None

# The server prints https:// when TLS is on.
harness.PORT_LINE = re.compile(r"^shardstore: listening on https?://127\.0\.0\.1:(\d+)\s*$")


def openssl(*args, input=None, check_rc=True, timeout=30):
    return harness.run_cmd([OPENSSL] + list(args), input=input, check_rc=check_rc, timeout=timeout)


def make_ca():
    ca_key, ca = os.path.join(TMP, "ca.key"), os.path.join(TMP, "ca.pem")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=shardstore test CA")
    with open(os.path.join(TMP, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")


def make_cert(name, serial):
    """A key and a certificate signed by the CA, with 'serial'; returns
    (cert path, key path)."""
    key, csr, cert = (os.path.join(TMP, name + ext) for ext in (".key", ".csr", ".pem"))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
    openssl("x509", "-req", "-in", csr, "-CA", os.path.join(TMP, "ca.pem"), "-CAkey", os.path.join(TMP, "ca.key"), "-set_serial", str(serial), "-out", cert, "-days", "2", "-extfile", os.path.join(TMP, "ext.cnf"))
    return cert, key


class TlsServer(harness.Server):
    """A harness server with TLS on, talking https in request()/client()."""

    def __init__(self, cert, key, extra="", tag="tls", is_dual=False):
        # With is_dual (tls_listen), 'port' is the plain one until the test
        # reads the https line and sets tls_port.
        self.is_dual, self.tls_port = is_dual, None
        self.ca = os.path.join(TMP, "ca.pem")
        self.cert_file, self.key_file = os.path.join(TMP, tag + "-live.pem"), os.path.join(TMP, tag + "-live.key")
        shutil.copyfile(cert, self.cert_file)
        shutil.copyfile(key, self.key_file)
        conf = "tls_cert_file = %s\ntls_key_file = %s\n%s" % (self.cert_file, self.key_file, extra)
        # test_sighup_reload makes one reload fail on purpose.
        super().__init__(config=conf, tag=tag, allowed_errors=[r"^tls: certificate and key: ", r"^tls: reload failed"])

    def is_plain(self):
        return self.is_dual and self.tls_port is None

    @property
    def endpoint(self):
        return "%s://127.0.0.1:%d" % ("http" if self.is_plain() else "https", self.port)

    def ssl_context(self):
        return ssl.create_default_context(cafile=self.ca)

    def connect(self, timeout=harness.HTTP_TIMEOUT_S):
        if self.is_plain():
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self.ssl_context())

    def client(self, access_key=None, secret_key=None, **config_kw):
        import boto3
        from botocore.config import Config

        kw = dict(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=10, read_timeout=harness.HTTP_TIMEOUT_S)
        kw.update(config_kw)
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=access_key or self.access_key, aws_secret_access_key=secret_key or self.secret_key, region_name=harness.REGION, verify=self.ca, config=Config(**kw))


def served_serial(srv):
    """The serial of the certificate a new connection is given."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    with srv.ssl_context().wrap_socket(s, server_hostname="127.0.0.1") as t:
        return cert_serial(t.getpeercert(binary_form=True))


def cert_serial(der):
    p = openssl("x509", "-inform", "DER", "-noout", "-serial", input=der)
    return int(p.stdout.decode().strip().split("=", 1)[1], 16)


def s_client(srv, *args):
    return subprocess.run([OPENSSL, "s_client", "-connect", "127.0.0.1:%d" % srv.port, "-CAfile", srv.ca] + list(args), input=b"", capture_output=True, timeout=30)


def test_versions(srv):
    for v in ("-tls1_2", "-tls1_3"):
        p = s_client(srv, v, "-verify_return_error")
        out = p.stdout.decode("utf-8", "replace")
        check(p.returncode == 0 and "Verify return code: 0 (ok)" in out, "openssl s_client %s: rc %d\n%s" % (v, p.returncode, out[-1500:]))
    # TLS 1.1 (and below) refused; SECLEVEL=0 lets the client itself offer it.
    for v in ("-tls1_1", "-tls1"):
        p = s_client(srv, v, "-cipher", "DEFAULT@SECLEVEL=0")
        out = p.stdout.decode("utf-8", "replace")
        check(p.returncode != 0 and "Cipher is (NONE)" in out, "openssl s_client %s was accepted:\n%s" % (v, out[-1500:]))
    # TLS 1.2 without forward secrecy or with CBC: refused.
    for cipher in ("AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA"):
        p = s_client(srv, "-tls1_2", "-cipher", cipher)
        check(p.returncode != 0, "TLS 1.2 cipher %s was accepted" % cipher)


def test_plain_http_refused(srv):
    # Plain HTTP to the TLS port: no HTTP answer, the connection closes.
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    try:
        conn.request("GET", "/_/health")
        r = conn.getresponse()
        raise harness.Failure("plain HTTP on the TLS port got HTTP %d" % r.status)
    except (http.client.HTTPException, ConnectionError, socket.timeout):
        pass
    finally:
        conn.close()
    eq(srv.health(), 200, "health over HTTPS after a plain-HTTP client")


def test_boto3(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="tls-boto3")
    data = harness.random_bytes(3 * MIB + 17, seed=1)
    # Over HTTPS boto3 sends aws-chunked bodies with a checksum trailer.
    seen = []
    s3.meta.events.register("before-send.s3.PutObject", lambda request, **kw: seen.append(dict(request.headers)))
    s3.put_object(Bucket="tls-boto3", Key="obj", Body=data)
    enc = seen[0].get("Content-Encoding", b"")
    enc = enc.decode() if isinstance(enc, bytes) else enc
    check("aws-chunked" in enc and "x-amz-trailer" in {k.lower() for k in seen[0]}, "boto3 did not use aws-chunked with a trailer: %r" % seen[0])
    same_bytes(s3.get_object(Bucket="tls-boto3", Key="obj")["Body"].read(), data, "GET over TLS")
    got = s3.get_object(Bucket="tls-boto3", Key="obj", Range="bytes=1000-70999")["Body"].read()
    same_bytes(got, data[1000:71000], "range GET over TLS")
    # Multipart with the default (trailer) checksums.
    from boto3.s3.transfer import TransferConfig
    import io

    big = harness.random_bytes(11 * MIB, seed=2)
    s3.upload_fileobj(io.BytesIO(big), "tls-boto3", "mp", Config=TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB))
    head = s3.head_object(Bucket="tls-boto3", Key="mp")
    check(head["ETag"].endswith('-3"'), "multipart ETag %r" % head["ETag"])
    same_bytes(s3.get_object(Bucket="tls-boto3", Key="mp")["Body"].read(), big, "multipart GET over TLS")
    # An unverified client is refused by its own check: the CA matters.
    import boto3
    import botocore.exceptions

    bare = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret_key, region_name=harness.REGION)
    try:
        bare.list_buckets()
        raise harness.Failure("a client without the CA trusted the server")
    except botocore.exceptions.SSLError:
        pass


def test_awscli(srv):
    aws = harness.require_tool("aws")
    cfg = os.path.join(TMP, "aws-config")
    with open(cfg, "w") as f:
        f.write("[default]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=srv.access_key, AWS_SECRET_ACCESS_KEY=srv.secret_key, AWS_DEFAULT_REGION=harness.REGION, AWS_CONFIG_FILE=cfg, AWS_SHARED_CREDENTIALS_FILE=cfg, AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="")

    def run(*args):
        return harness.run_cmd([aws] + list(args) + ["--endpoint-url", srv.endpoint, "--ca-bundle", srv.ca], env=env)

    src = os.path.join(TMP, "awscli.bin")
    data = harness.random_bytes(9 * MIB + 3, seed=3)  # multipart (8 MiB threshold)
    with open(src, "wb") as f:
        f.write(data)
    run("s3", "mb", "s3://tls-awscli")
    run("s3", "cp", src, "s3://tls-awscli/obj")
    dst = os.path.join(TMP, "awscli.out")
    run("s3", "cp", "s3://tls-awscli/obj", dst)
    with open(dst, "rb") as f:
        same_bytes(f.read(), data, "aws s3 cp over TLS")


def test_rclone(srv):
    rclone = harness.require_tool("rclone")
    empty = os.path.join(TMP, "rclone.conf")
    open(empty, "w").close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RCLONE_", "AWS_"))}
    env.update(RCLONE_CONFIG=empty, RCLONE_CONFIG_SS_TYPE="s3", RCLONE_CONFIG_SS_PROVIDER="Other", RCLONE_CONFIG_SS_ENV_AUTH="false", RCLONE_CONFIG_SS_ACCESS_KEY_ID=srv.access_key, RCLONE_CONFIG_SS_SECRET_ACCESS_KEY=srv.secret_key, RCLONE_CONFIG_SS_REGION=harness.REGION, RCLONE_CONFIG_SS_ENDPOINT=srv.endpoint, RCLONE_CONFIG_SS_FORCE_PATH_STYLE="true")

    def run(*args):
        return harness.run_cmd([rclone, "--ca-cert", srv.ca, "--retries", "1", "--low-level-retries", "1", "--contimeout", "10s", "--timeout", "60s"] + list(args), env=env)

    src = os.path.join(TMP, "rclone-src")
    os.makedirs(src, exist_ok=True)
    data = harness.random_bytes(2 * MIB + 5, seed=4)
    with open(os.path.join(src, "a.bin"), "wb") as f:
        f.write(data)
    run("mkdir", "ss:tls-rclone")
    run("copy", src, "ss:tls-rclone/dir")
    same_bytes(run("cat", "ss:tls-rclone/dir/a.bin").stdout, data, "rclone cat over TLS")
    run("check", src, "ss:tls-rclone/dir")


def test_s3cmd(srv):
    s3cmd = harness.require_tool("s3cmd")
    cfg = os.path.join(TMP, "s3cfg")
    hp = "127.0.0.1:%d" % srv.port
    with open(cfg, "w") as f:
        f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\nuse_https = True\nsignature_v2 = False\nbucket_location = us-east-1\ncheck_ssl_certificate = True\nprogress_meter = False\n" % (srv.access_key, srv.secret_key, hp, hp))
    env = dict(os.environ)
    env["HOME"] = TMP

    def run(*args):
        return harness.run_cmd([s3cmd, "-c", cfg, "--no-progress", "--ca-certs", srv.ca] + list(args), env=env)

    src = os.path.join(TMP, "s3cmd.bin")
    data = harness.random_bytes(MIB + 9, seed=5)
    with open(src, "wb") as f:
        f.write(data)
    run("mb", "s3://tls-s3cmd")
    run("put", src, "s3://tls-s3cmd/obj")
    dst = os.path.join(TMP, "s3cmd.out")
    run("get", "--force", "s3://tls-s3cmd/obj", dst)
    with open(dst, "rb") as f:
        same_bytes(f.read(), data, "s3cmd get over TLS")


def test_shard(srv):
    import shard_util as su

    data = harness.random_bytes(6 * MIB + 1, seed=6)
    env = su.base_env(srv, AWS_CA_BUNDLE=srv.ca)
    su.run(srv, "mb", "s3://tls-shard", env=env)
    su.run(srv, "cp", "--part-size", str(5 * MIB), "-", "s3://tls-shard/obj", input=data, env=env)
    p = su.run(srv, "cat", "s3://tls-shard/obj", env=env)
    same_bytes(p.stdout, data, "shard cat over TLS")
    p = su.run(srv, "cat", "--range", "100-65635", "s3://tls-shard/obj", env=env)
    same_bytes(p.stdout, data[100:65636], "shard cat --range over TLS")
    # The same through a profile's ca_bundle, and without any: refused.
    cfg = os.path.join(TMP, "shard-aws-config")
    with open(cfg, "w") as f:
        f.write("[default]\nca_bundle = %s\n" % srv.ca)
    su.run(srv, "ls", "s3://tls-shard", env=su.base_env(srv, AWS_CONFIG_FILE=cfg))
    p = su.run(srv, "ls", "s3://tls-shard", env=su.base_env(srv), rc=None)
    check(p.returncode != 0, "shard trusted the server without the CA")


def test_sighup_reload(srv):
    # A keep-alive connection made with the first certificate...
    conn = srv.connect()
    conn.request("GET", "/_/health")
    r = conn.getresponse()
    r.read()
    eq(r.status, 200, "first request")
    old_serial = cert_serial(conn.sock.getpeercert(binary_form=True))
    eq(old_serial, 1001, "serial before the reload")
    # ...then a reload with a broken file keeps the current pair...
    with open(srv.cert_file, "w") as f:
        f.write("not a certificate\n")
    srv.proc.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    eq(served_serial(srv), 1001, "serial after a failed reload")
    # ...and one with a new certificate and key serves it to new connections.
    cert, key = make_cert("second", 2002)
    shutil.copyfile(cert, srv.cert_file)
    shutil.copyfile(key, srv.key_file)
    srv.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while served_serial(srv) != 2002:
        check(time.monotonic() < deadline, "the new certificate is not served after SIGHUP")
        time.sleep(0.1)
    # The old connection goes on, with its certificate.
    for _ in range(3):
        conn.request("GET", "/_/health")
        r = conn.getresponse()
        r.read()
        eq(r.status, 200, "keep-alive request after the reload")
    eq(cert_serial(conn.sock.getpeercert(binary_form=True)), 1001, "the open connection's certificate")
    conn.close()
    s3 = srv.client()
    s3.create_bucket(Bucket="tls-after-reload")
    s3.put_object(Bucket="tls-after-reload", Key="k", Body=b"x" * 1000)
    eq(len(s3.get_object(Bucket="tls-after-reload", Key="k")["Body"].read()), 1000, "GET after the reload")


def test_small_ranges(srv):
    """A body of at most 256 KiB (no sendfile under TLS) is read whole into
    one buffer before the answer; a longer one streams through the reader.
    Both send the right bytes; the metrics tell which path each took."""
    s3 = srv.client()
    s3.create_bucket(Bucket="tls-ranges")
    data = harness.random_bytes(MIB + 5, seed=3)
    s3.put_object(Bucket="tls-ranges", Key="obj", Body=data)
    for first, last, is_buffered in [(0, 65535, True), (4097, 4097 + 65535, True),
                                     (len(data) - 10, len(data) - 1, True),
                                     (1000, 1000 + 256 * 1024 - 1, True),
                                     (1000, 1000 + 256 * 1024, False), (0, len(data) - 1, False)]:
        b0, s0 = srv.metric("shardstore_get_buffered_total"), srv.metric("shardstore_get_streamed_total")
        r = srv.request("GET", "/tls-ranges/obj", headers={"Range": "bytes=%d-%d" % (first, last)})
        what = "bytes %d-%d over TLS" % (first, last)
        eq(r.status, 206, what)
        same_bytes(r.body, data[first:last + 1], what)
        eq(srv.metric("shardstore_get_streamed_total") - s0, 1, what + ": not sent from a buffer")
        eq(srv.metric("shardstore_get_buffered_total") - b0, 1 if is_buffered else 0, what + ": read whole")


class RecordRelay:
    """A TCP relay between one client and the server that notes the length
    of every TLS record the server sends (record headers are not encrypted)
    and, each time the client sends, how many records had come by then."""

    def __init__(self, server_port):
        self.server_port = server_port
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.port = self.lsock.getsockname()[1]
        self.records, self.marks = [], []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        c, _ = self.lsock.accept()
        s = socket.create_connection(("127.0.0.1", self.server_port), timeout=30)
        threading.Thread(target=self.pump_up, args=(c, s), daemon=True).start()
        threading.Thread(target=self.pump_down, args=(s, c), daemon=True).start()

    def pump_up(self, c, s):
        while True:
            try:
                data = c.recv(65536)
            except OSError:
                data = b""
            if not data:
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            with self.lock:
                self.marks.append(len(self.records))
            s.sendall(data)

    def pump_down(self, s, c):
        buf, need = b"", 5  # 'need': bytes up to the end of the current header or record
        while True:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                c.close()
                return
            buf += data
            while len(buf) >= need:
                if need == 5:
                    need = 5 + int.from_bytes(buf[3:5], "big")
                    with self.lock:
                        self.records.append(need - 5)
                else:
                    buf, need = buf[need:], 5
            c.sendall(data)


def test_corked_answers(srv):
    """A body read whole into memory (at most 256 KiB) is sent corked: its
    header travels in the first TLS record with the start of the body (MHD
    alone sends it in a record of its own, then one 16 KiB record per
    event-loop turn), and every answer arrives whole: on a keep-alive
    connection, between streamed answers, and with Connection: close."""
    s3 = srv.client()
    s3.create_bucket(Bucket="tls-cork")
    data = harness.random_bytes(MIB + 7, seed=5)
    s3.put_object(Bucket="tls-cork", Key="obj", Body=data)
    relay = RecordRelay(srv.port)
    conn = http.client.HTTPSConnection("127.0.0.1", relay.port, timeout=harness.HTTP_TIMEOUT_S, context=srv.ssl_context())
    host = "127.0.0.1:%d" % relay.port
    firsts = []
    # The first answer also follows the handshake; the fourth (300 KiB) streams.
    for first, last, close in [(0, 100, False), (0, 65535, False), (4097, 4097 + 200000, False),
                               (5, 5 + 300 * 1024, False), (10, 10 + 65535, False),
                               (len(data) - 70000, len(data) - 1, False), (1000, 1000 + 65535, True)]:
        headers = {"Range": "bytes=%d-%d" % (first, last)}
        if close:
            headers["Connection"] = "close"
        with relay.lock:
            sent_at = len(relay.marks)
        conn.request("GET", "/tls-cork/obj", headers=srv.sign("GET", "/tls-cork/obj", "", headers, host=host))
        r = conn.getresponse()
        body = r.read()
        what = "bytes %d-%d over TLS%s" % (first, last, " with Connection: close" if close else "")
        eq(r.status, 206, what)
        same_bytes(body, data[first:last + 1], what)
        with relay.lock:
            at = relay.marks[sent_at]
            firsts.append((what, relay.records[at] if at < len(relay.records) else None))
    conn.close()
    relay.lsock.close()
    # Each answer of 64 KiB or more that was read whole: its first record
    # is a full one (16 KiB of plaintext + TLS 1.3's 17 bytes), not the header.
    for what, n in [firsts[i] for i in (1, 2, 4, 5, 6)]:
        check(n is not None and n >= 16 * 1024, "%s: the first TLS record of the answer has %r bytes (the header alone?)" % (what, n))


def test_oversize_chunked(_):
    # max_object_size = 1M: an endless chunked PUT is answered EntityTooLarge
    # (a TLS record, not plaintext in the stream), then closed.
    with TlsServer(os.path.join(TMP, "first.pem"), os.path.join(TMP, "first.key"), extra="max_object_size = 1M\n", tag="tls-size") as srv:
        oversize_chunked(srv)


def oversize_chunked(srv, port=None, is_tls=True, bucket="tls-size"):
    """An endless chunked PUT to 'port' (srv's by default): answered
    EntityTooLarge, then closed; the server lives on."""
    port = port or srv.port
    srv.client().create_bucket(Bucket=bucket)
    path = "/%s/te-big" % bucket
    h = srv.sign("PUT", path, "", {"Transfer-Encoding": "chunked"}, b"", payload_hash="UNSIGNED-PAYLOAD", host="127.0.0.1:%d" % port)
    head = "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (path, port) + "".join("%s: %s\r\n" % kv for kv in h.items() if kv[0].lower() != "host") + "\r\n"
    piece = b"z" * 65536
    chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    t = srv.ssl_context().wrap_socket(s, server_hostname="127.0.0.1") if is_tls else s
    out, closed = b"", False
    try:
        t.sendall(head.encode())
        try:
            for _ in range(200):  # 12.5 MiB if all were read
                t.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            pass
        while True:
            try:
                got = t.recv(65536)
            except (ConnectionResetError, ssl.SSLError) as e:
                closed = True
                break
            except socket.timeout:
                break
            if not got:
                closed = True
                break
            out += got
    finally:
        t.close()
    check(out.startswith(b"HTTP/1.1 400"), "chunked PUT past max_object_size over TLS: %r" % out[:300])
    body = out.split(b"\r\n\r\n", 1)[1]
    eq(harness.parse_s3_error(body).get("Code"), "EntityTooLarge", "error code")
    check(closed, "the connection stays open after EntityTooLarge")
    eq(srv.request("HEAD", path).status, 404, "HEAD of the refused PUT")
    eq(srv.health(), 200, "health after the refused PUT")


def test_handshake_deadline(_):
    # A client that connects and never completes the handshake is dropped
    # by header_timeout (the guard's clock starts when MHD adds the socket),
    # while a finished handshake followed by a request is served.
    cert, key = os.path.join(TMP, "first.pem"), os.path.join(TMP, "first.key")
    with TlsServer(cert, key, extra="header_timeout = 1\n", tag="tls-slow") as srv:
        silent = socket.create_connection(("127.0.0.1", srv.port), timeout=8)
        half = socket.create_connection(("127.0.0.1", srv.port), timeout=8)
        half.sendall(b"\x16\x03\x01\x00\xff")  # the start of a ClientHello, then nothing
        t0 = time.monotonic()
        for s in (silent, half):
            try:
                got = s.recv(100)
                eq(got, b"", "data on a connection that never finished its handshake")
            except ConnectionResetError:
                pass
            except socket.timeout:
                raise harness.Failure("a stalled handshake was not dropped within 8 s")
            s.close()
        check(time.monotonic() - t0 < 8, "stalled handshakes dropped late")
        eq(srv.health(), 200, "health after the stalled handshakes")


def test_tls_listen(_):
    # tls_listen: plain HTTP stays on 'listen', HTTPS on the second address;
    # one data set behind both, and SIGTERM stops both (checked at stop).
    cert, key = os.path.join(TMP, "first.pem"), os.path.join(TMP, "first.key")
    with TlsServer(cert, key, extra="tls_listen = 127.0.0.1:0\nmax_object_size = 1M\n", tag="tls-dual", is_dual=True) as srv:
        line = srv._stdout_lines.get(timeout=10)
        m = re.match(r"^shardstore: listening on https://127\.0\.0\.1:(\d+)\s*$", line or "")
        check(m, "second stdout line is %r, expected the https one" % line)
        plain_port, tls_port = srv.port, int(m.group(1))
        # Event-loop threads: one per core for HTTPS (its answers cost the
        # cipher), one more than the cores for plain HTTP.
        with open(srv.stderr_path, "rb") as f:
            log = f.read().decode("utf-8", "replace")
        cores = os.cpu_count()
        for scheme, port, want in (("http", plain_port, min(cores + 1, 65)), ("https", tls_port, min(cores, 64))):
            m = re.search(r"listening on %s 127\.0\.0\.1:%d \((\d+) event-loop threads" % (scheme, port), log)
            check(m, "no '%s' listening line in the log:\n%s" % (scheme, log[-1500:]))
            eq(int(m.group(1)), want, "%s event-loop threads on %d cores" % (scheme, cores))
        plain = srv.client()
        srv.port = srv.tls_port = tls_port  # from here srv speaks https to the TLS port
        s3 = srv.client()
        s3.create_bucket(Bucket="dual")
        s3.put_object(Bucket="dual", Key="k", Body=b"over tls")
        eq(plain.get_object(Bucket="dual", Key="k")["Body"].read(), b"over tls", "plain GET of an object PUT over TLS")
        # Each port speaks only its protocol.
        conn = http.client.HTTPConnection("127.0.0.1", tls_port, timeout=10)
        try:
            conn.request("GET", "/_/health")
            raise harness.Failure("plain HTTP answered on the TLS port: %d" % conn.getresponse().status)
        except (http.client.HTTPException, ConnectionError, socket.timeout):
            pass
        finally:
            conn.close()
        try:
            socket_tls = srv.ssl_context().wrap_socket(socket.create_connection(("127.0.0.1", plain_port), timeout=10), server_hostname="127.0.0.1")
            socket_tls.close()
            raise harness.Failure("a TLS handshake succeeded on the plain port")
        except (ssl.SSLError, ConnectionError, socket.timeout):
            pass
        # The mid-body answer goes as a TLS record on the TLS port, as
        # plain bytes on the plain one.
        oversize_chunked(srv, tls_port, True, "dual-size-tls")
        oversize_chunked(srv, plain_port, False, "dual-size-plain")


TESTS = [test_versions, test_plain_http_refused, test_boto3, test_small_ranges, test_corked_answers, test_awscli, test_rclone, test_s3cmd, test_shard, test_oversize_chunked, test_handshake_deadline, test_tls_listen, test_sighup_reload]


def main():
    global TMP, OPENSSL
    status = 0
    try:
        OPENSSL = harness.require_tool("openssl")
    except harness.Skip as e:
        print("SKIP: %s" % e)
        return harness.SKIP
    TMP = tempfile.mkdtemp(prefix="shard-tls-")
    try:
        make_ca()
        cert, key = make_cert("first", 1001)
        srv = TlsServer(cert, key, extra="")
        srv.start()
        try:
            tests = harness.select_tests(TESTS, harness.selected_cases())
            failed, passed, skipped = harness.run_tests(tests, srv)
        finally:
            problems = srv.stop()
            srv.cleanup()
        if problems:
            failed.append("teardown")
            print("FAIL teardown:\n" + "\n".join(problems), flush=True)
        print("%d passed, %d failed, %d skipped" % (len(passed), len(failed), len(skipped)))
        if failed:
            print("failed: " + ", ".join(failed))
            status = 1
        elif skipped and not passed:
            status = harness.SKIP
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
