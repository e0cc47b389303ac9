"""test_sse_tiers.py: encrypted objects in the tiers (issue 15: "lifecycle
tiers keep working on encrypted objects").

An encrypted object moves to a tier like any other: the tier stores its
packages (ciphertext and tags) as they are, and GET reads them back through
the tier and decrypts only the packages a Range touches.

- SSE-S3 and SSE-C objects, single PUT and multipart, moved to COLD by
  x-amz-storage-class and by a lifecycle Transition: HEAD, GET, Ranges
  across packages (small ones and ones past the 512 KiB pipeline
  threshold), partNumber, byte for byte; the plaintext marker is never in
  the cold dir (the same search finds a plain cold object's marker); scrub
  is clean; a flipped bit of the cold copy is an error, never other bytes.
- Copies of cold encrypted objects that change the encryption (SSE-C to
  SSE-S3, SSE-S3 to plain, plain cold to SSE-C), UploadPartCopy from a cold
  SSE-C source, and a move back to STANDARD.
- The remote tier (a second shardstore): SSE-S3 and SSE-C objects
  transitioned to it read back; the remote's volumes never hold the marker.
"""
import base64
import hashlib
import json
import os
import re
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness as h  # noqa: E402

PKG = 65536
MIB = 1 << 20
MARKER = b"PLAINTEXT-MARKER-c0ld42"
KEY = b"0123456789abcdef0123456789abcdef"
NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
BASE = ("volume_size = 64M\nmax_volumes = 2\nlifecycle_day_seconds = 1\nlifecycle_interval_s = 0\n"
        "sse_c_allow_http = on\nmin_part_size = 64K\n")
CK = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=KEY.decode())
SRC_CK = dict(CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=KEY.decode())


def marked(n, seed=0):
    """n bytes of random data with the marker every 4 KiB."""
    data = bytearray(h.random_bytes(n, seed=seed))
    for off in range(0, max(n - len(MARKER), 0), 4096):
        data[off:off + len(MARKER)] = MARKER
    return bytes(data)


def files_under(top):
    for root, _, files in os.walk(top):
        for f in files:
            yield os.path.join(root, f)


def grep_dir(top, needle):
    for p in files_under(top):
        with open(p, "rb") as f:
            while True:
                chunk = f.read(8 << 20)
                if not chunk:
                    break
                if needle in chunk:
                    return p
    return None


def snapshot(top):
    out = {}
    for p in files_under(top):
        if os.path.basename(p).startswith("vol"):
            with open(p, "rb") as f:
                out[p] = f.read()
    return out


def changed_range(before, after):
    """(path, first, end) of the bytes a write changed in one volume."""
    for p, now in after.items():
        old = before.get(p, b"")
        if len(old) < len(now):
            old = old + b"\0" * (len(now) - len(old))
        diff = [i for i in range(0, len(now), 4096) if old[i:i + 4096] != now[i:i + 4096]]
        if diff:
            return p, diff[0], min(diff[-1] + 4096, len(now))
    return None


def flip(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x10]))
        f.flush()
        os.fsync(f.fileno())


def put_multipart(s3, bucket, key, parts, **kw):
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, **kw)["UploadId"]
    part_kw = CK if "SSECustomerKey" in kw else {}
    done = []
    for i, p in enumerate(parts):
        e = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=i + 1, Body=p, **part_kw)["ETag"]
        done.append({"PartNumber": i + 1, "ETag": e})
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                        MultipartUpload={"Parts": done})


def check_reads(s3, bucket, key, body, cls, what, parts=None, **kw):
    hd = s3.head_object(Bucket=bucket, Key=key, **kw)
    h.eq(hd.get("StorageClass"), cls if cls != "STANDARD" else None, "%s: storage class" % what)
    h.eq(hd["ContentLength"], len(body), "%s: length" % what)
    h.same_bytes(s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read(), body, "%s: GET" % what)
    n = len(body)
    for a, b in ((0, 0), (PKG - 3, PKG + 2), (n // 3, n // 3 + 3 * PKG), (5, 700 * 1024),
                 (n - 2 * PKG - 1, n - 1), (n - 1, n - 1)):
        a, b = max(a, 0), min(b, n - 1)
        g = s3.get_object(Bucket=bucket, Key=key, Range="bytes=%d-%d" % (a, b), **kw)
        h.same_bytes(g["Body"].read(), body[a:b + 1], "%s: Range %d-%d" % (what, a, b))
    off = 0
    for i, p in enumerate(parts or []):
        g = s3.get_object(Bucket=bucket, Key=key, PartNumber=i + 1, **kw)
        h.same_bytes(g["Body"].read(), p, "%s: partNumber=%d" % (what, i + 1))
        off += len(p)


def run_pass(srv, bucket):
    r = srv.request("POST", "/_/lifecycle/run", query="bucket=" + bucket, timeout=120)
    h.eq(r.status, 200, "lifecycle run (%r)" % r.body[:300])
    return json.loads(r.body)


def put_lifecycle(srv, bucket, cls, prefix=""):
    body = ("<LifecycleConfiguration %s><Rule><ID>t</ID><Status>Enabled</Status><Filter><Prefix>%s"
            "</Prefix></Filter><Transition><Days>1</Days><StorageClass>%s</StorageClass>"
            "</Transition></Rule></LifecycleConfiguration>" % (NS, prefix, cls)).encode()
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = srv.request("PUT", "/" + bucket, query="lifecycle", headers={"Content-MD5": md5}, body=body)
    h.eq(r.status, 200, "put lifecycle (%r)" % r.body[:300])


def test_cold(srv):
    srv.allowed_errors.append(re.compile(r"cold tier: block \d+ fails its checksum"))
    s3 = srv.client()
    s3.create_bucket(Bucket="enc-cold")
    cold_dir = os.path.join(srv.data_dir, "cold")
    single = marked(20 * PKG + 77, seed=1)
    parts = [marked(3 * PKG + 1000, seed=2), marked(PKG + 17, seed=3), marked(9 * PKG + 5, seed=4)]
    whole = b"".join(parts)
    # x-amz-storage-class on PUT and Complete moves them after the commit.
    before = snapshot(cold_dir)
    s3.put_object(Bucket="enc-cold", Key="s3", Body=single, ServerSideEncryption="AES256", StorageClass="COLD")
    where = changed_range(before, snapshot(cold_dir))
    s3.put_object(Bucket="enc-cold", Key="c", Body=single, StorageClass="COLD", **CK)
    put_multipart(s3, "enc-cold", "mp-s3", parts, ServerSideEncryption="AES256", StorageClass="COLD")
    put_multipart(s3, "enc-cold", "mp-c", parts, StorageClass="COLD", **CK)
    # And by a lifecycle Transition.
    s3.put_object(Bucket="enc-cold", Key="t/s3", Body=single, ServerSideEncryption="AES256")
    s3.put_object(Bucket="enc-cold", Key="t/c", Body=single, **CK)
    put_lifecycle(srv, "enc-cold", "COLD", "t/")
    time.sleep(2.1)
    st = run_pass(srv, "enc-cold")
    h.eq(st["objects_transitioned"], 2, "encrypted objects transitioned (%r)" % st)
    for key, kw in (("s3", {}), ("c", CK), ("t/s3", {}), ("t/c", CK)):
        check_reads(s3, "enc-cold", key, single, "COLD", key, **kw)
    for key, kw in (("mp-s3", {}), ("mp-c", CK)):
        check_reads(s3, "enc-cold", key, whole, "COLD", key, parts=parts, **kw)
    r = srv.request("GET", "/enc-cold/c")
    h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "a cold SSE-C object still needs its key")
    # The cold tier holds ciphertext only; the same search finds a plain cold object's marker.
    h.check(grep_dir(cold_dir, MARKER) is None, "the plaintext marker is in %s" % grep_dir(cold_dir, MARKER))
    control = h.random_bytes(100 * 1024, seed=9) + b"CONTROL-" + MARKER + h.random_bytes(1000, seed=10)
    s3.put_object(Bucket="enc-cold", Key="plain", Body=control, StorageClass="COLD")
    h.check(grep_dir(cold_dir, b"CONTROL-" + MARKER) is not None, "a plain cold object's bytes are found")
    rep = json.loads(srv.request("POST", "/_/scrub").body)
    h.eq(rep["bad_blocks"], 0, "scrub of the cold encrypted objects (%r)" % rep)

    # Copies that change the encryption read the cold source through its tier.
    s3.copy_object(Bucket="enc-cold", Key="c-to-s3", CopySource={"Bucket": "enc-cold", "Key": "c"},
                   ServerSideEncryption="AES256", **SRC_CK)
    check_reads(s3, "enc-cold", "c-to-s3", single, "STANDARD", "cold SSE-C -> SSE-S3")
    s3.copy_object(Bucket="enc-cold", Key="s3-to-plain-cold", CopySource={"Bucket": "enc-cold", "Key": "mp-s3"},
                   StorageClass="COLD")
    check_reads(s3, "enc-cold", "s3-to-plain-cold", whole, "COLD", "cold SSE-S3 -> plain COLD")
    s3.copy_object(Bucket="enc-cold", Key="plain-to-c", CopySource={"Bucket": "enc-cold", "Key": "plain"}, **CK)
    check_reads(s3, "enc-cold", "plain-to-c", control, "STANDARD", "cold plain -> SSE-C", **CK)
    up = s3.create_multipart_upload(Bucket="enc-cold", Key="upc", ServerSideEncryption="AES256")["UploadId"]
    first, last = PKG - 50, 7 * PKG + 20
    r1 = s3.upload_part_copy(Bucket="enc-cold", Key="upc", UploadId=up, PartNumber=1,
                             CopySource={"Bucket": "enc-cold", "Key": "c"},
                             CopySourceRange="bytes=%d-%d" % (first, last), **SRC_CK)
    s3.complete_multipart_upload(Bucket="enc-cold", Key="upc", UploadId=up, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": r1["CopyPartResult"]["ETag"]}]})
    h.same_bytes(s3.get_object(Bucket="enc-cold", Key="upc")["Body"].read(), single[first:last + 1],
                 "UploadPartCopy from a cold SSE-C source")
    # Back to STANDARD: the packages move to the hot volumes as they are.
    s3.copy_object(Bucket="enc-cold", Key="mp-c", CopySource={"Bucket": "enc-cold", "Key": "mp-c"},
                   StorageClass="STANDARD", **CK, **SRC_CK)
    check_reads(s3, "enc-cold", "mp-c", whole, "STANDARD", "mp-c back to STANDARD", parts=parts, **CK)

    # A flipped bit of the cold copy: an error, never other bytes.
    h.check(where is not None, "the cold copy of s3 was found")
    path, start, end = where
    mid = start + (end - start) // 2
    flip(path, mid)
    is_cut = False
    got = b""
    try:
        r = srv.request("GET", "/enc-cold/s3")
        is_cut = r.status != 200
        got = r.body if r.status == 200 else b""
    except (OSError, h.http.client.HTTPException):
        is_cut = True
    h.check(is_cut or len(got) < len(single), "a corrupt cold copy must not read whole (%d bytes)" % len(got))
    h.check(single.startswith(got), "what was sent is the true prefix")
    g = s3.get_object(Bucket="enc-cold", Key="s3", Range="bytes=0-%d" % (PKG - 1))
    h.same_bytes(g["Body"].read(), single[:PKG], "a package before the flip reads")
    flip(path, mid)
    h.same_bytes(s3.get_object(Bucket="enc-cold", Key="s3")["Body"].read(), single, "restored")


def test_remote(_shared):
    remote = h.Server(config="volume_size = 64M\nmax_volumes = 2\n", tag="sse-remote")
    srv = None
    try:
        remote.start()
        remote.client().create_bucket(Bucket="tier-remote")
        cfg = (BASE + "remote_tier_class = WARM\nremote_tier_endpoint = %s\n"
               "remote_tier_bucket = tier-remote\nremote_tier_prefix = t/\n"
               "remote_tier_access_key = %s\nremote_tier_secret_key = %s\n"
               % (remote.endpoint, remote.access_key, remote.secret_key))
        srv = h.Server(config=cfg, tag="sse-remote-main",
                       allowed_errors=[re.compile(r"does not authenticate")])
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="enc-remote")
        single = marked(12 * PKG + 5, seed=20)
        parts = [marked(2 * PKG + 9, seed=21), marked(PKG + 1, seed=22)]
        s3.put_object(Bucket="enc-remote", Key="w/s3", Body=single, ServerSideEncryption="AES256")
        s3.put_object(Bucket="enc-remote", Key="w/c", Body=single, **CK)
        put_multipart(s3, "enc-remote", "w/mp", parts, ServerSideEncryption="AES256")
        put_lifecycle(srv, "enc-remote", "WARM", "w/")
        time.sleep(2.1)
        st = run_pass(srv, "enc-remote")
        h.eq(st["objects_transitioned"], 3, "moved to the remote tier (%r)" % st)
        check_reads(s3, "enc-remote", "w/s3", single, "WARM", "remote SSE-S3")
        check_reads(s3, "enc-remote", "w/c", single, "WARM", "remote SSE-C", **CK)
        check_reads(s3, "enc-remote", "w/mp", b"".join(parts), "WARM", "remote multipart", parts=parts)
        h.check(grep_dir(remote.data_dir, MARKER) is None, "the remote holds no plaintext")
        problems = srv.stop()
        if problems:
            raise h.Failure("\n".join(problems))
    finally:
        if srv:
            srv.kill()
            srv.cleanup()
        remote.kill()
        remote.cleanup()


if __name__ == "__main__":
    h.main([test_cold, test_remote], config=BASE)
