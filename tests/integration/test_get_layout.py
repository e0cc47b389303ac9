"""test_get_layout.py: large objects are laid out, and served, as one span.

A GET whose bytes lie in one span of a volume is sent zero-copy (sendfile);
one that is not is read through a buffer on the event thread. Metrics
shardstore_get_zero_copy_total / shardstore_get_streamed_total say which.

(a) A single PUT larger than the writer's reservation step (grown in place)
    is one span.
(b) A multipart upload of equal parts and a shorter last part, uploaded out
    of order, is one span once completed (each part written at its slot of
    the upload's run), ranges across part boundaries are right and sent
    zero-copy, and all of it still holds after a restart.
(c) Parts re-uploaded (the slot is taken, so the part goes elsewhere) still
    read back right, whole and in ranges across the boundaries.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import eq, same_bytes  # noqa: E402

MIB = 1 << 20
ZC = "shardstore_get_zero_copy_total"
STREAMED = "shardstore_get_streamed_total"
CONFIG = "volume_size = 256M\nmin_part_size = 1\ninline_max = 0\n"
PART = MIB
LAST = 300001


def get_path(srv, key, rng=None):
    """GETs 'key' (or a Range) and returns (body, 'zero_copy' | 'streamed')."""
    z0, s0 = srv.metric(ZC), srv.metric(STREAMED)
    hdr = {"Range": "bytes=%d-%d" % rng} if rng else {}
    r = srv.request("GET", "/lay/" + key, headers=hdr)
    eq(r.status, 206 if rng else 200, "GET %s %r" % (key, rng))
    dz, ds = srv.metric(ZC) - z0, srv.metric(STREAMED) - s0
    eq(dz + ds, 1, "one GET counted once")
    return r.body, "zero_copy" if dz else "streamed"


def upload(s3, key, parts, order):
    """Uploads 'parts' (bytes) in 'order' (1-based numbers, repeats allowed:
    a repeated number is uploaded again with the same bytes) and completes."""
    uid = s3.create_multipart_upload(Bucket="lay", Key=key)["UploadId"]
    etags = {}
    for n in order:
        etags[n] = s3.upload_part(Bucket="lay", Key=key, UploadId=uid, PartNumber=n, Body=parts[n - 1])["ETag"]
    s3.complete_multipart_upload(Bucket="lay", Key=key, UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]} for n in sorted(etags)]})


def check_ranges(srv, key, data, want_path):
    for first, last in [(PART - 5, PART + 4),                 # parts 1-2 boundary
                        (3 * PART + 7, 6 * PART + 100),       # across three parts
                        (len(data) - LAST - 1, len(data) - 1)]:  # into the short last part
        body, path = get_path(srv, key, (first, last))
        same_bytes(body, data[first:last + 1], "%s bytes %d-%d" % (key, first, last))
        if want_path:
            eq(path, want_path, "%s bytes %d-%d sent" % (key, first, last))


def test_layout():
    with harness.Server(config=CONFIG, tag="get-layout") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="lay")

        # (a) 40 MiB: more than two 16 MiB reservation steps.
        big = harness.random_bytes(40 * MIB, seed=1)
        eq(srv.request("PUT", "/lay/single", body=big).status, 200, "single PUT")
        body, path = get_path(srv, "single")
        same_bytes(body, big, "single PUT read back")
        eq(path, "zero_copy", "a 40 MiB single PUT is sent")

        # (b) 8 equal parts and a short one, out of order.
        parts = [harness.random_bytes(PART, seed=10 + i) for i in range(8)] + [harness.random_bytes(LAST, seed=30)]
        data = b"".join(parts)
        upload(s3, "mp", parts, [4, 2, 9, 7, 1, 8, 3, 6, 5])
        body, path = get_path(srv, "mp")
        same_bytes(body, data, "multipart read back")
        eq(path, "zero_copy", "a completed upload of equal parts is sent")
        check_ranges(srv, "mp", data, "zero_copy")

        # (c) parts uploaded again: right bytes whatever the layout.
        parts2 = [harness.random_bytes(PART, seed=50 + i) for i in range(8)] + [harness.random_bytes(LAST, seed=70)]
        data2 = b"".join(parts2)
        upload(s3, "again", parts2, [1, 2, 3, 2, 4, 5, 6, 7, 8, 9, 5, 1])
        body, _ = get_path(srv, "again")
        same_bytes(body, data2, "re-uploaded parts read back")
        check_ranges(srv, "again", data2, None)

        srv.restart()
        body, path = get_path(srv, "mp")
        same_bytes(body, data, "multipart after a restart")
        eq(path, "zero_copy", "the completed upload after a restart is sent")
        check_ranges(srv, "again", data2, None)


if __name__ == "__main__":
    harness.main([test_layout], shared_server=False)
