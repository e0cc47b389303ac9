"""mp_util.py: helpers shared by the multipart integration tests.

Space accounting, S3 multipart ETags and checksums, full (paged) listings of
parts and uploads. Imported next to harness.py (found through SHARD_SRCDIR).
"""

import base64
import hashlib
import os
import sys
import time
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402

MIB = 1 << 20
ALIGN = 4096
MIN_PART = 5 * MIB
FREE = "shardstore_storage_free_bytes"
PENDING = "shardstore_storage_pending_bytes"
TOTAL = "shardstore_storage_total_bytes"


def align_up(n, a=ALIGN):
    return (n + a - 1) // a * a


def space_of(sizes):
    """Bytes the allocator uses for parts (or single-extent objects) of these
    sizes: each rounded up to 4096."""
    return sum(align_up(s) for s in sizes)


# --------------------------------------------------------------------------
# ETags and checksums


def mp_etag(parts):
    """The S3 ETag (with quotes) of a multipart object made of 'parts' (bytes)."""
    h = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    return '"%s-%d"' % (h, len(parts))


def mp_etag_from_md5s(md5s):
    h = hashlib.md5(b"".join(md5s)).hexdigest()
    return '"%s-%d"' % (h, len(md5s))


def part_etag(data):
    return '"%s"' % hashlib.md5(data).hexdigest()


def crc32_raw(data):
    return (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")


def crc32_b64(data):
    return base64.b64encode(crc32_raw(data)).decode()


def crc64nvme_b64(data):
    return base64.b64encode(harness.crc64nvme(data).to_bytes(8, "big")).decode()


def composite_crc32(parts):
    """S3's COMPOSITE CRC32: CRC32 of the concatenated binary part CRC32s,
    base64, then '-N'."""
    return "%s-%d" % (crc32_b64(b"".join(crc32_raw(p) for p in parts)), len(parts))


# --------------------------------------------------------------------------
# space


def settled(srv, timeout=15.0):
    """Waits until no freed bytes are pending (readers done) and returns the
    metrics then."""
    deadline = time.monotonic() + timeout
    m = srv.metrics()
    while m.get(PENDING, 0) != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
        m = srv.metrics()
    if m.get(PENDING, 0) != 0:
        raise harness.Failure("%s is still %d after %.0f s with no reader active" % (PENDING, m[PENDING], timeout))
    for name in (FREE, TOTAL):
        if name not in m:
            raise harness.Failure("/_/metrics has no %s" % name)
    return m


def free_settled(srv, timeout=15.0):
    return settled(srv, timeout)[FREE]


def expect_free(srv, want, what, timeout=15.0):
    """Polls until free bytes (with nothing pending) equal 'want'; fails with
    the difference otherwise."""
    deadline = time.monotonic() + timeout
    got = None
    while True:
        m = srv.metrics()
        got = m.get(FREE)
        if got == want and m.get(PENDING, 0) == 0:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    raise harness.Failure(
        "%s: %s is %s (pending %s), expected %d (difference %+d bytes)"
        % (what, FREE, got, m.get(PENDING), want, int((got or 0) - want))
    )


# --------------------------------------------------------------------------
# listings


def all_parts(s3, bucket, key, upload_id, page=1000):
    """Every part of an upload (following NextPartNumberMarker)."""
    out = []
    marker = 0
    for _ in range(10001):
        r = s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id, MaxParts=page, PartNumberMarker=marker)
        out += r.get("Parts", [])
        if not r.get("IsTruncated"):
            return out
        marker = r["NextPartNumberMarker"]
    raise harness.Failure("ListParts never stopped being truncated")


def all_uploads(s3, bucket, **kw):
    """(uploads, common prefixes) of a bucket, following the markers."""
    uploads, prefixes = [], []
    args = dict(kw)
    for _ in range(100000):
        r = s3.list_multipart_uploads(Bucket=bucket, **args)
        uploads += r.get("Uploads", [])
        prefixes += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        if not r.get("IsTruncated"):
            return uploads, prefixes
        args["KeyMarker"] = r.get("NextKeyMarker", "")
        args["UploadIdMarker"] = r.get("NextUploadIdMarker", "")
    raise harness.Failure("ListMultipartUploads never stopped being truncated")


def upload_ids(s3, bucket, **kw):
    return [(u["Key"], u["UploadId"]) for u in all_uploads(s3, bucket, **kw)[0]]


def upload_parts(s3, bucket, key, upload_id, datas, first=1):
    """Uploads datas[i] as part first+i; returns the Complete part list."""
    out = []
    for i, d in enumerate(datas):
        n = first + i
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=n, Body=d)
        harness.eq(r["ETag"], part_etag(d), "ETag of part %d (%d bytes)" % (n, len(d)))
        out.append({"PartNumber": n, "ETag": r["ETag"]})
    return out


def stream_md5(body, chunk=8 * MIB):
    h = hashlib.md5()
    n = 0
    while True:
        b = body.read(chunk)
        if not b:
            break
        h.update(b)
        n += len(b)
    return h.hexdigest(), n


def write_random_file(path, size, chunk=8 * MIB):
    """Writes 'size' random bytes to 'path'; returns the md5 hex."""
    h = hashlib.md5()
    with open(path, "wb") as f:
        left = size
        while left:
            b = os.urandom(min(chunk, left))
            f.write(b)
            h.update(b)
            left -= len(b)
    return h.hexdigest()


def file_md5(path, chunk=8 * MIB):
    h = hashlib.md5()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def start_stream(srv, method, path, query, total_len, headers=None):
    """Sends the headers of an UNSIGNED-PAYLOAD request with a 'total_len'
    body and returns the connection; the caller sends the body and reads the
    response."""
    h = srv.sign(method, path, query, dict(headers or {}), b"", payload_hash="UNSIGNED-PAYLOAD")
    conn = srv.connect(timeout=30)
    conn.putrequest(method, path + ("?" + query if query else ""), skip_host=True, skip_accept_encoding=True)
    for k, v in h.items():
        conn.putheader(k, v)
    conn.putheader("Content-Length", str(total_len))
    conn.endheaders()
    return conn


def finish_response(conn):
    """Reads the response of a streamed request: (status, body)."""
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body
