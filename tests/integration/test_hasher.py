"""test_hasher.py: uploads hashed behind the receive path (server/hasher.c).

Bodies from 256 KiB on are copied on the event loop and hashed on hashing
threads, up to 8 streams per thread in the lanes of one multi-buffer MD5.

(a) 16 concurrent PUTs and UploadParts of sizes around the block and chunk
    edges (0, 1, 63, 64, 65 bytes up to a few MiB), framed plain, signed
    aws-chunked and unsigned aws-chunked with CRC32 / CRC64NVME trailers:
    every ETag is the MD5 of the bytes, every checksum right, every object
    reads back, and the large ones went through the lanes (metrics).
(b) Digests computed on the hashing threads are still checked: a wrong
    Content-MD5 or trailer checksum on a large body is BadDigest and
    nothing is stored.
(c) An upload whose hashing falls behind (test_hash_delay_ms) pauses its
    connection instead of holding its event-loop thread: with one such
    thread, GETs and small PUTs on other connections finish while it waits,
    and it completes with the right ETag.
(d) With the default connection_memory a large body is read in large
    pieces (each socket read costs a poll and a callback: at 16K they were
    7.6 KiB each, ~138,000 per GiB), and the lane runs are counted.
(e) A plain body is hashed in the storage writer's staging buffers, which
    must not be reused before their hashing is done: 32 concurrent PUTs and
    UploadParts of distinct random bodies (plain, Content-MD5, checksum
    headers, aws-chunked with trailers, SSE-S3 beside them, whose plaintext
    is still copied), with the hashing slowed so the receivers are paused
    and wait for their buffers; every ETag and checksum is the body's.
"""

import base64
import concurrent.futures
import hashlib
import hmac
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, expect_s3_error, same_bytes  # noqa: E402

BUCKET = "hashb"
KIB = 1024
MIB = 1024 * 1024
# Python's CRC64NVME and CRC32C (harness.py) are table loops: ~1 s per MiB.
SLOW_CRC_MAX = 320 * KIB
SIZES = [0, 1, 63, 64, 65, 256 * KIB - 1, 256 * KIB, 256 * KIB + 1, 300 * KIB + 7, 1 * MIB, 1 * MIB + 63,
         2 * MIB + 65, 3 * MIB + 1, 64 * KIB * 7 + 5, 4 * MIB - 64, 5 * MIB + 13]


def _signing_key(secret, day, region="us-east-1", service="s3"):
    k = hmac.new(("AWS4" + secret).encode(), day.encode(), hashlib.sha256).digest()
    k = hmac.new(k, region.encode(), hashlib.sha256).digest()
    k = hmac.new(k, service.encode(), hashlib.sha256).digest()
    return hmac.new(k, b"aws4_request", hashlib.sha256).digest()


def put_signed_chunked(srv, path, data, chunk_len=64 * KIB, query=""):
    """A STREAMING-AWS4-HMAC-SHA256-PAYLOAD PUT (signed chunks, no trailer)."""
    chunks = [data[i:i + chunk_len] for i in range(0, len(data), chunk_len)] + [b""]
    enc_len = sum(len("%x;chunk-signature=" % len(c)) + 64 + 2 + len(c) + 2 for c in chunks)
    headers = {
        "Content-Encoding": "aws-chunked",
        "x-amz-decoded-content-length": str(len(data)),
        "Content-Length": str(enc_len),
    }
    h = srv.sign("PUT", path, query, headers, b"", payload_hash="STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
    amz_date = h["X-Amz-Date"]
    prev = h["Authorization"].split("Signature=")[1].strip()
    key = _signing_key(srv.secret_key, amz_date[:8])
    scope = "%s/us-east-1/s3/aws4_request" % amz_date[:8]
    parts = []
    for c in chunks:
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev, hashlib.sha256(b"").hexdigest(), hashlib.sha256(c).hexdigest()])
        prev = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        parts.append(b"%x;chunk-signature=%s\r\n" % (len(c), prev.encode()) + c + b"\r\n")
    return srv.request("PUT", path, query=query, headers=h, body=b"".join(parts), sign=False)


def put_unsigned_trailer(srv, path, data, algo, value=None, chunk_len=128 * KIB, query=""):
    """A STREAMING-UNSIGNED-PAYLOAD-TRAILER PUT with an x-amz-checksum trailer."""
    value = value or harness.checksum_b64(algo, data)
    name = "x-amz-checksum-" + algo.lower()
    body = b"".join(b"%x\r\n" % len(data[i:i + chunk_len]) + data[i:i + chunk_len] + b"\r\n" for i in range(0, len(data), chunk_len))
    body += b"0\r\n" + name.encode() + b":" + value.encode() + b"\r\n\r\n"
    h = {
        "Content-Encoding": "aws-chunked",
        "x-amz-decoded-content-length": str(len(data)),
        "Content-Length": str(len(body)),
        "x-amz-trailer": name,
    }
    h = srv.sign("PUT", path, query, h, b"", payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    return srv.request("PUT", path, query=query, headers=h, body=body, sign=False)


def put_plain(srv, path, data, algo=None, query=""):
    """A PUT with the payload SHA-256 signed and, optionally, a checksum header."""
    h = {}
    if algo:
        h["x-amz-checksum-" + algo.lower()] = harness.checksum_b64(algo, data)
    return srv.request("PUT", path, query=query, headers=h, body=data)


def etag_of(r):
    return (r.header("ETag") or "").strip('"')


def test_concurrent_lanes(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=BUCKET)
    upload_id = s3.create_multipart_upload(Bucket=BUCKET, Key="mp", ChecksumAlgorithm="CRC32")["UploadId"]
    lanes_before = srv.metric("shardstore_hash_streams_lane_total") + srv.metric("shardstore_hash_streams_plain_total")
    kinds = ["plain", "signed", "crc32", "crc64nvme"]
    jobs = []
    for i, size in enumerate(SIZES):
        kind = kinds[i % 4]
        if kind == "crc64nvme" and size > SLOW_CRC_MAX:
            kind = "crc32"  # the harness's CRC64NVME is pure Python
        jobs.append(("obj-%d" % i, harness.random_bytes(size, seed=100 + i), kind))

    def one(job):
        key, data, kind = job
        path = "/%s/%s" % (BUCKET, key)
        if kind == "plain":
            algo = ("CRC32C" if len(data) <= SLOW_CRC_MAX else "SHA1") if len(data) % 2 else None
            r = put_plain(srv, path, data, algo)
        elif kind == "signed":
            r = put_signed_chunked(srv, path, data)
        elif kind == "crc32":
            r = put_unsigned_trailer(srv, path, data, "CRC32")
        else:
            r = put_unsigned_trailer(srv, path, data, "CRC64NVME")
        return key, data, kind, r

    def part(n):
        data = harness.random_bytes(MIB + n * 4099, seed=500 + n)
        q = "partNumber=%d&uploadId=%s" % (n, upload_id)
        r = put_unsigned_trailer(srv, "/%s/mp" % BUCKET, data, "CRC32", query=q)
        return n, data, r

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs) + 3) as ex:
        futs = [ex.submit(one, j) for j in jobs]
        part_futs = [ex.submit(part, n) for n in (1, 2, 3)]
        results = [f.result() for f in futs]
        parts = [f.result() for f in part_futs]
    for key, data, kind, r in results:
        eq(r.status, 200, "%s (%d bytes, %s): %r" % (key, len(data), kind, r.body[:300]))
        eq(etag_of(r), harness.md5_hex(data), "ETag of %s (%d bytes, %s)" % (key, len(data), kind))
        if kind in ("crc32", "crc64nvme"):
            eq(r.header("x-amz-checksum-" + kind), harness.checksum_b64(kind.upper(), data), "checksum of %s" % key)
        got = s3.get_object(Bucket=BUCKET, Key=key)
        eq(got["ETag"].strip('"'), harness.md5_hex(data), "stored ETag of %s" % key)
        same_bytes(got["Body"].read(), data, "%s (%d bytes)" % (key, len(data)))
    done = []
    for n, data, r in sorted(parts, key=lambda p: p[0]):
        eq(r.status, 200, "part %d: %r" % (n, r.body[:300]))
        eq(etag_of(r), harness.md5_hex(data), "ETag of part %d" % n)
        eq(r.header("x-amz-checksum-crc32"), harness.checksum_b64("CRC32", data), "CRC32 of part %d" % n)
        done.append({"PartNumber": n, "ETag": r.header("ETag"), "ChecksumCRC32": r.header("x-amz-checksum-crc32")})
    s3.complete_multipart_upload(Bucket=BUCKET, Key="mp", UploadId=upload_id, MultipartUpload={"Parts": done})
    whole = b"".join(p[1] for p in sorted(parts, key=lambda p: p[0]))
    same_bytes(s3.get_object(Bucket=BUCKET, Key="mp")["Body"].read(), whole, "multipart object")
    big = sum(1 for s in SIZES if s >= 256 * KIB) + len(parts)
    streams = srv.metric("shardstore_hash_streams_lane_total") + srv.metric("shardstore_hash_streams_plain_total") - lanes_before
    check(streams >= big, "%d uploads of 256 KiB or more, %d went through the hashing threads" % (big, streams))
    check(srv.metric("shardstore_hash_streams_lane_total") >= 8, "the multi-buffer lanes were never used")


def test_digests_checked(srv):
    s3 = srv.client()
    data = harness.random_bytes(3 * MIB + 5, seed=7)
    wrong_md5 = base64.b64encode(hashlib.md5(data + b"x").digest()).decode()
    r = srv.request("PUT", "/%s/bad-md5" % BUCKET, headers={"Content-MD5": wrong_md5}, body=data)
    expect_s3_error(r.status, r.body, 400, "BadDigest", "a wrong Content-MD5 on a large PUT")
    wrong_crc = harness.checksum_b64("CRC32", data + b"x")
    r = put_unsigned_trailer(srv, "/%s/bad-crc" % BUCKET, data, "CRC32", value=wrong_crc)
    expect_s3_error(r.status, r.body, 400, "BadDigest", "a wrong CRC32 trailer on a large PUT")
    for key in ("bad-md5", "bad-crc"):
        r = srv.request("HEAD", "/%s/%s" % (BUCKET, key))
        eq(r.status, 404, "%s stored despite a wrong digest" % key)
    right_md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    r = srv.request("PUT", "/%s/good-md5" % BUCKET, headers={"Content-MD5": right_md5}, body=data)
    eq(r.status, 200, "the right Content-MD5: %r" % r.body[:300])


def test_paused_upload_does_not_block():
    # 20 ms per 64 KiB slice: 8 MiB take ~2.5 s to hash, far behind the
    # receiver, which pauses once 2 MiB are queued.
    cfg = "http_threads = 1\ntest_hash_delay_ms = 20\n"
    with harness.Server(config=cfg, tag="hash-c") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket=BUCKET)
        small = harness.random_bytes(100000, seed=3)
        s3.put_object(Bucket=BUCKET, Key="small", Body=small)
        data = harness.random_bytes(8 * MIB, seed=4)
        done = threading.Event()
        res = []

        def slow_put():
            try:
                res.append(put_unsigned_trailer(srv, "/%s/big" % BUCKET, data, "CRC32"))
            except Exception as e:  # reported below
                res.append(e)
            done.set()

        t = threading.Thread(target=slow_put)
        t.start()
        # Until it pauses (or, when it would block instead, sends for a while).
        deadline = time.monotonic() + 3
        while srv.metric("shardstore_hash_pauses_total") < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        n = 0
        for i in range(10):
            got = s3.get_object(Bucket=BUCKET, Key="small", Range="bytes=%d-%d" % (i * 1000, i * 1000 + 999))["Body"].read()
            same_bytes(got, small[i * 1000:i * 1000 + 1000], "range %d" % i)
            s3.put_object(Bucket=BUCKET, Key="s%d" % i, Body=b"y" * 100)
            n += 2
        check(not done.is_set(), "%d requests on the one event-loop thread waited for the paused upload" % n)
        check(srv.metric("shardstore_hash_pauses_total") >= 1, "the big upload never paused")
        t.join(timeout=60)
        check(res and not isinstance(res[0], Exception), "the paused upload failed: %r" % res)
        eq(res[0].status, 200, "the paused upload: %r" % res[0].body[:300])
        eq(etag_of(res[0]), harness.md5_hex(data), "ETag of the paused upload")
        same_bytes(s3.get_object(Bucket=BUCKET, Key="big")["Body"].read(), data, "the paused upload's object")


def test_body_pieces():
    with harness.Server(tag="hash-d") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket=BUCKET)
        data = harness.random_bytes(8 * MIB, seed=9)
        pieces = srv.metric("shardstore_body_pieces_total")
        r = srv.request("PUT", "/%s/big" % BUCKET, body=data)
        eq(r.status, 200, "PUT of 8 MiB: %r" % r.body[:300])
        eq(etag_of(r), harness.md5_hex(data), "ETag of the 8 MiB PUT")
        pieces = srv.metric("shardstore_body_pieces_total") - pieces
        check(0 < pieces <= len(data) // (16 * KIB),
              "8 MiB arrived in %d pieces (%.1f KiB each), want 16 KiB or more each" % (pieces, len(data) / 1024 / max(pieces, 1)))
        runs = srv.metric("shardstore_hash_lane_runs_total")
        slices = srv.metric("shardstore_hash_lane_slices_total")
        check(0 < runs <= slices <= 8 * runs, "lane runs %d, slices %d" % (runs, slices))


def test_lanes_and_digests():
    with harness.Server(config="min_part_size = 1048576\n", tag="hash-ab") as srv:
        test_concurrent_lanes(srv)
        test_digests_checked(srv)


def test_lent_buffers():
    # 1 ms per 64 KiB run: the hashing lags the receivers, so buffers stay
    # lent, writers pause and wait for them.
    cfg = "http_threads = 2\ntest_hash_delay_ms = 1\nmin_part_size = 1048576\n"
    with harness.Server(config=cfg, tag="hash-e") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket=BUCKET)
        upload_id = s3.create_multipart_upload(Bucket=BUCKET, Key="mp")["UploadId"]
        pauses = srv.metric("shardstore_hash_pauses_total")
        kinds = ["plain", "md5", "crc32c", "sha256", "crc32", "signed", "sse", "part"]
        jobs = []
        for i in range(32):
            size = 256 * KIB + (i * 524287 + 4096 * (i % 3)) % (6 * MIB) + (i % 5) * 17
            jobs.append((i, kinds[i % len(kinds)], harness.random_bytes(size, seed=9000 + i)))

        def one(job):
            i, kind, data = job
            path = "/%s/lent-%d" % (BUCKET, i)
            if kind == "plain":
                r = srv.request("PUT", path, body=data)
            elif kind == "md5":
                r = srv.request("PUT", path, headers={"Content-MD5": base64.b64encode(hashlib.md5(data).digest()).decode()}, body=data)
            elif kind in ("crc32c", "sha256"):
                algo = "CRC32C" if kind == "crc32c" else "SHA256"
                if algo == "CRC32C" and len(data) > SLOW_CRC_MAX:
                    algo = "CRC32"
                r = put_plain(srv, path, data, algo)
            elif kind == "crc32":
                r = put_unsigned_trailer(srv, path, data, "CRC32")
            elif kind == "signed":
                r = put_signed_chunked(srv, path, data)
            elif kind == "sse":
                r = srv.request("PUT", path, headers={"x-amz-server-side-encryption": "AES256"}, body=data)
            else:
                q = "partNumber=%d&uploadId=%s" % (i // len(kinds) + 1, upload_id)
                r = put_unsigned_trailer(srv, "/%s/mp" % BUCKET, data, "CRC32", query=q)
            return i, kind, data, r

        with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as ex:
            results = [f.result() for f in [ex.submit(one, j) for j in jobs]]
        parts = []
        for i, kind, data, r in results:
            eq(r.status, 200, "%d (%s, %d bytes): %r" % (i, kind, len(data), r.body[:300]))
            eq(etag_of(r), harness.md5_hex(data), "ETag of %d (%s, %d bytes)" % (i, kind, len(data)))
            for algo in ("crc32", "crc32c", "sha256"):
                v = r.header("x-amz-checksum-" + algo)
                if v:
                    eq(v, harness.checksum_b64(algo.upper(), data), "%s of %d (%s)" % (algo, i, kind))
            if kind == "part":
                parts.append((i // len(kinds) + 1, data, r.header("ETag")))
            else:
                got = s3.get_object(Bucket=BUCKET, Key="lent-%d" % i)
                eq(got["ETag"].strip('"'), harness.md5_hex(data), "stored ETag of %d" % i)
                same_bytes(got["Body"].read(), data, "%d (%s, %d bytes)" % (i, kind, len(data)))
        parts.sort(key=lambda p: p[0])
        s3.complete_multipart_upload(Bucket=BUCKET, Key="mp", UploadId=upload_id,
                                     MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, _, e in parts]})
        got = s3.get_object(Bucket=BUCKET, Key="mp")
        want = hashlib.md5(b"".join(hashlib.md5(d).digest() for _, d, _ in parts)).hexdigest() + "-%d" % len(parts)
        eq(got["ETag"].strip('"'), want, "multipart ETag")
        same_bytes(got["Body"].read(), b"".join(d for _, d, _ in parts), "multipart object")
        check(srv.metric("shardstore_hash_pauses_total") > pauses, "no receiver was ever paused for its buffers")


TESTS = [test_lanes_and_digests, test_paused_upload_does_not_block, test_body_pieces, test_lent_buffers]

if __name__ == "__main__":
    harness.main(TESTS, shared_server=False)
