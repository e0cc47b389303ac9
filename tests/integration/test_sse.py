"""test_sse.py: server-side encryption at rest (SSE-S3, SSE-C, bucket
default encryption) with boto3, raw requests and aws-cli.

Checked: the response headers AWS sends for each mode (PUT, GET, HEAD,
multipart, copy); bytes, ranges across 64 KiB package and part boundaries,
partNumber reads and plaintext checksums; the AWS errors of a missing,
wrong or malformed SSE-C key and of SSE-C over plain HTTP; that no volume
byte holds a plaintext marker; that a flipped bit on disk is an error (500
before the body, or the connection closed mid-body), never other bytes,
while a range of untouched packages still reads; copies between modes and
UploadPartCopy; tags on an encrypted object; restart with the key file,
key rotation through sse_old_key_files, and refusal to start on a key file
readable by others. SSE-C goes over plain HTTP with sse_c_allow_http = on.
"""
import atexit
import base64
import concurrent.futures
import hashlib
import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness as h  # noqa: E402

PKG = 65536
BUCKET = "sse"
PLAIN = "sse-plain"
MARKER = b"PLAINTEXT-MARKER-7f3a9c"
KEY = b"0123456789abcdef0123456789abcdef"
OTHER_KEY = b"fedcba9876543210fedcba9876543210"
CONFIG = "sse_c_allow_http = on\nvolume_size = 64M\nmin_part_size = 64K\n"


def ssec(key=KEY, prefix="x-amz-server-side-encryption-customer-"):
    return {
        prefix + "algorithm": "AES256",
        prefix + "key": base64.b64encode(key).decode(),
        prefix + "key-MD5": base64.b64encode(hashlib.md5(key).digest()).decode(),
    }


def marked(n, seed=0):
    """n bytes of random data with the marker every 4 KiB."""
    data = bytearray(h.random_bytes(n, seed=seed))
    for off in range(0, max(n - len(MARKER), 0), 4096):
        data[off:off + len(MARKER)] = MARKER
    return bytes(data)


def data_files(srv):
    for root, _, files in os.walk(srv.data_dir):
        for f in files:
            yield os.path.join(root, f)


def volume_files(srv):
    return [p for p in data_files(srv) if os.path.basename(p).startswith("vol")]


def grep_data(srv, needle):
    for p in data_files(srv):
        with open(p, "rb") as f:
            while True:
                chunk = f.read(8 << 20)
                if not chunk:
                    break
                if needle in chunk:
                    return p
    return None


def setup(srv):
    s3 = srv.client()
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    for b in (BUCKET, PLAIN):
        if b not in names:
            s3.create_bucket(Bucket=b)
    return s3


def test_sse_s3(srv):
    s3 = setup(srv)
    data = marked(5 * PKG + 123, seed=1)
    r = s3.put_object(Bucket=BUCKET, Key="s3", Body=data, ServerSideEncryption="AES256", ChecksumAlgorithm="CRC32")
    h.eq(r["ServerSideEncryption"], "AES256", "PUT header")
    h.eq(r["ETag"], '"%s"' % hashlib.md5(data).hexdigest(), "SSE-S3 ETag is the MD5 of the plaintext")
    g = s3.get_object(Bucket=BUCKET, Key="s3", ChecksumMode="ENABLED")
    h.same_bytes(g["Body"].read(), data, "SSE-S3 GET")
    h.eq(g["ServerSideEncryption"], "AES256", "GET header")
    h.eq(g["ContentLength"], len(data), "plaintext length")
    want_crc = base64.b64encode((zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")).decode()
    h.eq(g["ChecksumCRC32"], want_crc, "checksum of the plaintext")
    hd = s3.head_object(Bucket=BUCKET, Key="s3")
    h.eq(hd["ServerSideEncryption"], "AES256", "HEAD header")
    h.eq(hd["ContentLength"], len(data), "HEAD length")
    for first, last in ((0, 0), (PKG - 1, PKG), (PKG - 3, 3 * PKG + 5), (2 * PKG, 3 * PKG - 1), (5 * PKG, len(data) - 1), (17, len(data) - 1)):
        g = s3.get_object(Bucket=BUCKET, Key="s3", Range="bytes=%d-%d" % (first, last))
        h.same_bytes(g["Body"].read(), data[first:last + 1], "range %d-%d" % (first, last))
    g = s3.get_object(Bucket=BUCKET, Key="s3", Range="bytes=-100")
    h.same_bytes(g["Body"].read(), data[-100:], "suffix range")
    # Empty and one-package objects.
    s3.put_object(Bucket=BUCKET, Key="s3-empty", Body=b"", ServerSideEncryption="AES256")
    h.eq(s3.get_object(Bucket=BUCKET, Key="s3-empty")["Body"].read(), b"", "empty")
    s3.put_object(Bucket=BUCKET, Key="s3-pkg", Body=data[:PKG], ServerSideEncryption="AES256")
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="s3-pkg")["Body"].read(), data[:PKG], "one whole package")
    # Tags on an encrypted object keep it readable and encrypted.
    s3.put_object_tagging(Bucket=BUCKET, Key="s3", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    g = s3.get_object(Bucket=BUCKET, Key="s3")
    h.same_bytes(g["Body"].read(), data, "after tagging")
    h.eq(g["ServerSideEncryption"], "AES256", "after tagging")
    with h.client_error("NotImplemented", 501):
        s3.put_object(Bucket=BUCKET, Key="kms", Body=b"x", ServerSideEncryption="aws:kms")
    r = srv.request("PUT", "/%s/bad-alg" % BUCKET, headers={"x-amz-server-side-encryption": "AES128"}, body=b"x")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "unknown algorithm")


def test_sse_c(srv):
    s3 = setup(srv)
    data = marked(3 * PKG + 7, seed=2)
    kw = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())
    r = s3.put_object(Bucket=BUCKET, Key="c", Body=data, **kw)
    h.eq(r["SSECustomerAlgorithm"], "AES256", "PUT header")
    h.eq(r["SSECustomerKeyMD5"], base64.b64encode(hashlib.md5(KEY).digest()).decode(), "PUT key MD5")
    h.check(r["ETag"] != '"%s"' % hashlib.md5(data).hexdigest(), "SSE-C ETag is not the MD5")
    g = s3.get_object(Bucket=BUCKET, Key="c", **kw)
    h.same_bytes(g["Body"].read(), data, "SSE-C GET")
    h.eq(g["SSECustomerAlgorithm"], "AES256", "GET header")
    h.eq(g["ETag"], r["ETag"], "same ETag")
    g = s3.get_object(Bucket=BUCKET, Key="c", Range="bytes=%d-%d" % (PKG - 10, 2 * PKG + 10), **kw)
    h.same_bytes(g["Body"].read(), data[PKG - 10:2 * PKG + 11], "SSE-C range")
    h.eq(s3.head_object(Bucket=BUCKET, Key="c", **kw)["SSECustomerKeyMD5"], r["SSECustomerKeyMD5"], "HEAD")
    # No key, a wrong key: AWS's errors, for GET and HEAD.
    r = srv.request("GET", "/%s/c" % BUCKET)
    h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "GET without the key")
    h.eq(srv.request("HEAD", "/%s/c" % BUCKET).status, 400, "HEAD without the key")
    r = srv.request("GET", "/%s/c" % BUCKET, headers=ssec(OTHER_KEY))
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "GET with a wrong key")
    h.eq(srv.request("HEAD", "/%s/c" % BUCKET, headers=ssec(OTHER_KEY)).status, 403, "HEAD wrong key")
    # Malformed keys.
    bad = ssec()
    bad["x-amz-server-side-encryption-customer-key-MD5"] = base64.b64encode(hashlib.md5(OTHER_KEY).digest()).decode()
    r = srv.request("PUT", "/%s/c2" % BUCKET, headers=bad, body=b"x")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "MD5 mismatch")
    bad = ssec()
    bad["x-amz-server-side-encryption-customer-key"] = base64.b64encode(b"short").decode()
    r = srv.request("PUT", "/%s/c2" % BUCKET, headers=bad, body=b"x")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "short key")
    bad = ssec()
    del bad["x-amz-server-side-encryption-customer-key-MD5"]
    r = srv.request("PUT", "/%s/c2" % BUCKET, headers=bad, body=b"x")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "no MD5")
    bad = ssec()
    bad["x-amz-server-side-encryption-customer-algorithm"] = "AES128"
    r = srv.request("PUT", "/%s/c2" % BUCKET, headers=bad, body=b"x")
    h.expect_s3_error(r.status, r.body, 400, "InvalidEncryptionAlgorithmError", "algorithm")
    both = ssec()
    both["x-amz-server-side-encryption"] = "AES256"
    r = srv.request("PUT", "/%s/c2" % BUCKET, headers=both, body=b"x")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "SSE-C with SSE-S3")
    h.eq(srv.request("HEAD", "/%s/c2" % BUCKET).status, 404, "refused PUTs leave nothing")
    # SSE-C headers on an object without a customer key.
    s3.put_object(Bucket=BUCKET, Key="plain", Body=b"plain")
    r = srv.request("GET", "/%s/plain" % BUCKET, headers=ssec())
    h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "SSE-C key on a plain object")


def test_plaintext_never_on_disk(srv):
    s3 = setup(srv)
    s3.put_bucket_encryption(Bucket=BUCKET, ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    try:
        data = marked(300 * 1024, seed=3)
        s3.put_object(Bucket=BUCKET, Key="disk-s3", Body=data, ServerSideEncryption="AES256")
        s3.put_object(Bucket=BUCKET, Key="disk-c", Body=data, SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())
        s3.put_object(Bucket=BUCKET, Key="disk-default", Body=data)
        up = s3.create_multipart_upload(Bucket=BUCKET, Key="disk-mp")["UploadId"]
        e1 = s3.upload_part(Bucket=BUCKET, Key="disk-mp", UploadId=up, PartNumber=1, Body=data)["ETag"]
        s3.complete_multipart_upload(Bucket=BUCKET, Key="disk-mp", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}]})
        h.eq(s3.head_object(Bucket=BUCKET, Key="disk-default")["ServerSideEncryption"], "AES256", "bucket default applied")
        h.check(grep_data(srv, MARKER) is None, "the plaintext marker is in %s" % grep_data(srv, MARKER))
        # The same search finds a plain object's marker: it can fail.
        s3.put_object(Bucket=PLAIN, Key="disk-plain", Body=b"CONTROL-" + MARKER * 100)
        h.check(grep_data(srv, b"CONTROL-" + MARKER) is not None, "a plain object's bytes are found")
        s3.delete_object(Bucket=PLAIN, Key="disk-plain")
    finally:
        s3.delete_bucket_encryption(Bucket=BUCKET)


def snapshot(srv):
    out = {}
    for p in volume_files(srv):
        with open(p, "rb") as f:
            out[p] = f.read()
    return out


def flip(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x10]))
        f.flush()
        os.fsync(f.fileno())


def test_flipped_bit(srv):
    s3 = setup(srv)
    srv.allowed_errors.append(re.compile(r"does not authenticate"))
    data = marked(4 * PKG, seed=4)
    before = snapshot(srv)
    s3.put_object(Bucket=BUCKET, Key="tamper", Body=data, ServerSideEncryption="AES256")
    after = snapshot(srv)
    where = None
    for p, now in after.items():
        old = before.get(p, b"")
        n = min(len(old), len(now))
        i = next((i for i in range(0, n, 4096) if old[i:i + 4096] != now[i:i + 4096]), None)
        if i is None and len(now) > n:
            i = n
        if i is not None:
            while i < len(now) and i < len(old) and old[i] == now[i]:
                i += 1
            where = (p, i)
            break
    h.check(where is not None, "the object's bytes were found in a volume")
    path, start = where
    stored_pkg = PKG + 16
    # A bit of package 0: 500 before any byte is sent.
    flip(path, start + 100)
    r = srv.request("GET", "/%s/tamper" % BUCKET)
    h.expect_s3_error(r.status, r.body, 500, "InternalError", "flipped bit in the first package")
    flip(path, start + 100)
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="tamper")["Body"].read(), data, "restored")
    # A bit of package 2: the body ends early (connection closed), never wrong bytes.
    flip(path, start + 2 * stored_pkg + 5)
    got = b""
    is_cut = False
    try:
        got = s3.get_object(Bucket=BUCKET, Key="tamper")["Body"].read()
    except Exception:
        is_cut = True
    h.check(is_cut or len(got) < len(data), "a corrupt package must not read whole (%d bytes)" % len(got))
    h.check(data.startswith(got), "what was sent is the true prefix")
    # A range of untouched packages still reads; one that touches package 2 fails.
    g = s3.get_object(Bucket=BUCKET, Key="tamper", Range="bytes=10-%d" % (2 * PKG - 1))
    h.same_bytes(g["Body"].read(), data[10:2 * PKG], "packages 0-1 untouched")
    r = srv.request("GET", "/%s/tamper" % BUCKET, headers={"Range": "bytes=%d-%d" % (2 * PKG, 2 * PKG + 9)})
    h.expect_s3_error(r.status, r.body, 500, "InternalError", "range of the corrupt package")
    flip(path, start + 2 * stored_pkg + 5)
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="tamper")["Body"].read(), data, "restored again")


def new_bytes_at(before, after):
    """(volume path, offset) of the first byte a write changed."""
    for p, now in after.items():
        old = before.get(p, b"")
        n = min(len(old), len(now))
        i = next((i for i in range(0, n, 4096) if old[i:i + 4096] != now[i:i + 4096]), None)
        if i is None and len(now) > n:
            i = n
        if i is not None:
            while i < len(now) and i < len(old) and old[i] == now[i]:
                i += 1
            return (p, i)
    return None


def get_and_drop(srv, path, headers, keep):
    """A GET whose client reads the headers and 'keep' body bytes, then
    closes the connection."""
    conn = srv.connect()
    try:
        conn.request("GET", path, headers=srv.sign("GET", path, "", dict(headers), b""))
        r = conn.getresponse()
        h.eq(r.status, 200, "GET before the drop")
        r.read(keep)
    finally:
        conn.close()


def test_large_body(srv):
    """Bodies over 512 KiB are decrypted ahead of the send on workers (a
    ring of slots): bytes, ranges, SSE-C, a client that goes away, and a
    flipped bit far past the first slots."""
    s3 = setup(srv)
    srv.allowed_errors.append(re.compile(r"does not authenticate"))
    data = marked(40 * PKG + 123, seed=50)
    ck = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())
    before = snapshot(srv)
    s3.put_object(Bucket=BUCKET, Key="big", Body=data, ServerSideEncryption="AES256")
    where = new_bytes_at(before, snapshot(srv))
    s3.put_object(Bucket=BUCKET, Key="big-c", Body=data, **ck)
    for key, kw in (("big", {}), ("big-c", ck)):
        h.same_bytes(s3.get_object(Bucket=BUCKET, Key=key, **kw)["Body"].read(), data, "%s whole" % key)
        for first, last in ((3 * PKG + 7, 30 * PKG + 5), (PKG, PKG + 600 * 1024 - 1), (17, len(data) - 1)):
            g = s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=%d-%d" % (first, last), **kw)
            h.same_bytes(g["Body"].read(), data[first:last + 1], "%s range %d-%d" % (key, first, last))
    # Clients that leave mid-body: the producer stops, every pin comes back.
    pins0 = srv.metric("shardstore_storage_reader_pins")
    for i in range(12):
        get_and_drop(srv, "/%s/big" % BUCKET, {}, (i % 4) * 100000)
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="big")["Body"].read(), data, "after the drops")
    deadline = time.time() + 10
    while srv.metric("shardstore_storage_reader_pins") != pins0 and time.time() < deadline:
        time.sleep(0.1)
    h.eq(srv.metric("shardstore_storage_reader_pins"), pins0, "pins after the dropped GETs")
    # Uploads that stop mid-body while workers seal their packages: nothing
    # is published, the server goes on.
    for i in range(4):
        conn = srv.connect()
        try:
            path = "/%s/half" % BUCKET
            hdrs = srv.sign("PUT", path, "", {"x-amz-server-side-encryption": "AES256",
                                             "Content-Length": str(len(data))}, b"",
                            payload_hash="UNSIGNED-PAYLOAD")
            conn.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
            for k, v in hdrs.items():
                conn.putheader(k, v)
            conn.endheaders()
            conn.send(data[:(i + 1) * 300000])
        finally:
            conn.close()
    r = srv.request("HEAD", "/%s/half" % BUCKET)
    h.eq(r.status, 404, "an upload cut mid-body is not published")
    # A bit of package 25 (past the first MiB in flight): cut, never wrong bytes.
    h.check(where is not None, "the object's bytes were found in a volume")
    path, start = where
    flip(path, start + 25 * (PKG + 16) + 9)
    got = b""
    is_cut = False
    try:
        got = s3.get_object(Bucket=BUCKET, Key="big")["Body"].read()
    except Exception:
        is_cut = True
    h.check(is_cut or len(got) < len(data), "a corrupt package must not read whole (%d bytes)" % len(got))
    h.check(data.startswith(got), "what was sent is the true prefix")
    h.check(len(got) <= 25 * PKG, "nothing of package 25 or later was sent (%d bytes)" % len(got))
    g = s3.get_object(Bucket=BUCKET, Key="big", Range="bytes=0-%d" % (25 * PKG - 1))
    h.same_bytes(g["Body"].read(), data[:25 * PKG], "packages 0-24 untouched")
    flip(path, start + 25 * (PKG + 16) + 9)
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="big")["Body"].read(), data, "restored")


def test_pipelined_put(srv):
    """Bodies of 256 KiB or more are sealed on workers in units of four
    packages: sizes on and around the unit and package edges (a last unit
    of one to four packages, the last package full or short, more units
    than the writer's four slots) read back whole and across the edges,
    with the plaintext's MD5 as ETag."""
    s3 = setup(srv)
    unit = 4 * PKG
    sizes = [unit, unit + 1, 2 * unit, unit + 2 * PKG + 5, 2 * unit - 1, 5 * unit + 3 * PKG,
             4 * unit + PKG // 2]
    for i, n in enumerate(sizes):
        data = marked(n, seed=80 + i)
        key = "pipe-%d" % n
        etag = s3.put_object(Bucket=BUCKET, Key=key, Body=data, ServerSideEncryption="AES256")["ETag"]
        h.eq(etag.strip('"'), hashlib.md5(data).hexdigest(), "ETag of %d bytes" % n)
        h.same_bytes(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read(), data, "%d bytes whole" % n)
        for edge in range(PKG, n, PKG):
            first, last = max(edge - 3, 0), min(edge + 2, n - 1)
            g = s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=%d-%d" % (first, last))
            h.same_bytes(g["Body"].read(), data[first:last + 1], "%d bytes at %d" % (n, edge))
        g = s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=-5")
        h.same_bytes(g["Body"].read(), data[-5:], "%d bytes: the tail" % n)


def get_until_closed(srv, path, headers=None, timeout_s=30):
    """(status, body bytes) of a GET read until the server ends it; a body
    cut short (the connection closed) returns what came. A stall fails."""
    conn = srv.connect(timeout_s)
    got = bytearray()
    try:
        conn.request("GET", path, headers=srv.sign("GET", path, "", dict(headers or {}), b""))
        r = conn.getresponse()
        try:
            while True:
                chunk = r.read(65536)
                if not chunk:
                    break
                got += chunk
        except http.client.IncompleteRead as e:
            got += e.partial
        except ConnectionResetError:
            pass
        except socket.timeout:
            h.check(False, "GET %s stalled after %d bytes" % (path, len(got)))
        return r.status, bytes(got)
    finally:
        conn.close()


def test_lanes(srv):
    """Large bodies are decrypted by two lanes at once (units of four
    packages, lane = unit % 2) into a ring of eight slots sent in unit
    order: every byte in order for whole objects, ranges that start and end
    mid-package and on unit boundaries, multipart objects whose units
    straddle parts, many GETs at once; a bad package in a unit of either
    lane ends the body after a true prefix without stalling, and clients
    that leave mid-body leave no lane behind (every pin comes back)."""
    s3 = setup(srv)
    srv.allowed_errors.append(re.compile(r"does not authenticate"))
    unit = 4 * PKG
    data = marked(12 * unit + 3 * PKG + 4321, seed=60)  # 14 units: the ring of 8 wraps
    before = snapshot(srv)
    s3.put_object(Bucket=BUCKET, Key="lanes", Body=data, ServerSideEncryption="AES256")
    where = new_bytes_at(before, snapshot(srv))
    sizes = [700 * 1024 + 777, 5 * PKG + 3, 900 * 1024 + 11, 600 * 1024]
    parts = [marked(n, seed=61 + i) for i, n in enumerate(sizes)]
    mp = b"".join(parts)
    up = s3.create_multipart_upload(Bucket=BUCKET, Key="lanes-mp", ServerSideEncryption="AES256")["UploadId"]
    etags = [s3.upload_part(Bucket=BUCKET, Key="lanes-mp", UploadId=up, PartNumber=i + 1, Body=b)["ETag"]
             for i, b in enumerate(parts)]
    s3.complete_multipart_upload(Bucket=BUCKET, Key="lanes-mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    n = len(data)
    ranges = [(0, n - 1), (unit, n - 1), (0, 3 * unit - 1), (unit - 1, 5 * unit), (unit + 1, 9 * unit - 2),
              (PKG + 7, PKG + 2 * unit + 8), (2 * PKG - 1, 11 * unit + PKG - 1), (5, 2 * unit + 5),
              (n - 2 * unit - 1, n - 1), (n - 9 * unit - PKG - 3, n - 2)]
    b1 = sizes[0]
    m = len(mp)
    mp_ranges = [(0, m - 1), (b1 - 5, m - 1), (3, b1 + sizes[1] + 700 * 1024), (PKG + 1, m - PKG - 1),
                 (b1 + sizes[1] - unit + 3, b1 + sizes[1] + sizes[2] + 5)]
    jobs = [("lanes", data, r) for r in ranges] + [("lanes-mp", mp, r) for r in mp_ranges]

    def get(job):
        key, src, (first, last) = job
        g = s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=%d-%d" % (first, last))
        return g["Body"].read(), src[first:last + 1], "%s %d-%d" % (key, first, last)

    for job in jobs:
        h.same_bytes(*get(job))
    # All at once, twice over: the lanes of many bodies share the pool.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for got, want, what in pool.map(get, jobs + jobs):
            h.same_bytes(got, want, what + " (concurrent)")
    # Clients that leave mid-body at and between unit boundaries.
    pins0 = srv.metric("shardstore_storage_reader_pins")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda k: get_and_drop(srv, "/%s/lanes" % BUCKET, {}, k * unit // 2),
                      range(12)))
    deadline = time.time() + 10
    while srv.metric("shardstore_storage_reader_pins") != pins0 and time.time() < deadline:
        time.sleep(0.1)
    h.eq(srv.metric("shardstore_storage_reader_pins"), pins0, "pins after the dropped GETs")
    # A bad package in unit 5 (lane 1), then in unit 8 (lane 0): a true
    # prefix that stops before the unit, no stall; other ranges still read.
    h.check(where is not None, "the object's bytes were found in a volume")
    path, start = where
    for pkg in (22, 33):
        off = start + pkg * (PKG + 16) + 11
        flip(path, off)
        status, got = get_until_closed(srv, "/%s/lanes" % BUCKET)
        h.eq(status, 200, "a bad package past the first: the answer has started")
        h.check(data.startswith(got), "package %d bad: what was sent is the true prefix" % pkg)
        h.check(len(got) <= pkg // 4 * unit, "package %d bad: nothing of its unit sent (%d bytes)" % (pkg, len(got)))
        status, got = get_until_closed(srv, "/%s/lanes" % BUCKET,
                                       {"Range": "bytes=%d-%d" % (PKG + 5, n - 1)})
        h.eq(status, 206, "ranged GET over the bad package")
        h.check(data[PKG + 5:].startswith(got), "package %d bad, range: a true prefix" % pkg)
        h.check(len(got) < (pkg - 1) * PKG, "package %d bad, range: cut before it (%d bytes)" % (pkg, len(got)))
        h.same_bytes(s3.get_object(Bucket=BUCKET, Key="lanes", Range="bytes=0-%d" % (pkg * PKG - 1))["Body"].read(),
                     data[:pkg * PKG], "packages before %d" % pkg)
        flip(path, off)
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="lanes")["Body"].read(), data, "restored")


def test_multipart(srv):
    s3 = setup(srv)
    sizes = [PKG * 3 + 1000, PKG + 17, 70001]
    parts = [marked(n, seed=10 + i) for i, n in enumerate(sizes)]
    data = b"".join(parts)
    for mode, kw in (("s3", dict(ServerSideEncryption="AES256")), ("c", dict(SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode()))):
        key = "mp-" + mode
        cr = s3.create_multipart_upload(Bucket=BUCKET, Key=key, **kw)
        if mode == "s3":
            h.eq(cr["ServerSideEncryption"], "AES256", "CreateMultipartUpload header")
        else:
            h.eq(cr["SSECustomerAlgorithm"], "AES256", "CreateMultipartUpload header")
        up = cr["UploadId"]
        part_kw = {} if mode == "s3" else dict(SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())
        etags = []

        def upload(i):
            return s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=i + 1, Body=parts[i], **part_kw)

        # In parallel, in any order: each part is encrypted on its own.
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            results = dict(zip((2, 0, 1), pool.map(upload, (2, 0, 1))))
        for i, r in results.items():
            if mode == "s3":
                h.eq(r["ServerSideEncryption"], "AES256", "UploadPart header")
            else:
                h.eq(r["SSECustomerKeyMD5"], base64.b64encode(hashlib.md5(KEY).digest()).decode(), "UploadPart key MD5")
            etags.append((i + 1, r["ETag"]))
        if mode == "c":
            r = srv.request("PUT", "/%s/%s" % (BUCKET, key), query="partNumber=4&uploadId=" + up, body=b"x")
            h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "UploadPart without the key")
            r = srv.request("PUT", "/%s/%s" % (BUCKET, key), query="partNumber=4&uploadId=" + up, headers=ssec(OTHER_KEY), body=b"x")
            h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "UploadPart with a wrong key")
        r = s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up, MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in sorted(etags)]})
        if mode == "s3":
            h.eq(r["ServerSideEncryption"], "AES256", "Complete header")
        h.same_bytes(s3.get_object(Bucket=BUCKET, Key=key, **part_kw)["Body"].read(), data, "%s multipart GET" % mode)
        for n in (1, 2, 3):
            g = s3.get_object(Bucket=BUCKET, Key=key, PartNumber=n, **part_kw)
            h.same_bytes(g["Body"].read(), parts[n - 1], "%s partNumber=%d" % (mode, n))
        b1 = sizes[0]
        for first, last in ((b1 - 5, b1 + 5), (b1 - PKG, b1 + sizes[1] + 3), (0, len(data) - 1), (b1 + sizes[1], len(data) - 1)):
            g = s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=%d-%d" % (first, last), **part_kw)
            h.same_bytes(g["Body"].read(), data[first:last + 1], "%s range %d-%d across parts" % (mode, first, last))
        hd = s3.head_object(Bucket=BUCKET, Key=key, **part_kw)
        h.eq(hd["ContentLength"], len(data), "HEAD length")


def test_copy(srv):
    s3 = setup(srv)
    data = marked(2 * PKG + 99, seed=20)
    ck = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())
    src_c = dict(CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=KEY.decode())
    s3.put_object(Bucket=BUCKET, Key="cp-c", Body=data, **ck)
    s3.put_object(Bucket=BUCKET, Key="cp-s3", Body=data, ServerSideEncryption="AES256")
    s3.put_object(Bucket=PLAIN, Key="cp-plain", Body=data)
    # SSE-C -> SSE-S3: re-encrypted.
    r = s3.copy_object(Bucket=BUCKET, Key="cp-c-to-s3", CopySource={"Bucket": BUCKET, "Key": "cp-c"}, ServerSideEncryption="AES256", **src_c)
    h.eq(r["ServerSideEncryption"], "AES256", "copy header")
    g = s3.get_object(Bucket=BUCKET, Key="cp-c-to-s3")
    h.same_bytes(g["Body"].read(), data, "SSE-C -> SSE-S3")
    h.eq(g["ETag"], '"%s"' % hashlib.md5(data).hexdigest(), "re-encrypted copy ETag")
    # Without the source key: refused.
    with h.client_error("InvalidRequest", 400):
        s3.copy_object(Bucket=BUCKET, Key="cp-x", CopySource={"Bucket": BUCKET, "Key": "cp-c"})
    with h.client_error("AccessDenied", 403):
        s3.copy_object(Bucket=BUCKET, Key="cp-x", CopySource={"Bucket": BUCKET, "Key": "cp-c"}, CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=OTHER_KEY.decode())
    # SSE-S3 -> plain, plain -> SSE-C (another key), SSE-S3 -> SSE-S3 (shared), SSE-C -> SSE-C same key.
    s3.copy_object(Bucket=PLAIN, Key="cp-s3-to-plain", CopySource={"Bucket": BUCKET, "Key": "cp-s3"})
    g = s3.get_object(Bucket=PLAIN, Key="cp-s3-to-plain")
    h.same_bytes(g["Body"].read(), data, "SSE-S3 -> plain")
    h.check("ServerSideEncryption" not in g, "a plain copy has no encryption header")
    s3.copy_object(Bucket=BUCKET, Key="cp-plain-to-c", CopySource={"Bucket": PLAIN, "Key": "cp-plain"}, SSECustomerAlgorithm="AES256", SSECustomerKey=OTHER_KEY.decode())
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="cp-plain-to-c", SSECustomerAlgorithm="AES256", SSECustomerKey=OTHER_KEY.decode())["Body"].read(), data, "plain -> SSE-C")
    r = srv.request("GET", "/%s/cp-plain-to-c" % BUCKET, headers=ssec(KEY))
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "the copy has the new key")
    s3.copy_object(Bucket=PLAIN, Key="cp-s3-to-s3", CopySource={"Bucket": BUCKET, "Key": "cp-s3"}, ServerSideEncryption="AES256")
    h.same_bytes(s3.get_object(Bucket=PLAIN, Key="cp-s3-to-s3")["Body"].read(), data, "SSE-S3 -> SSE-S3")
    s3.copy_object(Bucket=BUCKET, Key="cp-c-to-c", CopySource={"Bucket": BUCKET, "Key": "cp-c"}, **ck, **src_c)
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="cp-c-to-c", **ck)["Body"].read(), data, "SSE-C -> SSE-C")
    # Change encryption in place (SSE-S3 -> SSE-C of the same key).
    s3.copy_object(Bucket=BUCKET, Key="cp-s3", CopySource={"Bucket": BUCKET, "Key": "cp-s3"}, **ck)
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="cp-s3", **ck)["Body"].read(), data, "in place SSE-S3 -> SSE-C")
    # UploadPartCopy: SSE-C source range into an SSE-S3 upload, beside a plain part.
    up = s3.create_multipart_upload(Bucket=BUCKET, Key="upc", ServerSideEncryption="AES256")["UploadId"]
    first, last = PKG - 50, 2 * PKG + 20
    r1 = s3.upload_part_copy(Bucket=BUCKET, Key="upc", UploadId=up, PartNumber=1, CopySource={"Bucket": BUCKET, "Key": "cp-c"}, CopySourceRange="bytes=%d-%d" % (first, last), **src_c)
    r2 = s3.upload_part_copy(Bucket=BUCKET, Key="upc", UploadId=up, PartNumber=2, CopySource={"Bucket": PLAIN, "Key": "cp-plain"})
    s3.complete_multipart_upload(Bucket=BUCKET, Key="upc", UploadId=up, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": r1["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": r2["CopyPartResult"]["ETag"]}]})
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="upc")["Body"].read(), data[first:last + 1] + data, "UploadPartCopy")


def test_bucket_encryption(srv):
    s3 = setup(srv)
    with h.client_error("ServerSideEncryptionConfigurationNotFoundError", 404):
        s3.get_bucket_encryption(Bucket=PLAIN)
    s3.put_bucket_encryption(Bucket=PLAIN, ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}, "BucketKeyEnabled": True}]})
    rules = s3.get_bucket_encryption(Bucket=PLAIN)["ServerSideEncryptionConfiguration"]["Rules"]
    h.eq(rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"], "AES256", "Get answers the default")
    h.eq(rules[0]["BucketKeyEnabled"], True, "BucketKeyEnabled kept")
    r = s3.put_object(Bucket=PLAIN, Key="by-default", Body=b"x" * 1000)
    h.eq(r["ServerSideEncryption"], "AES256", "default applied on PUT")
    cr = s3.create_multipart_upload(Bucket=PLAIN, Key="mp-default")
    h.eq(cr["ServerSideEncryption"], "AES256", "default applied on multipart")
    s3.abort_multipart_upload(Bucket=PLAIN, Key="mp-default", UploadId=cr["UploadId"])
    # SSE-C wins over the default.
    r = s3.put_object(Bucket=PLAIN, Key="c-over-default", Body=b"x", SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())
    h.check("ServerSideEncryption" not in r, "SSE-C object, not SSE-S3")
    with h.client_error("NotImplemented", 501):
        s3.put_bucket_encryption(Bucket=PLAIN, ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}}]})
    with h.client_error("InvalidArgument", 400):
        s3.put_bucket_encryption(Bucket=PLAIN, ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256", "KMSMasterKeyID": "k"}}]})
    body = b"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>DES</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>"
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = srv.request("PUT", "/%s" % PLAIN, query="encryption=", headers={"Content-MD5": md5}, body=body)
    h.expect_s3_error(r.status, r.body, 400, "MalformedXML", "unknown algorithm")
    r = srv.request("PUT", "/%s" % PLAIN, query="encryption=", headers={"Content-MD5": md5}, body=b"<Nope/>")
    h.expect_s3_error(r.status, r.body, 400, ("InvalidDigest", "BadDigest", "MalformedXML"), "bad body")
    s3.delete_bucket_encryption(Bucket=PLAIN)
    with h.client_error("ServerSideEncryptionConfigurationNotFoundError", 404):
        s3.get_bucket_encryption(Bucket=PLAIN)
    r = s3.put_object(Bucket=PLAIN, Key="after-delete", Body=b"x")
    h.check("ServerSideEncryption" not in r, "no default after delete")
    h.eq(s3.get_object(Bucket=PLAIN, Key="by-default")["Body"].read(), b"x" * 1000, "still readable")


def test_awscli(srv):
    setup(srv)
    aws = h.require_tool("aws")
    tmp = tempfile.mkdtemp(prefix="shard-sse-cli-")
    atexit.register(shutil.rmtree, tmp, True)
    cfg = os.path.join(tmp, "config")
    with open(cfg, "w") as f:
        f.write("[default]\ns3 =\n    signature_version = s3v4\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=srv.access_key, AWS_SECRET_ACCESS_KEY=srv.secret_key, AWS_DEFAULT_REGION=h.REGION,
               AWS_CONFIG_FILE=cfg, AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "creds"), AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="")

    def run(*args, check_rc=True):
        return h.run_cmd([aws] + list(args) + ["--endpoint-url", srv.endpoint], env=env, check_rc=check_rc)

    data = marked(3 * PKG + 5, seed=30)
    src, out = os.path.join(tmp, "src.bin"), os.path.join(tmp, "out.bin")
    with open(src, "wb") as f:
        f.write(data)
    # Three invocations only: each costs seconds of Python start-up.
    run("s3", "cp", src, "s3://%s/cli-s3" % BUCKET, "--sse", "AES256")
    g = srv.client().get_object(Bucket=BUCKET, Key="cli-s3")
    h.eq(g["ServerSideEncryption"], "AES256", "aws s3 cp --sse AES256 stored SSE-S3")
    h.same_bytes(g["Body"].read(), data, "aws s3 cp --sse AES256")
    run("s3", "cp", src, "s3://%s/cli-c" % BUCKET, "--sse-c", "AES256", "--sse-c-key", KEY.decode())
    r = srv.request("GET", "/%s/cli-c" % BUCKET)
    h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "aws --sse-c object without the key")
    run("s3", "cp", "s3://%s/cli-c" % BUCKET, out, "--sse-c", "AES256", "--sse-c-key", KEY.decode())
    with open(out, "rb") as f:
        h.same_bytes(f.read(), data, "aws s3 cp --sse-c round trip")


def write_config(srv, text):
    with open(srv.config_path, "w") as f:
        f.write(text)


def test_restart_and_rotation(srv):
    s3 = setup(srv)
    data = marked(PKG + 1, seed=40)
    s3.put_object(Bucket=BUCKET, Key="old-key", Body=data, ServerSideEncryption="AES256")
    s3.put_object(Bucket=BUCKET, Key="moved-key", Body=data, ServerSideEncryption="AES256")
    s3.put_object(Bucket=BUCKET, Key="c-old", Body=data, SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())
    master = os.path.join(srv.data_dir, "keys", "sse-master.key")
    h.check(os.path.exists(master), "the master key was created in the data dir")
    h.eq(os.stat(master).st_mode & 0o777, 0o600, "key file mode")
    srv.stop()
    srv.start()
    s3 = srv.client()
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="old-key")["Body"].read(), data, "after restart")
    # Rotation: a new current key, the old one kept for reading.
    new_key = os.path.join(srv.tmp, "new.key")
    with open(new_key, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    os.chmod(new_key, 0o600)
    srv.stop()
    write_config(srv, CONFIG + "sse_master_key_file = %s\nsse_old_key_files = %s\n" % (new_key, master))
    srv.start()
    s3 = srv.client()
    h.same_bytes(s3.get_object(Bucket=BUCKET, Key="old-key")["Body"].read(), data, "old key readable after rotation")
    s3.put_object(Bucket=BUCKET, Key="new-key", Body=data, ServerSideEncryption="AES256")
    # A copy onto itself moves an object to the current key.
    s3.copy_object(Bucket=BUCKET, Key="moved-key", CopySource={"Bucket": BUCKET, "Key": "moved-key"}, ServerSideEncryption="AES256")
    # Without the old key, its objects fail (500), the new ones read.
    srv.stop()
    write_config(srv, CONFIG.replace("sse_c_allow_http = on\n", "") + "sse_master_key_file = %s\n" % new_key)
    srv.allowed_errors.append(re.compile(r"is not loaded"))
    srv.start()
    r = srv.request("GET", "/%s/old-key" % BUCKET)
    h.expect_s3_error(r.status, r.body, 500, "InternalError", "object of a key no longer loaded")
    h.same_bytes(srv.client().get_object(Bucket=BUCKET, Key="new-key")["Body"].read(), data, "new key")
    h.same_bytes(srv.client().get_object(Bucket=BUCKET, Key="moved-key")["Body"].read(), data, "re-encrypted by the self-copy")
    # SSE-C over plain HTTP is refused without sse_c_allow_http.
    r = srv.request("GET", "/%s/c-old" % BUCKET, headers=ssec())
    h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "SSE-C over plain HTTP")
    h.check(b"secure connection" in r.body, "the message says why: %r" % r.body)
    srv.stop()
    # A key file readable by others: the server refuses to start.
    os.chmod(new_key, 0o644)
    p = subprocess.run([srv.binary, "--listen", "127.0.0.1:0", "--data", srv.data_dir, "--config", srv.config_path],
                       capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, SHARDSTORE_ACCESS_KEY=srv.access_key, SHARDSTORE_SECRET_KEY=srv.secret_key))
    h.check(p.returncode != 0, "started with a world-readable key file")
    h.check(b"readable by group or others" in p.stderr, "says why: %r" % p.stderr[-500:])
    os.chmod(new_key, 0o600)
    # No key file in a directory others can read: no key is made, SSE-S3 is refused
    # (501), SSE-C still works.
    open_dir = os.path.join(srv.tmp, "open")
    os.mkdir(open_dir)
    os.chmod(open_dir, 0o755)
    write_config(srv, CONFIG + "sse_master_key_file = %s\n" % os.path.join(open_dir, "m.key"))
    srv.start()
    h.check(not os.path.exists(os.path.join(open_dir, "m.key")), "no key made in a directory others read")
    r = srv.request("PUT", "/%s/no-key" % BUCKET, headers={"x-amz-server-side-encryption": "AES256"}, body=b"x")
    h.expect_s3_error(r.status, r.body, 501, "NotImplemented", "SSE-S3 without a master key")
    h.same_bytes(srv.client().get_object(Bucket=BUCKET, Key="c-old", SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())["Body"].read(), data, "SSE-C without a master key")
    srv.stop()
    write_config(srv, CONFIG)
    srv.start()


if __name__ == "__main__":
    h.main([
        test_sse_s3,
        test_sse_c,
        test_plaintext_never_on_disk,
        test_flipped_bit,
        test_large_body,
        test_pipelined_put,
        test_lanes,
        test_multipart,
        test_copy,
        test_bucket_encryption,
        test_awscli,
        test_restart_and_rotation,
    ], config=CONFIG)
