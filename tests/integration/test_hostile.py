"""test_hostile.py: malformed and malicious requests against shardstore.

Raw sockets and http.client send what no SDK would: broken Authorization
headers, bad ranges, bad XML, broken aws-chunked framing, huge headers,
stalled bodies, smuggling attempts, traversal-looking keys and overlong keys.
Each case expects an S3 XML error (or a closed connection where HTTP allows
it), never a 5xx, and the server must stay healthy; the harness then stops it
with SIGTERM and fails on a non-zero exit or a sanitizer report.
"""

import base64
import datetime
import hashlib
import hmac
import io
import http.client
import os
import socket
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, expect_s3_error, same_bytes  # noqa: E402

BUCKET = "hostile"
# How long the server may keep a connection whose body stalled (its default
# connection timeout is 60 s; the stalled socket is opened by the first test
# and examined by the last one, so most of this wait overlaps other tests).
STALL_DROP_S = 90.0


def alive(srv, what):
    status = srv.health()
    if status != 200:
        raise harness.Failure("after %s: /_/health is %r (server %s)" % (what, status, "running" if srv.running() else "dead"))


def absent(srv, key, what):
    r = srv.request("HEAD", "/%s/%s" % (BUCKET, harness.quote_key(key)))
    check(r.status == 404, "after %s: HEAD %r is HTTP %d, expected 404 (object must not exist)" % (what, key, r.status))


def raw(srv, data, timeout=5.0, read_for=None):
    """Sends 'data' on a new connection, half-closes nothing, and reads until
    the server closes or nothing arrives for 'timeout' seconds (or until
    'read_for' seconds passed). Returns (bytes received, closed_by_server)."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    out = b""
    closed = False
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        deadline = time.monotonic() + (read_for or 30.0)
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            out += chunk
    finally:
        s.close()
    return out, closed


class _KeepOpen(io.BytesIO):
    def close(self):
        pass  # HTTPResponse closes its file after each body


class _FakeSock:
    def __init__(self, f):
        self.f = f

    def makefile(self, *a, **k):
        return self.f


def parse_responses(data, method="GET"):
    """Splits raw bytes into a list of (status, headers, body)."""
    f = _KeepOpen(data)
    out = []
    while f.tell() < len(data):
        r = http.client.HTTPResponse(_FakeSock(f), method=method)
        try:
            r.begin()
            body = r.read()
        except (http.client.HTTPException, ValueError) as e:
            out.append(("unparseable", None, repr(e).encode() + b": " + data[:300]))
            break
        out.append((r.status, r.headers, body))
    return out


def request_bytes(method, target, headers, body=b""):
    lines = ["%s %s HTTP/1.1" % (method, target)]
    for k, v in headers.items():
        lines.append("%s: %s" % (k, v))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def signed_bytes(srv, method, path, body=b"", headers=None, query="", **kw):
    h = srv.sign(method, path, query, headers or {}, body, **kw)
    if body or method in ("PUT", "POST"):
        h.setdefault("Content-Length", str(len(body)))
    return request_bytes(method, path + ("?" + query if query else ""), h, body)


def expect_4xx_xml(srv, r, what, codes=None):
    check(400 <= r.status < 500, "%s: expected a 4xx S3 error, got HTTP %d %r" % (what, r.status, r.body[:300]))
    err = harness.parse_s3_error(r.body)
    if codes:
        check(err.get("Code") in codes, "%s: <Code> %r, expected one of %s" % (what, err.get("Code"), codes))
    return err


# --------------------------------------------------------------------------

STALLED = {}


def test_setup(srv):
    srv.client().create_bucket(Bucket=BUCKET)
    srv.client().put_object(Bucket=BUCKET, Key="obj", Body=harness.random_bytes(1000, seed=1))
    # Open a connection that announces 1 MiB and sends 100 KiB; the last test
    # checks the server dropped it (STALL_DROP_S).
    path = "/%s/stalled-forever" % BUCKET
    h = srv.sign("PUT", path, "", {}, b"", payload_hash="UNSIGNED-PAYLOAD")
    h["Content-Length"] = str(1 << 20)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(request_bytes("PUT", path, h) + b"x" * (100 << 10))
    STALLED["sock"] = s
    STALLED["t0"] = time.monotonic()


def test_bad_authorization(srv):
    path = "/%s/obj" % BUCKET
    date = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    day = date[:8]
    sha_empty = hashlib.sha256(b"").hexdigest()
    base = {"x-amz-date": date, "x-amz-content-sha256": sha_empty}
    cases = [
        "garbage",
        "",
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 ",
        "AWS testkey:c2lnbmF0dXJlIGhlcmU=",  # SigV2
        "AWS4-HMAC-SHA256 Credential=testkey/%s/us-east-1/s3/aws4_request" % day,
        "AWS4-HMAC-SHA256 Credential=testkey/%s/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date" % day,
        "AWS4-HMAC-SHA256 Credential=testkey/%s/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=zz" % day,
        "AWS4-HMAC-SHA256 Credential=testkey/%s/us-east-1/s3/aws4_request, SignedHeaders=, Signature=%s" % (day, "0" * 64),
        "AWS4-HMAC-SHA256 Credential=testkey, SignedHeaders=host, Signature=%s" % ("0" * 64),
        "AWS4-HMAC-SHA256 Credential=/////, SignedHeaders=host, Signature=%s" % ("0" * 64),
        "AWS4-HMAC-SHA256 Credential=testkey/%s/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=%s, Signature=%s" % (day, "0" * 64, "1" * 64),
        "AWS4-HMAC-SHA256 Credential=testkey/%s/us-east-1/s3/aws4_request,,,, SignedHeaders=host;;;x-amz-date, Signature=%s" % (day, "0" * 64),
        "AWS4-HMAC-SHA256 Credential=%s/%s/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=%s" % ("k" * 5000, day, "0" * 64),
        "AWS4-HMAC-SHA256 Credential=testkey/%s/us-east-1/s3/aws4_request, SignedHeaders=%s, Signature=%s" % (day, ";".join(["h%d" % i for i in range(2000)]), "0" * 64),
        "AWS4-HMAC-SHA512 Credential=testkey/%s/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=%s" % (day, "0" * 64),
        "Bearer abc.def.ghi",
    ]
    for auth in cases:
        h = dict(base)
        h["Authorization"] = auth
        r = srv.request("GET", path, headers=h, sign=False)
        expect_4xx_xml(srv, r, "GET with Authorization %r" % auth[:80])
        check(r.status in (400, 403), "Authorization %r: HTTP %d, expected 400 or 403" % (auth[:80], r.status))
        check(r.body != harness.random_bytes(1000, seed=1), "Authorization %r served the object" % auth[:80])
    # Non-ASCII bytes in the header.
    data = request_bytes("GET", path, {"Host": "127.0.0.1:%d" % srv.port, "x-amz-date": date, "Connection": "close"})[:-2] + b"Authorization: AWS4-HMAC-SHA256 Credential=\xff\xfe\x00/x\r\n\r\n"
    out, _ = raw(srv, data)
    resp = parse_responses(out)
    check(resp and isinstance(resp[0][0], int) and 400 <= resp[0][0] < 500, "binary Authorization header: %r" % out[:300])
    # A correct signature for another region.
    r = srv.request("GET", path, region="eu-west-1")
    expect_4xx_xml(srv, r, "request signed for eu-west-1", codes=("AuthorizationHeaderMalformed", "SignatureDoesNotMatch"))
    # A correct signature for another service.
    h = srv.sign("GET", path)
    h["Authorization"] = h["Authorization"].replace("/s3/aws4_request", "/iam/aws4_request")
    r = srv.request("GET", path, headers=h, sign=False)
    expect_4xx_xml(srv, r, "request scoped to iam")
    # A correct signature, then a signed header changed.
    h = srv.sign("GET", path, headers={"x-amz-meta-test": "a"})
    h["x-amz-meta-test"] = "b"
    r = srv.request("GET", path, headers=h, sign=False)
    expect_s3_error(r.status, r.body, 403, "SignatureDoesNotMatch", "signed header altered")
    # Host is always signed: dropping it from SignedHeaders is refused.
    h = srv.sign("GET", path)
    h["Authorization"] = h["Authorization"].replace("SignedHeaders=host;", "SignedHeaders=")
    r = srv.request("GET", path, headers=h, sign=False)
    expect_4xx_xml(srv, r, "SignedHeaders without host")
    # Clock skew: signed 20 minutes in the past and in the future.
    for minutes in (-20, 20):
        when = datetime.datetime.utcnow() + datetime.timedelta(minutes=minutes)
        h = srv.sign_at(when, "GET", path)
        r = srv.request("GET", path, headers=h, sign=False)
        expect_s3_error(r.status, r.body, 403, "RequestTimeTooSkewed", "request signed %+d minutes off" % minutes)
    # Malformed X-Amz-Date.
    h = srv.sign("GET", path)
    h["X-Amz-Date"] = "yesterday"
    r = srv.request("GET", path, headers=h, sign=False)
    expect_4xx_xml(srv, r, "X-Amz-Date 'yesterday'")
    # Presigned queries with broken parameters.
    qs = [
        "X-Amz-Algorithm=AWS4-HMAC-SHA256",
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=testkey%%2F%s%%2Fus-east-1%%2Fs3%%2Faws4_request&X-Amz-Date=%s&X-Amz-Expires=999999999&X-Amz-SignedHeaders=host&X-Amz-Signature=%s" % (day, date, "0" * 64),
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=testkey%%2F%s%%2Fus-east-1%%2Fs3%%2Faws4_request&X-Amz-Date=%s&X-Amz-Expires=-5&X-Amz-SignedHeaders=host&X-Amz-Signature=%s" % (day, date, "0" * 64),
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=testkey%%2F%s%%2Fus-east-1%%2Fs3%%2Faws4_request&X-Amz-Date=%s&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=%s&X-Amz-Signature=%s" % (day, date, "0" * 64, "1" * 64),
        "AWSAccessKeyId=testkey&Expires=99999999999&Signature=abc%3D",
    ]
    for q in qs:
        r = srv.request("GET", path, query=q, sign=False)
        expect_4xx_xml(srv, r, "presigned query %r" % q[:80])
    alive(srv, "bad Authorization headers")


def test_unsigned_amz_headers(srv):
    """An x-amz-* header outside SignedHeaders is refused (AccessDenied), as
    S3 does: otherwise a presigned PUT URL, which signs only host, could be
    turned into a CopyObject of anything its signer can read."""
    import urllib.parse

    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="private-src", Body=b"private bytes")
    # SigV2 URLs (boto3's default presigner) sign every x-amz-* header the
    # request carries, so an added one breaks the signature.
    url = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "via-presign"}, ExpiresIn=300)
    u = urllib.parse.urlsplit(url)
    check("AWSAccessKeyId=" in u.query, "boto3's default presigner made a SigV2 URL: %s" % url)
    r = srv.request("PUT", u.path, u.query, headers={"x-amz-copy-source": "/%s/private-src" % BUCKET}, body=b"", sign=False)
    check(r.status == 403, "SigV2 presigned PUT with an added x-amz-copy-source: HTTP %d %r" % (r.status, r.body[:300]))
    absent(srv, "via-presign", "SigV2 presigned PUT with an added x-amz-copy-source")
    url = srv.client(signature_version="s3v4").generate_presigned_url(
        "put_object", Params={"Bucket": BUCKET, "Key": "via-presign"}, ExpiresIn=300)
    u = urllib.parse.urlsplit(url)
    check("X-Amz-SignedHeaders=host" in u.query, "a SigV4 URL signing host only: %s" % url)
    for extra in ({"x-amz-copy-source": "/%s/private-src" % BUCKET},
                  {"X-Amz-Copy-Source": "/%s/private-src" % BUCKET, "x-amz-metadata-directive": "REPLACE"},
                  {"x-amz-acl": "public-read"}):
        r = srv.request("PUT", u.path, u.query, headers=extra, body=b"", sign=False)
        expect_s3_error(r.status, r.body, 403, "AccessDenied", "presigned PUT with unsigned %s" % list(extra))
        check(b"not signed" in r.body, "the message names the cause: %r" % r.body[:300])
        absent(srv, "via-presign", "presigned PUT with unsigned %s" % list(extra))
    # The same URL as meant: a plain PUT of the body works.
    r = srv.request("PUT", u.path, u.query, body=b"meant", sign=False)
    eq(r.status, 200, "presigned PUT: %r" % r.body[:300])
    same_bytes(s3.get_object(Bucket=BUCKET, Key="via-presign")["Body"].read(), b"meant", "presigned PUT body")
    # Header auth: an x-amz-meta-* header added after signing.
    path = "/%s/late-meta" % BUCKET
    h = srv.sign("PUT", path, body=b"x")
    h["x-amz-meta-added"] = "later"
    r = srv.request("PUT", path, headers=h, body=b"x", sign=False)
    expect_s3_error(r.status, r.body, 403, "AccessDenied", "PUT with an unsigned x-amz-meta header")
    absent(srv, "late-meta", "PUT with an unsigned x-amz-meta header")
    alive(srv, "unsigned x-amz-* headers")


def test_bad_range(srv):
    path = "/%s/obj" % BUCKET
    full = harness.random_bytes(1000, seed=1)
    ignored = ["bytes=abc", "bytes=5-2", "items=0-1", "bytes=", "bytes=-", "bytes=--1", "bytes 0-1", "bytes=0-1-2", "bytes=1x-2", "bytes=0x10-0x20"]
    for rng in ignored:
        r = srv.request("GET", path, headers={"Range": rng})
        check(r.status == 200, "Range %r: HTTP %d, expected 200 (an invalid Range is ignored) body %r" % (rng, r.status, r.body[:200]))
        same_bytes(r.body, full, "body for ignored Range %r" % rng)
    odd = ["bytes=0-1,5-6", "bytes=99999999999999999999999-", "bytes=-99999999999999999999999", "bytes=0-99999999999999999999999", "bytes=18446744073709551615-", "bytes=18446744073709551616-18446744073709551617", "bytes=-0", "bytes=" + "0-1," * 2000 + "0-1"]
    for rng in odd:
        r = srv.request("GET", path, headers={"Range": rng})
        check(r.status in (200, 206, 416), "Range %r: HTTP %d %r" % (rng[:60], r.status, r.body[:200]))
        if r.status == 200:
            same_bytes(r.body, full, "body for Range %r" % rng[:60])
        elif r.status == 206:
            cr = r.header("Content-Range", "")
            check(cr.startswith("bytes ") and cr.endswith("/1000"), "Range %r: Content-Range %r" % (rng[:60], cr))
            lo, hi = (int(x) for x in cr[6:-5].split("-"))
            same_bytes(r.body, full[lo:hi + 1], "206 body for Range %r" % rng[:60])
        else:
            expect_s3_error(r.status, r.body, 416, "InvalidRange", "Range %r" % rng[:60])
    r = srv.request("GET", path, headers={"Range": "bytes=-0"})
    check(r.status in (200, 416), "Range bytes=-0: HTTP %d (a zero-length suffix is unsatisfiable)" % r.status)
    alive(srv, "bad ranges")


def test_malformed_xml(srv):
    import base64

    path = "/%s" % BUCKET
    good_del = b'<Delete><Object><Key>nothing</Key></Object></Delete>'
    bodies = [
        b"",
        b"not xml at all",
        b"<Delete><Object><Key>unclosed</Key></Object>",
        b"<Delete><Object><Key>a</Key></Object></Wrong>",
        b"<?xml version='1.0'?><!DOCTYPE d [<!ENTITY a 'aaaaaaaaaa'><!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'><!ENTITY c '&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;'><!ENTITY d '&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;'><!ENTITY e '&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;'><!ENTITY f '&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;'><!ENTITY g '&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;'><!ENTITY h '&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;'>]><Delete><Object><Key>&h;</Key></Object></Delete>",
        b"<?xml version='1.0'?><!DOCTYPE d [<!ENTITY x SYSTEM 'file:///etc/passwd'>]><Delete><Object><Key>&x;</Key></Object></Delete>",
        b"<Delete>" + b"<Object>" * 10000 + b"</Delete>",
        b"<Delete><Object><Key>" + b"k" * 2000 + b"</Key></Object></Delete>",
        b"<Delete>" + b"".join(b"<Object><Key>k%d</Key></Object>" % i for i in range(1001)) + b"</Delete>",
        b"\xff\xfe<\x00D\x00",
        b"<Delete><Object></Object></Delete>",
        b"<Delete><Quiet>maybe</Quiet><Object><Key>a</Key></Object></Delete>",
    ]
    for body in bodies:
        h = {"Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode(), "Content-Type": "application/xml"}
        r = srv.request("POST", path, query="delete=", headers=h, body=body)
        if body.startswith(b"<Delete><Object><Key>kkkk") and r.status == 200:
            # An overlong key may instead be reported per key.
            errs = [e for e in harness.ET.fromstring(r.body).iter() if e.tag.split("}")[-1] == "Error"]
            check(len(errs) == 1, "DeleteObjects with a 2000-byte key: 200 without a per-key <Error>: %r" % r.body[:300])
            continue
        expect_4xx_xml(srv, r, "DeleteObjects with body %r" % body[:60], codes=("MalformedXML", "KeyTooLongError", "InvalidArgument", "InvalidRequest"))
        if body.startswith((b"not xml", b"<Delete><Object><Key>unclosed", b"<Delete><Object><Key>a</Key></Object></Wrong>")):
            eq(harness.parse_s3_error(r.body).get("Code"), "MalformedXML", "code for %r" % body[:40])
    h = {"Content-MD5": base64.b64encode(hashlib.md5(good_del).digest()).decode()}
    r = srv.request("POST", path, query="delete=", headers=h, body=good_del)
    eq(r.status, 200, "well-formed DeleteObjects after the bad ones: %r" % r.body[:300])
    # CreateBucket with a broken configuration body.
    r = srv.request("PUT", "/hostile-xml-bucket", body=b"<CreateBucketConfiguration><LocationConstraint>")
    expect_s3_error(r.status, r.body, 400, "MalformedXML", "CreateBucket with broken XML")
    r = srv.request("HEAD", "/hostile-xml-bucket")
    eq(r.status, 404, "bucket created despite a broken CreateBucketConfiguration")
    alive(srv, "malformed XML")


def _signing_key(secret, day, region="us-east-1", service="s3"):
    k = hmac.new(("AWS4" + secret).encode(), day.encode(), hashlib.sha256).digest()
    k = hmac.new(k, region.encode(), hashlib.sha256).digest()
    k = hmac.new(k, service.encode(), hashlib.sha256).digest()
    return hmac.new(k, b"aws4_request", hashlib.sha256).digest()


def signed_chunked(srv, path, data, chunk_len, tamper=None):
    """Builds a STREAMING-AWS4-HMAC-SHA256-PAYLOAD request; 'tamper(i,
    chunk)' may return altered bytes for chunk i after signing."""
    chunks = [data[i:i + chunk_len] for i in range(0, len(data), chunk_len)] + [b""]
    enc_len = sum(len("%x;chunk-signature=" % len(c)) + 64 + 2 + len(c) + 2 for c in chunks)
    headers = {
        "Content-Encoding": "aws-chunked",
        "x-amz-decoded-content-length": str(len(data)),
        "Content-Length": str(enc_len),
    }
    h = srv.sign("PUT", path, "", headers, b"", payload_hash="STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
    amz_date = h["X-Amz-Date"]
    prev = h["Authorization"].split("Signature=")[1].strip()
    key = _signing_key(srv.secret_key, amz_date[:8])
    scope = "%s/us-east-1/s3/aws4_request" % amz_date[:8]
    body = b""
    for i, c in enumerate(chunks):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev, hashlib.sha256(b"").hexdigest(), hashlib.sha256(c).hexdigest()])
        sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        prev = sig
        if tamper:
            c = tamper(i, c)
        body += b"%x;chunk-signature=%s\r\n" % (len(c), sig.encode()) + c + b"\r\n"
    return h, body


def test_aws_chunked(srv):
    s3 = srv.client()
    data = harness.random_bytes(200000, seed=2)
    # Well-formed signed chunks are accepted (sanity for the cases below).
    path = "/%s/chunked-ok" % BUCKET
    h, body = signed_chunked(srv, path, data, 65536)
    r = srv.request("PUT", path, headers=h, body=body, sign=False)
    eq(r.status, 200, "well-formed signed aws-chunked PUT: %r" % r.body[:300])
    same_bytes(s3.get_object(Bucket=BUCKET, Key="chunked-ok")["Body"].read(), data, "aws-chunked object")
    # A flipped byte in chunk 1 breaks its chunk signature.
    path = "/%s/chunked-badsig" % BUCKET
    h, body = signed_chunked(srv, path, data, 65536, tamper=lambda i, c: (c[:5] + bytes([c[5] ^ 1]) + c[6:]) if i == 1 else c)
    r = srv.request("PUT", path, headers=h, body=body, sign=False)
    expect_s3_error(r.status, r.body, 403, "SignatureDoesNotMatch", "aws-chunked PUT with a corrupted chunk")
    absent(srv, "chunked-badsig", "a corrupted signed chunk")
    # Unsigned chunks with a trailing checksum: good, then broken framings.
    crc = harness.checksum_b64("CRC32", data)

    def unsigned(path, body, decoded_len=len(data), trailer="x-amz-checksum-crc32"):
        h = {
            "Content-Encoding": "aws-chunked",
            "x-amz-decoded-content-length": str(decoded_len),
            "Content-Length": str(len(body)),
        }
        if trailer:
            h["x-amz-trailer"] = trailer
        h = srv.sign("PUT", path, "", h, b"", payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        return srv.request("PUT", path, headers=h, body=body, sign=False)

    good = b"%x\r\n" % len(data) + data + b"\r\n0\r\nx-amz-checksum-crc32:" + crc.encode() + b"\r\n\r\n"
    r = unsigned("/%s/unsigned-ok" % BUCKET, good)
    eq(r.status, 200, "well-formed unsigned aws-chunked PUT with trailer: %r" % r.body[:300])
    same_bytes(s3.get_object(Bucket=BUCKET, Key="unsigned-ok")["Body"].read(), data, "unsigned aws-chunked object")
    bad = {
        "bad-hex": b"zz\r\n" + data + b"\r\n0\r\n\r\n",
        "size-too-big": b"%x\r\n" % (len(data) + 10) + data + b"\r\n0\r\n\r\n",
        "size-too-small": b"%x\r\n" % (len(data) - 10) + data + b"\r\n0\r\n\r\n",
        "no-crlf-after-data": b"%x\r\n" % len(data) + data + b"0\r\n\r\n",
        "no-final-chunk": b"%x\r\n" % len(data) + data + b"\r\n",
        "huge-size": b"ffffffffffffffffffff\r\n" + data + b"\r\n0\r\n\r\n",
        "negative-size": b"-10\r\n" + data + b"\r\n0\r\n\r\n",
        "bad-trailer-crc": b"%x\r\n" % len(data) + data + b"\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n",
        "garbage-trailer": b"%x\r\n" % len(data) + data + b"\r\n0\r\n\x00\x01\x02\r\n\r\n",
        "extra-after-end": b"%x\r\n" % len(data) + data + b"\r\n0\r\nx-amz-checksum-crc32:" + crc.encode() + b"\r\n\r\nEXTRA",
    }
    for name, body in bad.items():
        r = unsigned("/%s/bad-%s" % (BUCKET, name), body)
        check(400 <= r.status < 500, "aws-chunked %s: HTTP %d, expected 4xx; body %r" % (name, r.status, r.body[:300]))
        harness.parse_s3_error(r.body)
        absent(srv, "bad-" + name, "aws-chunked " + name)
    # Decoded length that disagrees with the chunks.
    r = unsigned("/%s/bad-decoded-len" % BUCKET, good, decoded_len=len(data) + 1)
    check(400 <= r.status < 500, "x-amz-decoded-content-length too large: HTTP %d %r" % (r.status, r.body[:300]))
    absent(srv, "bad-decoded-len", "wrong x-amz-decoded-content-length")
    r = unsigned("/%s/bad-decoded-len2" % BUCKET, good, decoded_len=len(data) - 1)
    check(400 <= r.status < 500, "x-amz-decoded-content-length too small: HTTP %d %r" % (r.status, r.body[:300]))
    absent(srv, "bad-decoded-len2", "wrong x-amz-decoded-content-length")
    alive(srv, "bad aws-chunked framing")


def test_oversize_headers(srv):
    path = "/%s/obj" % BUCKET
    cases = {
        "one 100 KiB header": {"X-Big": "a" * (100 << 10)},
        "10000 small headers": {"X-H%d" % i: "v" for i in range(10000)},
        "100 KiB metadata": {"x-amz-meta-big": "m" * (100 << 10)},
    }
    for name, extra in cases.items():
        h = {"Host": "127.0.0.1:%d" % srv.port, "Connection": "close"}
        h.update(extra)
        out, closed = raw(srv, request_bytes("GET", path, h), timeout=10)
        if out:
            resp = parse_responses(out)
            st = resp[0][0]
            check(isinstance(st, int) and 400 <= st < 500, "%s: answer %r" % (name, out[:300]))
        else:
            check(closed, "%s: no answer and connection not closed" % name)
        alive(srv, name)
    # A 100 KiB URL.
    out, closed = raw(srv, request_bytes("GET", "/%s/%s" % (BUCKET, "u" * (100 << 10)), {"Host": "x", "Connection": "close"}), timeout=10)
    if out:
        st = parse_responses(out)[0][0]
        check(isinstance(st, int) and 400 <= st < 500, "100 KiB URL: answer %r" % out[:300])
    alive(srv, "100 KiB URL")
    # Oversize user metadata through a signed PUT (S3 allows 2 KiB).
    r = srv.request("PUT", "/%s/bigmeta" % BUCKET, headers={"x-amz-meta-big": "m" * 4096}, body=b"x")
    expect_s3_error(r.status, r.body, 400, "MetadataTooLarge", "PUT with 4 KiB of metadata")
    absent(srv, "bigmeta", "oversize metadata")


def test_header_block_at_s3_limit(srv):
    """S3 takes request headers up to 8 KiB: a block that large (2 KiB of
    metadata, a 1000-byte key, tags, long Cache-Control/Content-Disposition)
    fits the default connection_memory, and so does the GET answer that
    carries it all back. Fails when the pool is too small for it (8K)."""
    key = "k" * 1000
    h = {"x-amz-meta-a": "m" * 1900, "Content-Type": "text/plain",
         "x-amz-tagging": "&".join("t%02d=%s" % (i, "v" * 40) for i in range(10)),
         "Cache-Control": "c" * 1000, "Content-Disposition": "d" * 1000, "x-pad": "p" * 1500}
    r = srv.request("PUT", "/%s/%s" % (BUCKET, key), headers=h, body=b"x" * 70000)
    eq(r.status, 200, "PUT with an 8 KiB header block: %r" % r.body[:300])
    r = srv.request("GET", "/%s/%s" % (BUCKET, key), headers={"Range": "bytes=5-69999", "x-pad": "p" * 5000})
    eq(r.status, 206, "ranged GET with a 6 KiB header block: %r" % r.body[:300])
    eq(len(r.body), 69995, "ranged GET body length")
    eq(r.header("x-amz-meta-a", ""), "m" * 1900, "metadata in the answer")
    eq(r.header("Content-Disposition", ""), "d" * 1000, "Content-Disposition in the answer")


def test_half_body(srv):
    path = "/%s/half" % BUCKET
    h = srv.sign("PUT", path, "", {}, b"", payload_hash="UNSIGNED-PAYLOAD")
    h["Content-Length"] = str(1 << 20)
    socks = []
    try:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        socks.append(s)
        s.sendall(request_bytes("PUT", path, h) + harness.random_bytes(300 << 10))
        time.sleep(0.3)
        alive(srv, "a stalled PUT body")
        absent(srv, "half", "a stalled PUT body (still open)")
        # Many more stalled uploads must not starve other clients.
        for i in range(64):
            p = "/%s/half-%d" % (BUCKET, i)
            hh = srv.sign("PUT", p, "", {}, b"", payload_hash="UNSIGNED-PAYLOAD")
            hh["Content-Length"] = str(1 << 20)
            c = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            socks.append(c)
            c.sendall(request_bytes("PUT", p, hh) + b"y" * 1000)
        t0 = time.monotonic()
        alive(srv, "65 stalled PUT bodies")
        check(time.monotonic() - t0 < 5, "health took %.1f s with 65 stalled uploads" % (time.monotonic() - t0))
        r = srv.request("GET", "/%s/obj" % BUCKET)
        eq(r.status, 200, "GET while uploads are stalled")
    finally:
        # Abort them all with RST.
        import struct

        for c in socks:
            try:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            c.close()
    time.sleep(0.5)
    alive(srv, "aborted uploads")
    absent(srv, "half", "an aborted PUT")
    for i in range(64):
        absent(srv, "half-%d" % i, "an aborted PUT")
    # Short body then FIN: IncompleteBody (or just a closed connection), no object.
    path = "/%s/short" % BUCKET
    h = srv.sign("PUT", path, "", {}, b"", payload_hash="UNSIGNED-PAYLOAD")
    h["Content-Length"] = "1000"
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(request_bytes("PUT", path, h) + b"z" * 500)
    s.shutdown(socket.SHUT_WR)
    try:
        s.recv(65536)
    except OSError:
        pass
    s.close()
    time.sleep(0.2)
    absent(srv, "short", "a short body with FIN")
    # Headers that never finish.
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"GET /_/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    alive(srv, "a half-sent header block")
    s.close()


def test_expect_continue(srv):
    # A refused upload with Expect: 100-continue is answered before the body
    # is sent (this is what saves clients from uploading gigabytes for a 403).
    path = "/%s/expect" % BUCKET
    h = srv.sign("PUT", path, "", {"Expect": "100-continue"}, b"", payload_hash="UNSIGNED-PAYLOAD", secret_key="wrong-secret")
    h["Content-Length"] = str(64 << 20)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    try:
        s.sendall(request_bytes("PUT", path, h))
        out = b""
        try:
            while b"\r\n\r\n" not in out:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
        check(out, "no answer to a refused PUT with Expect: 100-continue within 5 s")
        check(not out.startswith(b"HTTP/1.1 100"), "100 Continue sent for a request with a bad signature")
        check(out.startswith(b"HTTP/1.1 403"), "refused PUT with Expect: 100-continue: %r" % out[:200])
    finally:
        s.close()
    # A good one gets 100 Continue, then 200.
    path = "/%s/expect-ok" % BUCKET
    body = b"continued body"
    h = srv.sign("PUT", path, "", {"Expect": "100-continue"}, body)
    h["Content-Length"] = str(len(body))
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    try:
        s.sendall(request_bytes("PUT", path, h))
        first = s.recv(65536)
        check(first.startswith(b"HTTP/1.1 100"), "accepted PUT with Expect: 100-continue: %r" % first[:200])
        s.sendall(body)
        out = first.split(b"\r\n\r\n", 1)[1]
        while b"\r\n\r\n" not in out:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        check(out.startswith(b"HTTP/1.1 200"), "PUT after 100 Continue: %r" % out[:200])
    finally:
        s.close()
    eq(srv.request("GET", path).body, body, "object sent after 100 Continue")


def test_plain_chunked_put(srv):
    # HTTP chunked transfer coding without aws-chunked: S3 wants a length
    # (411 MissingContentLength); accepting it is fine too, if the bytes are right.
    path = "/%s/te-chunked" % BUCKET
    data = harness.random_bytes(100000, seed=12)
    h = srv.sign("PUT", path, "", {"Transfer-Encoding": "chunked"}, b"", payload_hash="UNSIGNED-PAYLOAD")
    body = b"".join(b"%x\r\n" % len(c) + c + b"\r\n" for c in (data[:30000], data[30000:])) + b"0\r\n\r\n"
    out, _ = raw(srv, request_bytes("PUT", path, h) + body, timeout=5)
    resp = parse_responses(out, method="PUT")
    check(resp and resp[0][0] in (200, 411, 501), "chunked PUT: %r" % out[:300])
    if resp[0][0] == 200:
        same_bytes(srv.request("GET", path).body, data, "object stored from a chunked PUT")
    else:
        harness.parse_s3_error(resp[0][2])
        absent(srv, "te-chunked", "a refused chunked PUT")
    # No Content-Length and no Transfer-Encoding: the body cannot be framed.
    path = "/%s/no-length" % BUCKET
    h = srv.sign("PUT", path, "", {"Connection": "close"}, b"", payload_hash="UNSIGNED-PAYLOAD")
    out, _ = raw(srv, request_bytes("PUT", path, h) + b"unframed bytes", timeout=5)
    resp = parse_responses(out, method="PUT")
    check(resp and isinstance(resp[0][0], int), "PUT without a length: %r" % out[:300])
    if resp[0][0] == 200:
        eq(srv.request("GET", path).body, b"", "a PUT without a length stores an empty object")
    else:
        check(resp[0][0] in (400, 411), "PUT without a length: HTTP %s" % resp[0][0])
    alive(srv, "chunked PUTs")


def test_smuggling(srv):
    hp = "127.0.0.1:%d" % srv.port
    smuggled = b"GET /_/health HTTP/1.1\r\nHost: " + hp.encode() + b"\r\n\r\n"
    # CL.TE: the body is a terminating chunk followed by a second request.
    body = b"0\r\n\r\n" + smuggled
    cases = {
        "CL+TE": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % (BUCKET.encode(), hp.encode(), len(body)) + body,
        "TE+CL": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n" % (BUCKET.encode(), hp.encode()) + body,
        "two CL": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nContent-Length: %d\r\n\r\n" % (BUCKET.encode(), hp.encode(), len(smuggled)) + smuggled,
        "CL list": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nContent-Length: 0, %d\r\n\r\n" % (BUCKET.encode(), hp.encode(), len(smuggled)) + smuggled,
        "obfuscated TE": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nTransfer-Encoding: xchunked\r\n\r\n" % (BUCKET.encode(), hp.encode(), len(body)) + body,
        "TE with space": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nTransfer-Encoding : chunked\r\n\r\n" % (BUCKET.encode(), hp.encode(), len(body)) + body,
        "TE chunked,identity": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nTransfer-Encoding: chunked, identity\r\n\r\n" % (BUCKET.encode(), hp.encode(), len(body)) + body,
        "negative CL": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nContent-Length: -1\r\n\r\n" % (BUCKET.encode(), hp.encode()) + smuggled,
        "huge chunk size": b"PUT /%s/smuggle HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\nabc\r\n0\r\n\r\n" % (BUCKET.encode(), hp.encode()) + smuggled,
        "LF only": b"PUT /%s/smuggle HTTP/1.1\nHost: %s\nContent-Length: 5\nTransfer-Encoding: chunked\n\n0\n\n" % (BUCKET.encode(), hp.encode()) + smuggled,
    }
    for name, data in cases.items():
        out, closed = raw(srv, data, timeout=3)
        resp = parse_responses(out, method="PUT")
        statuses = [r[0] for r in resp]
        # The smuggled request is GET /_/health: any 2xx/3xx means it was
        # answered. (libmicrohttpd 0.9.75 repeats the status head of its own
        # 400 for a malformed Content-Length, which parses as a second,
        # 'unparseable' response; that is not an answer to the smuggled request.)
        answered = [st for st in statuses[1:] if isinstance(st, int) and st < 400]
        check(not answered and all(isinstance(st, int) and st >= 400 or st == "unparseable"
                                   for st in statuses[1:]),
              "%s: the smuggled request was answered; responses %r" % (name, statuses))
        if resp:
            st = resp[0][0]
            check(isinstance(st, int) and 400 <= st < 500, "%s: response %r" % (name, out[:300]))
        alive(srv, "smuggling " + name)
    absent(srv, "smuggle", "smuggling attempts")


def test_path_traversal(srv):
    s3 = srv.client()
    marker = "shardstore-escape-%d" % os.getpid()
    keys = [
        "../../etc/passwd",
        "..",
        ".",
        "a/../../b",
        "./x",
        "/leading-slash",
        "double//slash",
        "..\\..\\windows",
        "../../../../../../../../tmp/" + marker,
        "../" + marker,
    ]
    before = set(os.listdir(srv.tmp))
    for i, k in enumerate(keys):
        data = ("content of %r" % k).encode()
        r = srv.request("PUT", "/%s/%s" % (BUCKET, harness.quote_key(k)), body=data)
        eq(r.status, 200, "PUT key %r: %r" % (k, r.body[:300]))
        r = srv.request("GET", "/%s/%s" % (BUCKET, harness.quote_key(k)))
        eq((r.status, r.body), (200, data), "GET key %r" % k)
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    for k in keys:
        check(k in listed, "key %r missing from the listing %r" % (k, listed))
    check(not os.path.exists("/tmp/" + marker), "a key created /tmp/" + marker)
    eq(set(os.listdir(srv.tmp)) - before, set(), "files created next to the data dir")
    check(not os.path.exists(os.path.join(os.path.dirname(srv.tmp), marker)), "a key escaped the temp dir")
    # The real /etc/passwd is never served.
    r = srv.request("GET", "/%s/../../../../etc/passwd" % BUCKET)
    check(b"root:" not in r.body, "GET /../../etc/passwd served the system file")
    r = srv.request("GET", "/%s/%%2e%%2e/%%2e%%2e/%%2e%%2e/etc/passwd" % BUCKET, sign=False)
    check(b"root:" not in r.body, "percent-encoded traversal served the system file")
    for k in keys:
        r = srv.request("DELETE", "/%s/%s" % (BUCKET, harness.quote_key(k)))
        eq(r.status, 204, "DELETE key %r" % k)


def test_key_length(srv):
    s3 = srv.client()
    r = srv.request("PUT", "/%s/%s" % (BUCKET, "k" * 1025), body=b"x")
    expect_s3_error(r.status, r.body, 400, "KeyTooLongError", "PUT of a 1025-byte key")
    r = srv.request("PUT", "/%s/%s" % (BUCKET, harness.quote_key("é" * 512 + "x")), body=b"x")
    expect_s3_error(r.status, r.body, 400, "KeyTooLongError", "PUT of a 1025-byte UTF-8 key")
    # 1024 bytes is allowed, and long keys sharing a long prefix keep their order.
    prefix = "long/" + "p" * 595
    keys = [
        "k" * 1024,
        "é" * 512,
        prefix + "a",
        prefix + "a" * 424,
        prefix + "b",
        prefix + "a" * 300 + "/x",
        prefix + "a" * 300 + "/y",
        prefix + "ab",
    ]
    for k in keys:
        check(len(k.encode()) <= 1024, "test key too long")
        r = srv.request("PUT", "/%s/%s" % (BUCKET, harness.quote_key(k)), body=k.encode()[-20:])
        eq(r.status, 200, "PUT of a %d-byte key: %r" % (len(k.encode()), r.body[:300]))
    for k in keys:
        eq(s3.get_object(Bucket=BUCKET, Key=k)["Body"].read(), k.encode()[-20:], "GET of a %d-byte key" % len(k.encode()))
    got = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="long/")["Contents"]]
    eq(got, sorted([k for k in keys if k.startswith("long/")], key=lambda s: s.encode()), "order of long keys")
    got, token = [], None
    for _ in range(20):
        kw = {"Prefix": "long/", "MaxKeys": 1}
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw, Bucket=BUCKET)
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    eq(got, sorted([k for k in keys if k.startswith("long/")], key=lambda s: s.encode()), "long keys paged one by one")
    r = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "a" * 300 + "/", Delimiter="/")
    eq([o["Key"] for o in r.get("Contents", [])], [prefix + "a" * 300 + "/x", prefix + "a" * 300 + "/y"], "listing under a 900-byte prefix")
    r = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix, Delimiter="/")
    eq([p["Prefix"] for p in r.get("CommonPrefixes", [])], [prefix + "a" * 300 + "/"], "CommonPrefixes of long keys")
    s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys]})
    eq(s3.list_objects_v2(Bucket=BUCKET, Prefix="long/").get("Contents", []), [], "long keys deleted")


def test_invalid_bucket_names(srv):
    for name in ["_", "_bad", "a", "ab", "UPPER", "bucket..name", "-dash", "dash-", "a" * 64, "10.0.0.1", "bu_cket", "bucket.", ".bucket", "bücket", "xn--bucket", "bucket-s3alias", "sthree-bucket"]:
        r = srv.request("PUT", "/" + harness.quote_key(name))
        expect_s3_error(r.status, r.body, 400, "InvalidBucketName", "CreateBucket %r" % name)
    r = srv.request("GET", "/_/no-such-admin-endpoint")
    check(r.status in (400, 403, 404), "GET /_/no-such-admin-endpoint: HTTP %d" % r.status)
    r = srv.request("PUT", "/_/health")
    check(400 <= r.status < 500, "PUT /_/health: HTTP %d" % r.status)
    eq(srv.health(), 200, "health after PUT /_/health")


def test_junk_requests(srv):
    hp = "127.0.0.1:%d" % srv.port
    junk = [
        b"GARBAGE\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 200,  # a TLS ClientHello
        b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET /%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /hostile/%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"PATCH /hostile/obj HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET http://127.0.0.1/hostile/obj HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /hostile/obj?%zz=%zz&&&=&a=b=c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /hostile/obj HTTP/1.1\r\nHost: x\r\nHost: y\r\nConnection: close\r\n\r\n",
        b"GET /hostile/obj HTTP/1.1\r\n Folded: header\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /hostile/obj HTTP/1.1\r\nHost: x\r\nBad Header Name: v\r\nConnection: close\r\n\r\n",
        b"GET /hostile/obj HTTP/1.1\r\nHost: [::1\r\nConnection: close\r\n\r\n",
        b"GET /hostile/obj HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
        b"PUT /hostile/e HTTP/1.1\r\nHost: " + hp.encode() + b"\r\nExpect: 100-continue\r\nContent-Length: 10\r\nConnection: close\r\n\r\n",
        b"\r\n" * 1000,
        b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X: " + b"\x00\x01\x7f" * 100 + b"\r\nConnection: close\r\n\r\n",
    ]
    for data in junk:
        out, _ = raw(srv, data, timeout=3)
        for st, _h, body in parse_responses(out):
            check(st == "unparseable" or st < 500 or st in (501, 505), "junk %r: HTTP %s %r" % (data[:50], st, body[:200]))
        alive(srv, "junk %r" % data[:50])
    # A method S3 does not know on an object: 405 MethodNotAllowed or 501, with XML.
    r = srv.request("PATCH", "/%s/obj" % BUCKET, body=b"")
    check(r.status in (405, 501), "PATCH: HTTP %d" % r.status)
    harness.parse_s3_error(r.body)
    # Unknown sub-resources must not be mistaken for plain GET/PUT.
    for q in ("acl", "policy", "cors", "tagging", "website", "replication"):
        r = srv.request("GET", "/" + BUCKET, query=q + "=")
        if r.status == 200:
            root = harness.ET.fromstring(r.body).tag.split("}")[-1]
            check(root != "ListBucketResult", "GET /bucket?%s answered with a ListBucketResult" % q)
        else:
            harness.parse_s3_error(r.body)
            check(r.status in (404, 501) or r.status < 500, "GET ?%s: HTTP %d" % (q, r.status))
        r = srv.request("PUT", "/%s/obj" % BUCKET, query=q + "=", body=b"<x/>")
        if r.status == 200:
            body = srv.request("GET", "/%s/obj" % BUCKET).body
            same_bytes(body, harness.random_bytes(1000, seed=1), "object after PUT ?%s (must not overwrite it)" % q)
        else:
            harness.parse_s3_error(r.body)


def test_stalled_connection_dropped(srv):
    s = STALLED.get("sock")
    if s is None:
        raise harness.Skip("no stalled connection (setup failed)")
    left = STALL_DROP_S - (time.monotonic() - STALLED["t0"])
    s.settimeout(max(1.0, left))
    try:
        try:
            data = s.recv(65536)
            while data:
                data = s.recv(65536)
        except socket.timeout:
            raise harness.Failure("the server kept a stalled upload open for more than %.0f s" % STALL_DROP_S)
        except ConnectionResetError:
            pass
    finally:
        s.close()
    absent(srv, "stalled-forever", "a dropped stalled upload")
    alive(srv, "the dropped stalled upload")


def test_checksum_values(srv):
    # A checksum the client announces must come and be well-formed: an
    # x-amz-trailer whose trailer never arrives, an empty trailer value and
    # an empty or malformed x-amz-checksum-* header are 400 InvalidRequest,
    # never a PUT stored unchecked.
    data = harness.random_bytes(5000, seed=21)
    crc = harness.checksum_b64("CRC32", data).encode()

    def trailer_put(key, tail):
        path = "/%s/%s" % (BUCKET, key)
        body = b"%x\r\n" % len(data) + data + b"\r\n0\r\n" + tail + b"\r\n"
        h = srv.sign("PUT", path, "", {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
                                       "Content-Length": str(len(body)), "x-amz-trailer": "x-amz-checksum-crc32"},
                     b"", payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        return srv.request("PUT", path, headers=h, body=body, sign=False)

    r = trailer_put("ck-trailer-ok", b"x-amz-checksum-crc32:" + crc + b"\r\n")
    eq(r.status, 200, "PUT with its announced trailer: %r" % r.body[:300])
    for key, tail in (("ck-trailer-missing", b""), ("ck-trailer-empty", b"x-amz-checksum-crc32:\r\n"),
                      ("ck-trailer-other", b"x-amz-checksum-sha256:" + base64.b64encode(hashlib.sha256(data).digest()) + b"\r\n"),
                      ("ck-trailer-short", b"x-amz-checksum-crc32:AAAA\r\n")):
        r = trailer_put(key, tail)
        expect_s3_error(r.status, r.body, 400, "InvalidRequest", key)
        absent(srv, key, key)
    for key, value in (("ck-header-empty", ""), ("ck-header-short", "AAAA"), ("ck-header-junk", "not base64!")):
        path = "/%s/%s" % (BUCKET, key)
        r = srv.request("PUT", path, headers={"x-amz-checksum-crc32": value}, body=data)
        expect_s3_error(r.status, r.body, 400, "InvalidRequest", key)
        absent(srv, key, key)
    r = srv.request("PUT", "/%s/ck-header-ok" % BUCKET, headers={"x-amz-checksum-crc32": crc.decode()}, body=data)
    eq(r.status, 200, "PUT with a good x-amz-checksum-crc32: %r" % r.body[:300])
    alive(srv, "bad checksum values")


def test_malformed_escapes(srv):
    # A malformed %-escape anywhere in the query is 400 before anything
    # else. SigV4 once kept "%" as a literal (re-encoded %25) while the
    # parser dropped the parameter: a URL presigned for prefix "abc%"
    # rewritten to "prefix=abc%" still verified and listed the whole bucket.
    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="abc%-mine", Body=b"1")
    s3.put_object(Bucket=BUCKET, Key="zz-not-yours", Body=b"2")
    signer = srv.client(signature_version="s3v4")
    url = signer.generate_presigned_url("list_objects_v2", Params={"Bucket": BUCKET, "Prefix": "abc%"}, ExpiresIn=300)
    u = urllib.parse.urlsplit(url)
    check("prefix=abc%25" in u.query, "presigned listing URL: %s" % url)
    r = srv.request("GET", u.path, u.query, sign=False)
    eq(r.status, 200, "the presigned listing as signed: %r" % r.body[:300])
    check(b"zz-not-yours" not in r.body, "the presigned listing shows keys outside its prefix")
    for what, q in (("prefix rewritten to a bare %", u.query.replace("prefix=abc%25", "prefix=abc%")),
                    ("an added x=%zz", u.query + "&x=%zz"),
                    ("a truncated escape in a name", u.query + "&pre%2=1")):
        r = srv.request("GET", u.path, q, sign=False)
        expect_s3_error(r.status, r.body, 400, "InvalidArgument", "presigned listing with " + what)
        check(b"zz-not-yours" not in r.body, "presigned listing with %s listed the bucket" % what)
    # Signed with a header and unsigned alike, and in the path.
    r = srv.request("GET", "/%s" % BUCKET, "list-type=2&prefix=%zz")
    expect_s3_error(r.status, r.body, 400, "InvalidArgument", "signed listing with prefix=%zz")
    r = srv.request("GET", "/%s" % BUCKET, "prefix=%4", sign=False)
    expect_s3_error(r.status, r.body, 400, "InvalidArgument", "anonymous listing with prefix=%4")
    r = srv.request("GET", "/%s/abc%%zz" % BUCKET, sign=False)
    expect_s3_error(r.status, r.body, 400, "InvalidRequest", "a malformed escape in the path")
    alive(srv, "malformed escapes")


def _send_until_answered(srv, head, chunks, timeout=10.0):
    """Sends 'head', then each of 'chunks' while the server reads; returns
    (response bytes, how many chunks went out before the answer, closed)."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    sent = 0
    out = b""
    closed = False
    try:
        s.sendall(head)
        s.setblocking(False)
        for c in chunks:
            try:
                got = s.recv(65536)
                if not got:
                    closed = True
                    break
                out += got
                break
            except BlockingIOError:
                pass
            except ConnectionResetError:
                closed = True
                break
            try:
                s.setblocking(True)
                s.sendall(c)
                s.setblocking(False)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 1
        s.setblocking(True)
        s.settimeout(timeout)
        while True:
            try:
                got = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not got:
                closed = True
                break
            out += got
    finally:
        s.close()
    return out, sent, closed


def test_size_limits(srv):
    # max_object_size holds whatever the framing, and a refused body is not
    # read to its end: the answer comes as soon as the limit is passed (the
    # chunked bodies below never end) and the connection closes. UploadPart is capped at 5 GiB (and at
    # max_object_size) even when Content-Length declares more.
    with harness.Server(config="max_object_size = 1M\n", tag="hostile-size") as small:
        s3 = small.client()
        s3.create_bucket(Bucket=BUCKET)
        piece = b"z" * 65536
        # Plain Transfer-Encoding: chunked, 64 KiB chunks, endless.
        path = "/%s/te-big" % BUCKET
        h = small.sign("PUT", path, "", {"Transfer-Encoding": "chunked"}, b"", payload_hash="UNSIGNED-PAYLOAD")
        chunks = [b"%x\r\n" % len(piece) + piece + b"\r\n"] * 200  # 12.5 MiB if all were read
        out, sent, closed = _send_until_answered(small, request_bytes("PUT", path, h), chunks)
        resp = parse_responses(out, method="PUT")
        check(resp and resp[0][0] == 400, "chunked PUT past max_object_size: %r" % out[:300])
        eq(harness.parse_s3_error(resp[0][2]).get("Code"), "EntityTooLarge", "chunked PUT past max_object_size")
        check(closed, "the connection stays open after EntityTooLarge")
        r = small.request("HEAD", path)
        eq(r.status, 404, "HEAD of the refused chunked PUT")
        # aws-chunked inside Transfer-Encoding: chunked, with a decoded length
        # within the limit but more data than that is refused as well.
        path = "/%s/aws-big" % BUCKET
        h = small.sign("PUT", path, "", {"Transfer-Encoding": "chunked", "Content-Encoding": "aws-chunked",
                                          "x-amz-decoded-content-length": str(2 << 20)},
                       b"", payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        out, sent, closed = _send_until_answered(small, request_bytes("PUT", path, h), [b"x"])
        resp = parse_responses(out, method="PUT")
        check(resp and resp[0][0] == 400, "aws-chunked PUT declaring 2 MiB: %r" % out[:300])
        eq(harness.parse_s3_error(resp[0][2]).get("Code"), "EntityTooLarge", "aws-chunked PUT declaring 2 MiB")
        # UploadPart: the same limit with chunked framing, and Content-Length
        # over it refused before any body byte.
        up = s3.create_multipart_upload(Bucket=BUCKET, Key="mp")["UploadId"]
        path = "/%s/mp" % BUCKET
        q = "partNumber=1&uploadId=" + up
        h = small.sign("PUT", path, q, {"Transfer-Encoding": "chunked"}, b"", payload_hash="UNSIGNED-PAYLOAD")
        out, sent, closed = _send_until_answered(small, request_bytes("PUT", path + "?" + q, h), chunks)
        resp = parse_responses(out, method="PUT")
        check(resp and resp[0][0] == 400, "chunked UploadPart past max_object_size: %r" % out[:300])
        eq(harness.parse_s3_error(resp[0][2]).get("Code"), "EntityTooLarge", "chunked UploadPart")
        check(closed, "the connection stays open after EntityTooLarge (part)")
        eq(len(s3.list_parts(Bucket=BUCKET, Key="mp", UploadId=up).get("Parts", [])), 0, "parts after the refused part")
        alive(small, "over-size chunked bodies")
    with harness.Server(config="max_object_size = 8G\n", tag="hostile-part") as big:
        s3 = big.client()
        s3.create_bucket(Bucket=BUCKET)
        up = s3.create_multipart_upload(Bucket=BUCKET, Key="mp")["UploadId"]
        path = "/%s/mp" % BUCKET
        q = "partNumber=1&uploadId=" + up
        h = big.sign("PUT", path, q, {"Content-Length": str((5 << 30) + 1)}, b"", payload_hash="UNSIGNED-PAYLOAD")
        out, _ = raw(big, request_bytes("PUT", path + "?" + q, h) + b"x" * 1000, timeout=5)
        resp = parse_responses(out, method="PUT")
        check(resp and resp[0][0] == 400, "UploadPart declaring 5 GiB + 1: %r" % out[:300])
        eq(harness.parse_s3_error(resp[0][2]).get("Code"), "EntityTooLarge", "UploadPart declaring 5 GiB + 1")


def test_final_health(srv):
    eq(srv.health(), 200, "final /_/health")
    m = srv.metrics()
    check("shardstore_storage_free_bytes" in m, "metrics lack shardstore_storage_free_bytes")


TESTS = [
    test_setup,
    test_bad_authorization,
    test_unsigned_amz_headers,
    test_bad_range,
    test_malformed_xml,
    test_aws_chunked,
    test_oversize_headers,
    test_header_block_at_s3_limit,
    test_half_body,
    test_expect_continue,
    test_plain_chunked_put,
    test_smuggling,
    test_path_traversal,
    test_key_length,
    test_invalid_bucket_names,
    test_junk_requests,
    test_stalled_connection_dropped,
    test_size_limits,
    test_checksum_values,
    test_malformed_escapes,
    test_final_health,
]

if __name__ == "__main__":
    harness.main(TESTS)
