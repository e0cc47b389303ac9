"""test_multipart.py: multipart uploads through boto3 (default configuration).

boto3 1.43 sends a CRC32 checksum with every UploadPart; nothing is disabled.
Covers the ETag and checksums of completed objects, the S3 errors of
UploadPart and CompleteMultipartUpload (and that a failed Complete leaves the
upload usable), part replacement, ListParts / ListMultipartUploads paging,
GET by part number and ranges across parts, UploadPartCopy, space accounting
(abort and unused parts give their space back, to the byte), BucketNotEmpty
and boto3's managed transfer. One server for the whole script; the space
assertions are deltas within a test.
"""

import hashlib
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
import mp_util as mp  # noqa: E402
from harness import check, client_error, eq, expect_s3_error, same_bytes  # noqa: E402

MIB = mp.MIB
CONFIG = "volume_size = 2G\nmax_volumes = 1\n"


def bucket(s3, name):
    s3.create_bucket(Bucket=name)
    return name


def get_all(s3, b, k, **kw):
    return s3.get_object(Bucket=b, Key=k, **kw)["Body"].read()


def complete(s3, b, k, uid, parts, **kw):
    return s3.complete_multipart_upload(Bucket=b, Key=k, UploadId=uid, MultipartUpload={"Parts": parts}, **kw)


def listed(s3, b, uid):
    return uid in [u["UploadId"] for u in mp.all_uploads(s3, b)[0]]


# --------------------------------------------------------------------------
# the happy path: ETag, bytes, checksums


def test_complete_etag_and_bytes(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-basic")
    parts = [harness.random_bytes(5 * MIB, seed=1), harness.random_bytes(5 * MIB, seed=2), harness.random_bytes(MIB, seed=3)]
    uid = s3.create_multipart_upload(Bucket=b, Key="obj", ContentType="application/x-test", Metadata={"color": "blue"})["UploadId"]
    check(uid, "CreateMultipartUpload returned no UploadId")
    done = mp.upload_parts(s3, b, "obj", uid, parts)
    r = complete(s3, b, "obj", uid, done)
    want_etag = mp.mp_etag(parts)
    eq(r["ETag"], want_etag, "CompleteMultipartUpload ETag (md5 of the part md5s, -3)")
    eq(r["Bucket"], b, "Complete <Bucket>")
    eq(r["Key"], "obj", "Complete <Key>")
    whole = b"".join(parts)
    g = s3.get_object(Bucket=b, Key="obj")
    same_bytes(g["Body"].read(), whole, "multipart object")
    eq(g["ETag"], want_etag, "GET ETag")
    eq(g["ContentLength"], len(whole), "GET Content-Length")
    eq(g["ContentType"], "application/x-test", "Content-Type given at CreateMultipartUpload")
    eq(g["Metadata"], {"color": "blue"}, "user metadata given at CreateMultipartUpload")
    h = s3.head_object(Bucket=b, Key="obj")
    eq(h["ETag"], want_etag, "HEAD ETag")
    eq(h["ContentLength"], len(whole), "HEAD Content-Length")
    # The upload is gone once completed.
    check(not listed(s3, b, uid), "completed upload still listed")
    with client_error("NoSuchUpload", 404):
        s3.list_parts(Bucket=b, Key="obj", UploadId=uid)
    # ListObjectsV2 shows the multipart ETag and size.
    objs = s3.list_objects_v2(Bucket=b)["Contents"]
    eq([(o["Key"], o["ETag"], o["Size"]) for o in objs], [("obj", want_etag, len(whole))], "ListObjectsV2 of the completed object")


def test_unaligned_parts(srv):
    """Part sizes that are not multiples of 4096 in the middle of the object:
    the reader must not read the padding of a part's last block."""
    s3 = srv.client()
    b = bucket(s3, "mp-unaligned")
    sizes = [5 * MIB + 1, 5 * MIB + 4095, 12345]
    parts = [harness.random_bytes(n, seed=10 + i) for i, n in enumerate(sizes)]
    free0 = mp.free_settled(srv)
    uid = s3.create_multipart_upload(Bucket=b, Key="odd")["UploadId"]
    done = mp.upload_parts(s3, b, "odd", uid, parts)
    r = complete(s3, b, "odd", uid, done)
    eq(r["ETag"], mp.mp_etag(parts), "ETag of the unaligned multipart object")
    whole = b"".join(parts)
    same_bytes(get_all(s3, b, "odd"), whole, "unaligned multipart object")
    mp.expect_free(srv, free0 - mp.space_of(sizes), "free bytes after completing parts of %s bytes" % sizes)
    # Ranges across both boundaries.
    b1, b2 = sizes[0], sizes[0] + sizes[1]
    for first, last in [(b1 - 1, b1), (b1 - 5000, b1 + 5000), (b2 - 1, b2), (b2 - 4096, len(whole) - 1), (0, len(whole) - 1), (b1 - 3, b2 + 3)]:
        got = get_all(s3, b, "odd", Range="bytes=%d-%d" % (first, last))
        same_bytes(got, whole[first:last + 1], "Range bytes=%d-%d of the unaligned object" % (first, last))


def test_checksum_crc32_composite(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-crc32c")
    parts = [harness.random_bytes(5 * MIB, seed=21), harness.random_bytes(5 * MIB, seed=22), harness.random_bytes(MIB, seed=23)]
    r = s3.create_multipart_upload(Bucket=b, Key="comp", ChecksumAlgorithm="CRC32")
    uid = r["UploadId"]
    eq(r.get("ChecksumAlgorithm"), "CRC32", "CreateMultipartUpload x-amz-checksum-algorithm")
    done = []
    for i, d in enumerate(parts):
        pr = s3.upload_part(Bucket=b, Key="comp", UploadId=uid, PartNumber=i + 1, Body=d, ChecksumAlgorithm="CRC32")
        eq(pr.get("ChecksumCRC32"), mp.crc32_b64(d), "UploadPart %d x-amz-checksum-crc32" % (i + 1))
        done.append({"PartNumber": i + 1, "ETag": pr["ETag"], "ChecksumCRC32": pr["ChecksumCRC32"]})
    lp = s3.list_parts(Bucket=b, Key="comp", UploadId=uid)
    eq(lp.get("ChecksumAlgorithm"), "CRC32", "ListParts ChecksumAlgorithm")
    eq([p.get("ChecksumCRC32") for p in lp["Parts"]], [mp.crc32_b64(d) for d in parts], "ListParts part CRC32s")
    cr = complete(s3, b, "comp", uid, done)
    want = mp.composite_crc32(parts)
    eq(cr.get("ChecksumCRC32"), want, "Complete ChecksumCRC32 (COMPOSITE)")
    eq(cr.get("ChecksumType"), "COMPOSITE", "Complete ChecksumType")
    h = s3.head_object(Bucket=b, Key="comp", ChecksumMode="ENABLED")
    eq(h.get("ChecksumCRC32"), want, "HEAD ChecksumCRC32 of a COMPOSITE CRC32 upload")
    check(h["ChecksumCRC32"].endswith("-3"), "COMPOSITE checksum %r does not end in -3" % h["ChecksumCRC32"])
    eq(h.get("ChecksumType"), "COMPOSITE", "HEAD ChecksumType")
    g = s3.get_object(Bucket=b, Key="comp", ChecksumMode="ENABLED")
    eq(g.get("ChecksumCRC32"), want, "GET ChecksumCRC32")
    same_bytes(g["Body"].read(), b"".join(parts), "COMPOSITE CRC32 object")
    eq(h["ETag"], mp.mp_etag(parts), "ETag with checksums")


def test_checksum_crc32_full_object(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-crc32f")
    parts = [harness.random_bytes(5 * MIB + 3, seed=31), harness.random_bytes(5 * MIB, seed=32), harness.random_bytes(MIB + 1, seed=33)]
    whole = b"".join(parts)
    r = s3.create_multipart_upload(Bucket=b, Key="full", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    uid = r["UploadId"]
    eq(r.get("ChecksumType"), "FULL_OBJECT", "CreateMultipartUpload x-amz-checksum-type")
    done = []
    for i, d in enumerate(parts):
        pr = s3.upload_part(Bucket=b, Key="full", UploadId=uid, PartNumber=i + 1, Body=d, ChecksumAlgorithm="CRC32")
        eq(pr.get("ChecksumCRC32"), mp.crc32_b64(d), "UploadPart %d CRC32" % (i + 1))
        done.append({"PartNumber": i + 1, "ETag": pr["ETag"], "ChecksumCRC32": pr["ChecksumCRC32"]})
    cr = complete(s3, b, "full", uid, done)
    want = mp.crc32_b64(whole)
    eq(cr.get("ChecksumCRC32"), want, "Complete ChecksumCRC32 (FULL_OBJECT: CRC32 of the whole object)")
    eq(cr.get("ChecksumType"), "FULL_OBJECT", "Complete ChecksumType")
    h = s3.head_object(Bucket=b, Key="full", ChecksumMode="ENABLED")
    eq(h.get("ChecksumCRC32"), want, "HEAD ChecksumCRC32 of a FULL_OBJECT upload")
    eq(h.get("ChecksumType"), "FULL_OBJECT", "HEAD ChecksumType")
    # botocore validates a full-object CRC32 against the body it reads.
    g = s3.get_object(Bucket=b, Key="full", ChecksumMode="ENABLED")
    same_bytes(g["Body"].read(), whole, "FULL_OBJECT CRC32 object")
    eq(g.get("ChecksumCRC32"), want, "GET ChecksumCRC32")
    eq(h["ETag"], mp.mp_etag(parts), "ETag of the FULL_OBJECT upload")


def test_checksum_crc64nvme_full_object(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-crc64")
    # CRC64NVME is computed in Python here (no awscrt): keep the parts small.
    parts = [harness.random_bytes(5 * MIB, seed=41), harness.random_bytes(77777, seed=42)]
    whole = b"".join(parts)
    part_crcs = [mp.crc64nvme_b64(d) for d in parts]
    want = mp.crc64nvme_b64(whole)
    r = s3.create_multipart_upload(Bucket=b, Key="nv", ChecksumAlgorithm="CRC64NVME", ChecksumType="FULL_OBJECT")
    uid = r["UploadId"]
    eq(r.get("ChecksumAlgorithm"), "CRC64NVME", "CreateMultipartUpload algorithm")
    done = []
    for i, d in enumerate(parts):
        # An explicit checksum value: botocore sends it as is.
        pr = s3.upload_part(Bucket=b, Key="nv", UploadId=uid, PartNumber=i + 1, Body=d, ChecksumCRC64NVME=part_crcs[i])
        eq(pr.get("ChecksumCRC64NVME"), part_crcs[i], "UploadPart %d CRC64NVME" % (i + 1))
        done.append({"PartNumber": i + 1, "ETag": pr["ETag"], "ChecksumCRC64NVME": part_crcs[i]})
    cr = complete(s3, b, "nv", uid, done)
    eq(cr.get("ChecksumCRC64NVME"), want, "Complete ChecksumCRC64NVME (CRC64NVME of the whole object)")
    eq(cr.get("ChecksumType"), "FULL_OBJECT", "Complete ChecksumType")
    h = s3.head_object(Bucket=b, Key="nv", ChecksumMode="ENABLED")
    eq(h.get("ChecksumCRC64NVME"), want, "HEAD ChecksumCRC64NVME")
    eq(h.get("ChecksumType"), "FULL_OBJECT", "HEAD ChecksumType (CRC64NVME)")
    same_bytes(get_all(s3, b, "nv"), whole, "CRC64NVME object")
    # A wrong part checksum is refused (BadDigest) and leaves no part.
    uid2 = s3.create_multipart_upload(Bucket=b, Key="nv2", ChecksumAlgorithm="CRC64NVME", ChecksumType="FULL_OBJECT")["UploadId"]
    with client_error(("BadDigest", "InvalidRequest"), 400):
        s3.upload_part(Bucket=b, Key="nv2", UploadId=uid2, PartNumber=1, Body=parts[1], ChecksumCRC64NVME=part_crcs[0])
    eq(mp.all_parts(s3, b, "nv2", uid2), [], "parts after a refused UploadPart")
    s3.abort_multipart_upload(Bucket=b, Key="nv2", UploadId=uid2)


# --------------------------------------------------------------------------
# errors


def test_part_number_limits(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-partnum")
    uid = s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    for n in (0, 10001):
        with client_error("InvalidArgument", 400):
            s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=n, Body=b"x")
    # Not a number at all.
    r = srv.request("PUT", "/%s/k" % b, "partNumber=abc&uploadId=%s" % uid, body=b"x")
    expect_s3_error(r.status, r.body, 400, "InvalidArgument", "UploadPart partNumber=abc")
    eq(mp.all_parts(s3, b, "k", uid), [], "parts after refused part numbers")
    # The limits themselves are fine.
    for n in (1, 10000):
        s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=n, Body=b"part %d" % n)
    eq([(p["PartNumber"], p["Size"]) for p in mp.all_parts(s3, b, "k", uid)], [(1, 6), (10000, 10)], "parts 1 and 10000")
    s3.abort_multipart_upload(Bucket=b, Key="k", UploadId=uid)


def test_complete_errors_leave_upload_usable(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-errors")
    k = "victim"
    parts = [harness.random_bytes(5 * MIB, seed=51), harness.random_bytes(5 * MIB, seed=52), harness.random_bytes(100, seed=53)]
    uid = s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
    done = mp.upload_parts(s3, b, k, uid, parts)
    bad_etag = '"%s"' % hashlib.md5(b"not a part").hexdigest()
    cases = [
        ("wrong ETag", "InvalidPart", [done[0], {"PartNumber": 2, "ETag": bad_etag}, done[2]]),
        ("missing part 4", "InvalidPart", done[:2] + [{"PartNumber": 4, "ETag": done[2]["ETag"]}]),
        ("missing part 7 after the parts", "InvalidPart", [done[0], {"PartNumber": 7, "ETag": done[1]["ETag"]}]),
        ("ETag of another part", "InvalidPart", [done[0], {"PartNumber": 2, "ETag": done[0]["ETag"]}, done[2]]),
        ("descending order", "InvalidPartOrder", [done[1], done[0], done[2]]),
        ("duplicate part number", "InvalidPartOrder", [done[0], done[0], done[1], done[2]]),
    ]
    for what, code, lst in cases:
        try:
            with client_error(code, 400):
                complete(s3, b, k, uid, lst)
        except harness.Failure as e:
            raise harness.Failure("Complete with %s: %s" % (what, e))
        check(listed(s3, b, uid), "upload no longer listed after the failed Complete (%s)" % what)
        eq([p["PartNumber"] for p in mp.all_parts(s3, b, k, uid)], [1, 2, 3], "parts after the failed Complete (%s)" % what)
        with client_error("NoSuchKey", 404):
            s3.get_object(Bucket=b, Key=k)
    # Malformed and empty Complete bodies (raw: boto3 cannot send them).
    path = "/%s/%s" % (b, k)
    q = "uploadId=%s" % uid
    for what, body in [
        ("truncated XML", b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"),
        ("not XML", b"this is not xml"),
        ("no parts", b"<CompleteMultipartUpload></CompleteMultipartUpload>"),
        ("empty body", b""),
    ]:
        r = srv.request("POST", path, q, body=body)
        expect_s3_error(r.status, r.body, 400, "MalformedXML", "Complete with %s" % what)
        check(listed(s3, b, uid), "upload no longer listed after Complete with %s" % what)
    # Finally the right list completes it.
    r = complete(s3, b, k, uid, done)
    eq(r["ETag"], mp.mp_etag(parts), "ETag after the failed attempts")
    same_bytes(get_all(s3, b, k), b"".join(parts), "object completed after failed attempts")
    check(not listed(s3, b, uid), "upload listed after completion")


def test_entity_too_small(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-small")
    k = "small"
    small = [harness.random_bytes(MIB, seed=61), harness.random_bytes(MIB, seed=62)]
    uid = s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
    done = mp.upload_parts(s3, b, k, uid, small)
    with client_error("EntityTooSmall", 400):
        complete(s3, b, k, uid, done)
    # 5 MiB - 1 is still too small for a non-last part.
    almost = harness.random_bytes(5 * MIB - 1, seed=63)
    done[0] = mp.upload_parts(s3, b, k, uid, [almost])[0]
    with client_error("EntityTooSmall", 400):
        complete(s3, b, k, uid, done)
    check(listed(s3, b, uid), "upload not listed after EntityTooSmall")
    # A single small part is a valid (last) part.
    big = harness.random_bytes(5 * MIB, seed=64)
    done[0] = mp.upload_parts(s3, b, k, uid, [big])[0]
    r = complete(s3, b, k, uid, done)
    eq(r["ETag"], mp.mp_etag([big, small[1]]), "ETag after replacing the small part")
    same_bytes(get_all(s3, b, k), big + small[1], "object after EntityTooSmall")
    # One small part alone completes.
    uid = s3.create_multipart_upload(Bucket=b, Key="one")["UploadId"]
    done = mp.upload_parts(s3, b, "one", uid, [b"tiny"])
    eq(complete(s3, b, "one", uid, done)["ETag"], mp.mp_etag([b"tiny"]), "ETag of a one-part upload")
    eq(get_all(s3, b, "one"), b"tiny", "one-part object")


def test_no_such_upload(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-nosuch")
    real = s3.create_multipart_upload(Bucket=b, Key="real")["UploadId"]
    s3.upload_part(Bucket=b, Key="real", UploadId=real, PartNumber=1, Body=b"abc")
    fake_same_len = ("0" * len(real)) if real != "0" * len(real) else "1" * len(real)
    for what, key, uid in [
        ("unknown id", "real", fake_same_len),
        ("garbage id", "real", "nope"),
        ("another key's id", "other", real),
    ]:
        try:
            with client_error("NoSuchUpload", 404):
                s3.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=1, Body=b"x")
            with client_error("NoSuchUpload", 404):
                complete(s3, b, key, uid, [{"PartNumber": 1, "ETag": mp.part_etag(b"abc")}])
            with client_error("NoSuchUpload", 404):
                s3.list_parts(Bucket=b, Key=key, UploadId=uid)
            with client_error("NoSuchUpload", 404):
                s3.abort_multipart_upload(Bucket=b, Key=key, UploadId=uid)
        except harness.Failure as e:
            raise harness.Failure("%s (%r on key %r): %s" % (what, uid, key, e))
    # Nothing above touched the real upload.
    eq([(p["PartNumber"], p["Size"]) for p in mp.all_parts(s3, b, "real", real)], [(1, 3)], "real upload's parts")
    s3.abort_multipart_upload(Bucket=b, Key="real", UploadId=real)
    # An aborted id is unknown from then on.
    with client_error("NoSuchUpload", 404):
        s3.upload_part(Bucket=b, Key="real", UploadId=real, PartNumber=2, Body=b"x")
    with client_error("NoSuchUpload", 404):
        s3.abort_multipart_upload(Bucket=b, Key="real", UploadId=real)
    with client_error("NoSuchUpload", 404):
        complete(s3, b, "real", real, [{"PartNumber": 1, "ETag": mp.part_etag(b"abc")}])
    # CreateMultipartUpload in a missing bucket.
    with client_error("NoSuchBucket", 404):
        s3.create_multipart_upload(Bucket="mp-no-such-bucket", Key="k")


# --------------------------------------------------------------------------
# parts and space


def test_reupload_replaces_part(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-replace")
    k = "rep"
    free0 = mp.free_settled(srv)
    uid = s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
    first = harness.random_bytes(7 * MIB + 5, seed=71)
    mp.upload_parts(s3, b, k, uid, [first])
    mp.expect_free(srv, free0 - mp.align_up(len(first)), "free bytes after part 1 (%d bytes)" % len(first))
    second = harness.random_bytes(5 * MIB + 100, seed=72)
    mp.upload_parts(s3, b, k, uid, [second])
    ps = mp.all_parts(s3, b, k, uid)
    eq([(p["PartNumber"], p["Size"], p["ETag"]) for p in ps], [(1, len(second), mp.part_etag(second))], "ListParts after re-uploading part 1")
    mp.expect_free(srv, free0 - mp.align_up(len(second)), "free bytes after replacing part 1 (the old part's space must be freed)")
    tail = harness.random_bytes(999, seed=73)
    done = mp.upload_parts(s3, b, k, uid, [second, tail])  # same bytes again: same ETag
    mp.expect_free(srv, free0 - mp.space_of([len(second), len(tail)]), "free bytes after re-uploading identical part 1")
    r = complete(s3, b, k, uid, done)
    eq(r["ETag"], mp.mp_etag([second, tail]), "ETag of the object with the replaced part")
    same_bytes(get_all(s3, b, k), second + tail, "object with the replaced part")
    mp.expect_free(srv, free0 - mp.space_of([len(second), len(tail)]), "free bytes after completion")
    # Completing with the old part's ETag is impossible (after completion
    # the upload is gone; check on a new upload).
    uid = s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
    old = mp.upload_parts(s3, b, k, uid, [first])[0]
    mp.upload_parts(s3, b, k, uid, [second])
    with client_error("InvalidPart", 400):
        complete(s3, b, k, uid, [old])
    s3.abort_multipart_upload(Bucket=b, Key=k, UploadId=uid)
    mp.expect_free(srv, free0 - mp.space_of([len(second), len(tail)]), "free bytes after aborting the second upload")


def test_abort_frees_space(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-abort")
    free0 = mp.free_settled(srv)
    uid = s3.create_multipart_upload(Bucket=b, Key="ab")["UploadId"]
    sizes = [5 * MIB, 6 * MIB + 17, 4097, 1]
    datas = [harness.random_bytes(n, seed=80 + i) for i, n in enumerate(sizes)]
    mp.upload_parts(s3, b, "ab", uid, datas)
    mp.expect_free(srv, free0 - mp.space_of(sizes), "free bytes with 4 parts uploaded")
    r = s3.abort_multipart_upload(Bucket=b, Key="ab", UploadId=uid)
    eq(r["ResponseMetadata"]["HTTPStatusCode"], 204, "AbortMultipartUpload status")
    mp.expect_free(srv, free0, "free bytes after abort")
    check(not listed(s3, b, uid), "aborted upload still listed")
    with client_error("NoSuchUpload", 404):
        s3.list_parts(Bucket=b, Key="ab", UploadId=uid)
    with client_error("NoSuchKey", 404):
        s3.get_object(Bucket=b, Key="ab")
    # An empty upload aborts too.
    uid = s3.create_multipart_upload(Bucket=b, Key="ab")["UploadId"]
    s3.abort_multipart_upload(Bucket=b, Key="ab", UploadId=uid)
    mp.expect_free(srv, free0, "free bytes after aborting an empty upload")


def test_abort_while_reading_completed_object(srv):
    """Space freed while a reader is active waits in pending, then is free."""
    s3 = srv.client()
    b = bucket(s3, "mp-pending")
    free0 = mp.free_settled(srv)
    parts = [harness.random_bytes(5 * MIB, seed=91), harness.random_bytes(5 * MIB, seed=92)]
    uid = s3.create_multipart_upload(Bucket=b, Key="p")["UploadId"]
    complete(s3, b, "p", uid, mp.upload_parts(s3, b, "p", uid, parts))
    used = mp.space_of([len(p) for p in parts])
    mp.expect_free(srv, free0 - used, "free bytes after completion")
    g = s3.get_object(Bucket=b, Key="p")
    head = g["Body"].read(1000)
    s3.delete_object(Bucket=b, Key="p")
    m = srv.metrics()
    eq(m[mp.FREE] + m[mp.PENDING], free0, "free + pending bytes while the deleted multipart object is being read")
    rest = g["Body"].read()
    same_bytes(head + rest, b"".join(parts), "multipart object read across its deletion")
    g["Body"].close()
    mp.expect_free(srv, free0, "free bytes once the reader of the deleted object finished")


def test_complete_frees_unused_parts(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-unused")
    free0 = mp.free_settled(srv)
    sizes = [5 * MIB + 10, 5 * MIB + 20, 3 * MIB + 30, 5 * MIB]
    datas = [harness.random_bytes(n, seed=100 + i) for i, n in enumerate(sizes)]
    uid = s3.create_multipart_upload(Bucket=b, Key="u")["UploadId"]
    done = mp.upload_parts(s3, b, "u", uid, datas)
    mp.expect_free(srv, free0 - mp.space_of(sizes), "free bytes with 4 parts uploaded")
    # Complete with parts 1 and 3 (3 is last, may be small); 2 and 4 unused.
    r = complete(s3, b, "u", uid, [done[0], done[2]])
    eq(r["ETag"], mp.mp_etag([datas[0], datas[2]]), "ETag of parts 1+3")
    same_bytes(get_all(s3, b, "u"), datas[0] + datas[2], "object of parts 1+3")
    mp.expect_free(srv, free0 - mp.space_of([sizes[0], sizes[2]]), "free bytes after completing with parts 1 and 3 of 4 (unused parts 2 and 4 must be freed)")
    h = s3.head_object(Bucket=b, Key="u", PartNumber=2)
    eq(h["ContentLength"], sizes[2], "HEAD partNumber=2 of a 1+3 object is the former part 3")
    eq(h["ResponseMetadata"]["HTTPHeaders"].get("content-range"), "bytes %d-%d/%d" % (sizes[0], sizes[0] + sizes[2] - 1, sizes[0] + sizes[2]), "Content-Range of part 2")
    # Overwriting the key with a new multipart object frees the old one.
    uid = s3.create_multipart_upload(Bucket=b, Key="u")["UploadId"]
    done = mp.upload_parts(s3, b, "u", uid, [datas[3], b"end"])
    complete(s3, b, "u", uid, done)
    mp.expect_free(srv, free0 - mp.space_of([sizes[3], 3]), "free bytes after overwriting the multipart object")
    s3.delete_object(Bucket=b, Key="u")
    mp.expect_free(srv, free0, "free bytes after deleting it")


def test_bucket_not_empty(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-notempty")
    uid = s3.create_multipart_upload(Bucket=b, Key="pending")["UploadId"]
    s3.upload_part(Bucket=b, Key="pending", UploadId=uid, PartNumber=1, Body=b"data")
    # An object makes the bucket not empty; the upload stays.
    s3.put_object(Bucket=b, Key="obj", Body=b"o")
    with client_error("BucketNotEmpty", 409):
        s3.delete_bucket(Bucket=b)
    s3.list_parts(Bucket=b, Key="pending", UploadId=uid)
    s3.delete_object(Bucket=b, Key="obj")
    # Only uploads left: the delete aborts them, as S3 does.
    s3.delete_bucket(Bucket=b)
    names = [x["Name"] for x in s3.list_buckets()["Buckets"]]
    check(b not in names, "bucket still listed after DeleteBucket")
    # The upload did not survive its bucket: a re-created bucket is empty.
    s3.create_bucket(Bucket=b)
    eq(mp.all_uploads(s3, b), ([], []), "uploads of the re-created bucket")
    with client_error("NoSuchUpload", 404):
        s3.list_parts(Bucket=b, Key="pending", UploadId=uid)
    s3.delete_bucket(Bucket=b)


# --------------------------------------------------------------------------
# listings


def test_list_parts_paging(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-lparts")
    uid = s3.create_multipart_upload(Bucket=b, Key="lp")["UploadId"]
    datas = {n: harness.random_bytes(1000 + n, seed=110 + n) for n in (1, 2, 3, 5, 8)}
    for n, d in datas.items():
        s3.upload_part(Bucket=b, Key="lp", UploadId=uid, PartNumber=n, Body=d)
    got = []
    marker = 0
    pages = []
    for _ in range(10):
        r = s3.list_parts(Bucket=b, Key="lp", UploadId=uid, MaxParts=2, PartNumberMarker=marker)
        eq(r["UploadId"], uid, "ListParts UploadId")
        eq(r["MaxParts"], 2, "ListParts MaxParts")
        nums = [p["PartNumber"] for p in r.get("Parts", [])]
        pages.append(nums)
        got += r.get("Parts", [])
        if not r["IsTruncated"]:
            break
        eq(r["NextPartNumberMarker"], nums[-1], "NextPartNumberMarker")
        marker = r["NextPartNumberMarker"]
    eq(pages, [[1, 2], [3, 5], [8]], "ListParts pages of 2")
    eq([(p["PartNumber"], p["Size"], p["ETag"]) for p in got], [(n, len(d), mp.part_etag(d)) for n, d in sorted(datas.items())], "parts listed")
    for p in got:
        check(p.get("LastModified") is not None, "part %d lacks LastModified" % p["PartNumber"])
    r = s3.list_parts(Bucket=b, Key="lp", UploadId=uid, PartNumberMarker=5)
    eq([p["PartNumber"] for p in r["Parts"]], [8], "ListParts after marker 5")
    eq(r["IsTruncated"], False, "IsTruncated of the last page")
    r = s3.list_parts(Bucket=b, Key="lp", UploadId=uid, PartNumberMarker=4)
    eq([p["PartNumber"] for p in r["Parts"]], [5, 8], "ListParts after marker 4 (not a part)")
    r = s3.list_parts(Bucket=b, Key="lp", UploadId=uid, MaxParts=5)
    eq((len(r["Parts"]), r["IsTruncated"]), (5, False), "ListParts with MaxParts equal to the count")
    r = s3.list_parts(Bucket=b, Key="lp", UploadId=uid, PartNumberMarker=8)
    eq((r.get("Parts", []), r["IsTruncated"]), ([], False), "ListParts after the last part")
    s3.abort_multipart_upload(Bucket=b, Key="lp", UploadId=uid)


def test_list_uploads(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-luploads")
    keys = ["a/1", "a/2", "a/2", "b", "c/x/y", "c/z", "d"]
    created = []
    for k in keys:
        created.append((k, s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]))
    # S3 orders by key, then by initiation time for one key.
    want = sorted(created, key=lambda ku: (ku[0], created.index(ku)))
    got = mp.upload_ids(s3, b)
    eq(got, want, "ListMultipartUploads of the bucket")
    r = s3.list_multipart_uploads(Bucket=b)
    eq(r["IsTruncated"], False, "IsTruncated")
    for u in r["Uploads"]:
        check(u.get("Initiated") is not None, "upload %s lacks Initiated" % u["Key"])
    # Prefix.
    eq(mp.upload_ids(s3, b, Prefix="a/"), [ku for ku in want if ku[0].startswith("a/")], "Prefix a/")
    eq(mp.upload_ids(s3, b, Prefix="zz"), [], "Prefix zz")
    # Delimiter.
    ups, prefixes = mp.all_uploads(s3, b, Delimiter="/")
    eq([(u["Key"], u["UploadId"]) for u in ups], [ku for ku in want if "/" not in ku[0]], "Delimiter / uploads")
    eq(prefixes, ["a/", "c/"], "Delimiter / CommonPrefixes")
    ups, prefixes = mp.all_uploads(s3, b, Delimiter="/", Prefix="c/")
    eq([u["Key"] for u in ups], ["c/z"], "Prefix c/ Delimiter / uploads")
    eq(prefixes, ["c/x/"], "Prefix c/ Delimiter / CommonPrefixes")
    # Paging one at a time through the markers.
    pages = []
    args = {}
    for _ in range(20):
        r = s3.list_multipart_uploads(Bucket=b, MaxUploads=1, **args)
        eq(r["MaxUploads"], 1, "MaxUploads echoed")
        page = [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
        pages.append(page)
        if not r["IsTruncated"]:
            break
        eq((r["NextKeyMarker"], r["NextUploadIdMarker"]), page[-1], "NextKeyMarker/NextUploadIdMarker after page %d" % len(pages))
        args = {"KeyMarker": r["NextKeyMarker"], "UploadIdMarker": r["NextUploadIdMarker"]}
    eq(pages, [[ku] for ku in want], "pages of MaxUploads=1")
    # Pages of 3.
    ups, _ = mp.all_uploads(s3, b, MaxUploads=3)
    eq([(u["Key"], u["UploadId"]) for u in ups], want, "pages of MaxUploads=3")
    # KeyMarker alone: keys strictly after it.
    eq(mp.upload_ids(s3, b, KeyMarker="a/2"), [ku for ku in want if ku[0] > "a/2"], "KeyMarker a/2")
    # KeyMarker + UploadIdMarker: the rest of that key, then later keys.
    a2 = [ku for ku in want if ku[0] == "a/2"]
    eq(mp.upload_ids(s3, b, KeyMarker="a/2", UploadIdMarker=a2[0][1]), a2[1:] + [ku for ku in want if ku[0] > "a/2"], "KeyMarker a/2 + UploadIdMarker of its first upload")
    # Paging with a delimiter: common prefixes count as entries.
    seen_u, seen_p = mp.all_uploads(s3, b, Delimiter="/", MaxUploads=1)
    eq(([u["Key"] for u in seen_u], seen_p), (["b", "d"], ["a/", "c/"]), "Delimiter / with MaxUploads=1")
    # In-progress uploads are not objects.
    eq(s3.list_objects_v2(Bucket=b).get("Contents", []), [], "ListObjectsV2 with uploads in progress")
    eq(s3.list_objects_v2(Bucket=b, Delimiter="/").get("CommonPrefixes", []), [], "ListObjectsV2 CommonPrefixes with uploads in progress")
    eq(s3.list_objects(Bucket=b).get("Contents", []), [], "ListObjects (v1) with uploads in progress")
    for k, uid in created:
        with client_error("NoSuchKey", 404):
            s3.get_object(Bucket=b, Key=k)
        s3.abort_multipart_upload(Bucket=b, Key=k, UploadId=uid)
    eq(mp.upload_ids(s3, b), [], "uploads after aborting all")


# --------------------------------------------------------------------------
# reads


def test_get_part_number_and_ranges(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-partget")
    sizes = [5 * MIB, 5 * MIB + 7, 3 * MIB]
    parts = [harness.random_bytes(n, seed=120 + i) for i, n in enumerate(sizes)]
    whole = b"".join(parts)
    uid = s3.create_multipart_upload(Bucket=b, Key="pn")["UploadId"]
    complete(s3, b, "pn", uid, mp.upload_parts(s3, b, "pn", uid, parts))
    etag = mp.mp_etag(parts)
    off = 0
    for i, n in enumerate(sizes):
        pn = i + 1
        g = s3.get_object(Bucket=b, Key="pn", PartNumber=pn)
        eq(g["ResponseMetadata"]["HTTPStatusCode"], 206, "GET partNumber=%d status" % pn)
        eq(g.get("ContentRange"), "bytes %d-%d/%d" % (off, off + n - 1, len(whole)), "GET partNumber=%d Content-Range" % pn)
        eq(g.get("PartsCount"), 3, "GET partNumber=%d x-amz-mp-parts-count" % pn)
        eq(g["ContentLength"], n, "GET partNumber=%d Content-Length" % pn)
        eq(g["ETag"], etag, "GET partNumber=%d ETag (the object's)" % pn)
        same_bytes(g["Body"].read(), parts[i], "GET partNumber=%d body" % pn)
        h = s3.head_object(Bucket=b, Key="pn", PartNumber=pn)
        eq(h["ResponseMetadata"]["HTTPStatusCode"], 206, "HEAD partNumber=%d status" % pn)
        eq(h["ContentLength"], n, "HEAD partNumber=%d Content-Length" % pn)
        eq(h.get("PartsCount"), 3, "HEAD partNumber=%d PartsCount" % pn)
        eq(h["ResponseMetadata"]["HTTPHeaders"].get("content-range"), "bytes %d-%d/%d" % (off, off + n - 1, len(whole)), "HEAD partNumber=%d Content-Range" % pn)
        off += n
    with client_error("InvalidPartNumber", 400):
        s3.get_object(Bucket=b, Key="pn", PartNumber=4)
    with client_error(("InvalidPartNumber", "400"), 400):
        s3.head_object(Bucket=b, Key="pn", PartNumber=4)
    with client_error("InvalidArgument", 400):
        s3.get_object(Bucket=b, Key="pn", PartNumber=0)
    # A single-part (plain) object: part 1 is the object, part 2 is not there.
    s3.put_object(Bucket=b, Key="plain", Body=b"plain object")
    g = s3.get_object(Bucket=b, Key="plain", PartNumber=1)
    eq(g["Body"].read(), b"plain object", "plain object partNumber=1")
    with client_error("InvalidPartNumber", 400):
        s3.get_object(Bucket=b, Key="plain", PartNumber=2)
    # Ranges across part boundaries.
    b1, b2 = sizes[0], sizes[0] + sizes[1]
    ranges = [
        "bytes=%d-%d" % (b1 - 1, b1),
        "bytes=%d-%d" % (b1 - 100000, b2 + 100000),
        "bytes=%d-%d" % (b2 - 3, b2 + 3),
        "bytes=%d-" % (b2 - 1),
        "bytes=-%d" % (sizes[2] + 5),
        "bytes=%d-%d" % (1, len(whole) - 2),
        "bytes=%d-%d" % (b1, b2 - 1),
        "bytes=%d-%d" % (b1 - MIB - 3, b1 + MIB + 3),
    ]
    for rg in ranges:
        spec = rg[len("bytes="):]
        a, z = spec.split("-")
        if a == "":
            first, last = len(whole) - int(z), len(whole) - 1
        else:
            first, last = int(a), (int(z) if z else len(whole) - 1)
        g = s3.get_object(Bucket=b, Key="pn", Range=rg)
        eq(g["ResponseMetadata"]["HTTPStatusCode"], 206, "Range %s status" % rg)
        eq(g.get("ContentRange"), "bytes %d-%d/%d" % (first, last, len(whole)), "Range %s Content-Range" % rg)
        same_bytes(g["Body"].read(), whole[first:last + 1], "Range %s" % rg)


def test_upload_part_copy(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-copy")
    src = harness.random_bytes(12 * MIB + 321, seed=130)
    s3.put_object(Bucket=b, Key="src", Body=src)
    uid = s3.create_multipart_upload(Bucket=b, Key="dst")["UploadId"]
    pieces = [(0, 5 * MIB - 1), (5 * MIB, 12 * MIB + 320), (100, 199)]
    done = []
    for i, (a, z) in enumerate(pieces):
        r = s3.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=i + 1, CopySource={"Bucket": b, "Key": "src"}, CopySourceRange="bytes=%d-%d" % (a, z))
        eq(r["CopyPartResult"]["ETag"], mp.part_etag(src[a:z + 1]), "UploadPartCopy %d ETag" % (i + 1))
        done.append({"PartNumber": i + 1, "ETag": r["CopyPartResult"]["ETag"]})
    ps = mp.all_parts(s3, b, "dst", uid)
    eq([p["Size"] for p in ps], [z - a + 1 for a, z in pieces], "sizes of the copied parts")
    want_parts = [src[a:z + 1] for a, z in pieces]
    r = complete(s3, b, "dst", uid, done)
    eq(r["ETag"], mp.mp_etag(want_parts), "ETag of the object made by UploadPartCopy")
    same_bytes(get_all(s3, b, "dst"), b"".join(want_parts), "object made by UploadPartCopy")
    # Copy from a multipart source, without a range and with one crossing
    # the source's part boundary, mixed with an uploaded part.
    uid = s3.create_multipart_upload(Bucket=b, Key="dst2")["UploadId"]
    r1 = s3.upload_part_copy(Bucket=b, Key="dst2", UploadId=uid, PartNumber=1, CopySource={"Bucket": b, "Key": "dst"})
    whole_dst = b"".join(want_parts)
    eq(r1["CopyPartResult"]["ETag"], mp.part_etag(whole_dst), "UploadPartCopy of a whole multipart object")
    a, z = 5 * MIB - 10, 5 * MIB + 10
    r2 = s3.upload_part_copy(Bucket=b, Key="dst2", UploadId=uid, PartNumber=2, CopySource="%s/dst" % b, CopySourceRange="bytes=%d-%d" % (a, z))
    eq(r2["CopyPartResult"]["ETag"], mp.part_etag(whole_dst[a:z + 1]), "UploadPartCopy across the source's parts")
    tail = b"uploaded tail"
    r3 = s3.upload_part(Bucket=b, Key="dst2", UploadId=uid, PartNumber=3, Body=tail)
    done = [{"PartNumber": 1, "ETag": r1["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": r2["CopyPartResult"]["ETag"]}]
    with client_error("EntityTooSmall", 400):
        complete(s3, b, "dst2", uid, done + [{"PartNumber": 3, "ETag": r3["ETag"]}])
    complete(s3, b, "dst2", uid, done)
    same_bytes(get_all(s3, b, "dst2"), whole_dst + whole_dst[a:z + 1], "object copied from a multipart source")
    # Bad ranges and sources.
    uid = s3.create_multipart_upload(Bucket=b, Key="dst3")["UploadId"]
    with client_error("InvalidRange", 416):
        s3.upload_part_copy(Bucket=b, Key="dst3", UploadId=uid, PartNumber=1, CopySource={"Bucket": b, "Key": "src"}, CopySourceRange="bytes=%d-%d" % (len(src) - 1, len(src)))
    with client_error("NoSuchKey", 404):
        s3.upload_part_copy(Bucket=b, Key="dst3", UploadId=uid, PartNumber=1, CopySource={"Bucket": b, "Key": "missing"})
    with client_error("NoSuchUpload", 404):
        s3.upload_part_copy(Bucket=b, Key="dst3", UploadId="0" * len(uid), PartNumber=1, CopySource={"Bucket": b, "Key": "src"})
    eq(mp.all_parts(s3, b, "dst3", uid), [], "parts after refused copies")
    s3.abort_multipart_upload(Bucket=b, Key="dst3", UploadId=uid)


def test_upload_part_copy_cap(srv):
    # UploadPartCopy copies its range within the request: it is bounded by
    # max_copy_part_size (S3: 5 GiB), here 1 MiB so no huge source is needed.
    from botocore.exceptions import ClientError

    with harness.Server(config=CONFIG + "max_copy_part_size = 1M\n", tag="mp-copy-cap") as small:
        s3 = small.client()
        b = bucket(s3, "mp-copy-cap")
        src = harness.random_bytes(3 * MIB, seed=131)
        s3.put_object(Bucket=b, Key="src", Body=src)
        uid = s3.create_multipart_upload(Bucket=b, Key="dst")["UploadId"]
        free0 = small.metric("shardstore_storage_free_bytes")
        for rg in ["bytes=0-%d" % MIB, "bytes=%d-%d" % (MIB, 3 * MIB - 1), None]:
            kw = {"CopySourceRange": rg} if rg else {}
            try:
                s3.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=1, CopySource={"Bucket": b, "Key": "src"}, **kw)
            except ClientError as e:
                err = e.response["Error"]
                eq((e.response["ResponseMetadata"]["HTTPStatusCode"], err["Code"]), (400, "InvalidRequest"), "copy of %s past the cap" % rg)
                check("maximum allowable size for a copy source: 1048576" in err["Message"], "message %r" % err["Message"])
            else:
                raise harness.Failure("UploadPartCopy of %s (more than max_copy_part_size) succeeded" % rg)
        eq(mp.all_parts(s3, b, "dst", uid), [], "parts after refused copies")
        eq(small.metric("shardstore_storage_free_bytes"), free0, "free bytes after refused copies")
        # Exactly the cap is allowed.
        r = s3.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=1, CopySource={"Bucket": b, "Key": "src"}, CopySourceRange="bytes=%d-%d" % (MIB, 2 * MIB - 1))
        eq(r["CopyPartResult"]["ETag"], mp.part_etag(src[MIB:2 * MIB]), "UploadPartCopy of exactly the cap")
        s3.abort_multipart_upload(Bucket=b, Key="dst", UploadId=uid)


def test_managed_transfer(srv):
    from boto3.s3.transfer import TransferConfig

    s3 = srv.client(max_pool_connections=20)
    b = bucket(s3, "mp-transfer")
    tmp = tempfile.mkdtemp(prefix="mp-transfer-")
    try:
        src = os.path.join(tmp, "src.bin")
        dst = os.path.join(tmp, "dst.bin")
        size = 64 * MIB
        with open(src, "wb") as f:
            for i in range(8):
                f.write(harness.random_bytes(8 * MIB, seed=140 + i))
        cfg = TransferConfig(max_concurrency=16, multipart_chunksize=8 * MIB, multipart_threshold=8 * MIB)
        s3.upload_file(src, b, "big", Config=cfg)
        h = s3.head_object(Bucket=b, Key="big")
        eq(h["ContentLength"], size, "size of the uploaded 64 MiB file")
        with open(src, "rb") as f:
            chunks = [f.read(8 * MIB) for _ in range(8)]
        eq(h["ETag"], mp.mp_etag(chunks), "ETag of upload_file (8 parts of 8 MiB)")
        s3.download_file(b, "big", dst, Config=cfg)
        eq(os.path.getsize(dst), size, "size of the downloaded file")
        eq(mp.file_md5(dst), mp.file_md5(src), "md5 of the downloaded file")
        eq(mp.upload_ids(s3, b), [], "uploads left by upload_file")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------
# races: whatever the interleaving, one consistent outcome and no lost space


def test_abort_during_part_upload(srv):
    """A part still streaming when its upload is aborted is refused with
    NoSuchUpload and its space comes back."""
    s3 = srv.client()
    b = bucket(s3, "mp-race-abort")
    free0 = mp.free_settled(srv)
    uid = s3.create_multipart_upload(Bucket=b, Key="r")["UploadId"]
    done = mp.upload_parts(s3, b, "r", uid, [harness.random_bytes(5 * MIB, seed=150)])
    size = 16 * MIB
    data = harness.random_bytes(size, seed=151)
    conn = mp.start_stream(srv, "PUT", "/%s/r" % b, "partNumber=2&uploadId=%s" % uid, size)
    conn.send(data[: size // 2])
    r = s3.abort_multipart_upload(Bucket=b, Key="r", UploadId=uid)
    eq(r["ResponseMetadata"]["HTTPStatusCode"], 204, "abort while part 2 streams")
    try:
        conn.send(data[size // 2:])
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, body = mp.finish_response(conn)
    expect_s3_error(status, body, 404, "NoSuchUpload", "UploadPart that finished after its upload was aborted")
    check(not listed(s3, b, uid), "aborted upload listed")
    with client_error("NoSuchUpload", 404):
        complete(s3, b, "r", uid, done)
    mp.expect_free(srv, free0, "free bytes after a part upload raced with abort")


def test_complete_during_part_upload(srv):
    """A part that lands after its upload was completed is refused and
    freed; the object is the one completed."""
    s3 = srv.client()
    b = bucket(s3, "mp-race-complete")
    free0 = mp.free_settled(srv)
    parts = [harness.random_bytes(5 * MIB, seed=160), harness.random_bytes(1000, seed=161)]
    uid = s3.create_multipart_upload(Bucket=b, Key="c")["UploadId"]
    done = mp.upload_parts(s3, b, "c", uid, parts)
    size = 8 * MIB
    late = harness.random_bytes(size, seed=162)
    conn = mp.start_stream(srv, "PUT", "/%s/c" % b, "partNumber=3&uploadId=%s" % uid, size)
    conn.send(late[: size // 2])
    complete(s3, b, "c", uid, done)
    try:
        conn.send(late[size // 2:])
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, body = mp.finish_response(conn)
    expect_s3_error(status, body, 404, "NoSuchUpload", "UploadPart that finished after its upload was completed")
    same_bytes(get_all(s3, b, "c"), b"".join(parts), "object completed while a part streamed")
    mp.expect_free(srv, free0 - mp.space_of([len(p) for p in parts]), "free bytes after a part upload raced with complete")


def test_concurrent_same_part(srv):
    """Eight clients upload part 1 at once with different sizes: one wins,
    the other seven parts' space is freed."""
    import concurrent.futures

    s3 = srv.client(max_pool_connections=16)
    b = bucket(s3, "mp-race-part")
    free0 = mp.free_settled(srv)
    uid = s3.create_multipart_upload(Bucket=b, Key="s")["UploadId"]
    datas = [harness.random_bytes(2 * MIB + 1000 * i + 1, seed=170 + i) for i in range(8)]
    by_etag = {mp.part_etag(d): d for d in datas}

    def one(d):
        return s3.upload_part(Bucket=b, Key="s", UploadId=uid, PartNumber=1, Body=d)["ETag"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
        etags = list(ex.map(one, datas))
    eq(etags, [mp.part_etag(d) for d in datas], "ETags of the concurrent uploads of part 1")
    ps = mp.all_parts(s3, b, "s", uid)
    eq(len(ps), 1, "parts listed after 8 concurrent uploads of part 1")
    check(ps[0]["ETag"] in by_etag, "listed part 1 has ETag %s, none of the uploaded ones" % ps[0]["ETag"])
    winner = by_etag[ps[0]["ETag"]]
    eq(ps[0]["Size"], len(winner), "size of the winning part 1")
    mp.expect_free(srv, free0 - mp.align_up(len(winner)), "free bytes after 8 concurrent uploads of part 1 (7 replaced parts must be freed)")
    complete(s3, b, "s", uid, [{"PartNumber": 1, "ETag": ps[0]["ETag"]}])
    same_bytes(get_all(s3, b, "s"), winner, "object of the winning part")
    s3.delete_object(Bucket=b, Key="s")
    mp.expect_free(srv, free0, "free bytes after deleting it")


def test_concurrent_completes(srv):
    """Several CompleteMultipartUpload of one upload at once: the object is
    made once (no part freed twice, none leaked)."""
    import concurrent.futures
    import threading

    from botocore.exceptions import ClientError

    s3 = srv.client(max_pool_connections=16)
    b = bucket(s3, "mp-race-complete2")
    free0 = mp.free_settled(srv)
    parts = [harness.random_bytes(5 * MIB, seed=180), harness.random_bytes(5 * MIB, seed=181), harness.random_bytes(4321, seed=182)]
    want = b"".join(parts)
    used = mp.space_of([len(p) for p in parts])
    for rnd in range(3):
        uid = s3.create_multipart_upload(Bucket=b, Key="cc")["UploadId"]
        done = mp.upload_parts(s3, b, "cc", uid, parts)
        # Round 1 leaves part 3 out of the list: it must be freed exactly once.
        lst = done if rnd != 1 else done[:2]
        barrier = threading.Barrier(6)

        def one(_):
            barrier.wait(timeout=10)
            try:
                return ("ok", complete(s3, b, "cc", uid, lst)["ETag"])
            except ClientError as e:
                return ("err", e.response["Error"]["Code"])

        with concurrent.futures.ThreadPoolExecutor(max_workers=6) as ex:
            outcomes = list(ex.map(one, range(6)))
        body = want if rnd != 1 else b"".join(parts[:2])
        oks = [o for o in outcomes if o[0] == "ok"]
        check(oks, "round %d: no Complete succeeded: %s" % (rnd, outcomes))
        for o in outcomes:
            check(o in (("ok", mp.mp_etag(parts if rnd != 1 else parts[:2])), ("err", "NoSuchUpload")), "round %d: Complete outcome %r (expected the object's ETag or NoSuchUpload): %s" % (rnd, o, outcomes))
        same_bytes(get_all(s3, b, "cc"), body, "round %d: object after concurrent completes" % rnd)
        check(not listed(s3, b, uid), "round %d: upload listed after concurrent completes" % rnd)
        mp.expect_free(srv, free0 - (used if rnd != 1 else mp.space_of([len(p) for p in parts[:2]])), "round %d: free bytes after 6 concurrent completes" % rnd)
    s3.delete_object(Bucket=b, Key="cc")
    mp.expect_free(srv, free0, "free bytes after deleting the object")


def test_complete_races_part_replacement(srv):
    """Part 2 is re-uploaded while Complete names the old part 2: either
    Complete wins (old bytes; the new part 2 is refused NoSuchUpload) or the
    replacement wins (Complete fails InvalidPart, the upload stays with the
    new part 2). Space matches the outcome."""
    import concurrent.futures
    import threading

    from botocore.exceptions import ClientError

    s3 = srv.client(max_pool_connections=8)
    b = bucket(s3, "mp-race-replace")
    free0 = mp.free_settled(srv)
    p1 = harness.random_bytes(5 * MIB, seed=190)
    old2 = harness.random_bytes(3 * MIB + 1, seed=191)
    new2 = harness.random_bytes(2 * MIB + 2, seed=192)
    seen = set()
    for rnd in range(6):
        uid = s3.create_multipart_upload(Bucket=b, Key="rr")["UploadId"]
        done = mp.upload_parts(s3, b, "rr", uid, [p1, old2])
        barrier = threading.Barrier(2)

        def do_complete():
            barrier.wait(timeout=10)
            try:
                return ("ok", complete(s3, b, "rr", uid, done)["ETag"])
            except ClientError as e:
                return ("err", e.response["Error"]["Code"])

        def do_replace():
            barrier.wait(timeout=10)
            try:
                return ("ok", s3.upload_part(Bucket=b, Key="rr", UploadId=uid, PartNumber=2, Body=new2)["ETag"])
            except ClientError as e:
                return ("err", e.response["Error"]["Code"])

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            fc = ex.submit(do_complete)
            fr = ex.submit(do_replace)
            oc, orp = fc.result(timeout=60), fr.result(timeout=60)
        what = "round %d: complete %r, replace %r" % (rnd, oc, orp)
        if oc[0] == "ok":
            seen.add("complete first")
            eq(oc[1], mp.mp_etag([p1, old2]), what + ": ETag")
            # Both succeeding would mean the object uses the old part 2 that
            # the replacement freed.
            eq(orp, ("err", "NoSuchUpload"), what + ": the replacement's outcome when Complete succeeded")
            same_bytes(get_all(s3, b, "rr"), p1 + old2, what + ": object")
            check(not listed(s3, b, uid), what + ": upload still listed")
            mp.expect_free(srv, free0 - mp.space_of([len(p1), len(old2)]), what + ": free bytes")
            s3.delete_object(Bucket=b, Key="rr")
        else:
            seen.add("replace first")
            eq(oc, ("err", "InvalidPart"), what + ": Complete's error")
            eq(orp, ("ok", mp.part_etag(new2)), what + ": replacement")
            ps = mp.all_parts(s3, b, "rr", uid)
            eq([(p["PartNumber"], p["Size"], p["ETag"]) for p in ps], [(1, len(p1), mp.part_etag(p1)), (2, len(new2), mp.part_etag(new2))], what + ": parts")
            with client_error("NoSuchKey", 404):
                s3.get_object(Bucket=b, Key="rr")
            mp.expect_free(srv, free0 - mp.space_of([len(p1), len(new2)]), what + ": free bytes")
            s3.abort_multipart_upload(Bucket=b, Key="rr", UploadId=uid)
        mp.expect_free(srv, free0, what + ": free bytes after cleaning up")
    print("     outcomes seen: %s" % sorted(seen), flush=True)


# --------------------------------------------------------------------------
# more edges: conditional Complete, bad part checksums, odd and long keys


def test_conditional_complete(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-cond")
    s3.put_object(Bucket=b, Key="k", Body=b"existing")
    old_etag = mp.part_etag(b"existing")
    parts = [harness.random_bytes(5 * MIB, seed=200), b"tail"]
    uid = s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    done = mp.upload_parts(s3, b, "k", uid, parts)
    with client_error("PreconditionFailed", 412):
        complete(s3, b, "k", uid, done, IfNoneMatch="*")
    check(listed(s3, b, uid), "upload not listed after If-None-Match: * failed")
    eq(get_all(s3, b, "k"), b"existing", "object after a refused conditional Complete")
    with client_error("PreconditionFailed", 412):
        complete(s3, b, "k", uid, done, IfMatch='"%s"' % hashlib.md5(b"other").hexdigest())
    check(listed(s3, b, uid), "upload not listed after If-Match mismatch")
    r = complete(s3, b, "k", uid, done, IfMatch=old_etag)
    eq(r["ETag"], mp.mp_etag(parts), "ETag after Complete with a matching If-Match")
    same_bytes(get_all(s3, b, "k"), b"".join(parts), "object after conditional Complete")
    # If-None-Match: * on a new key succeeds.
    uid = s3.create_multipart_upload(Bucket=b, Key="new")["UploadId"]
    done = mp.upload_parts(s3, b, "new", uid, [b"fresh"])
    complete(s3, b, "new", uid, done, IfNoneMatch="*")
    eq(get_all(s3, b, "new"), b"fresh", "object completed with If-None-Match: *")


def test_bad_part_checksum_keeps_old_part(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-badsum")
    free0 = mp.free_settled(srv)
    uid = s3.create_multipart_upload(Bucket=b, Key="k", ChecksumAlgorithm="CRC32")["UploadId"]
    good = harness.random_bytes(5 * MIB + 9, seed=210)
    other = harness.random_bytes(6 * MIB, seed=211)
    pr = s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=good, ChecksumAlgorithm="CRC32")
    used = mp.align_up(len(good))
    mp.expect_free(srv, free0 - used, "free bytes after part 1")
    # A replacement whose CRC32 does not match its body is refused.
    with client_error("BadDigest", 400):
        s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=other, ChecksumCRC32=mp.crc32_b64(good))
    # As is one whose Content-MD5 does not match.
    import base64

    with client_error(("BadDigest", "InvalidDigest"), 400):
        s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=other, ContentMD5=base64.b64encode(hashlib.md5(good).digest()).decode())
    ps = mp.all_parts(s3, b, "k", uid)
    eq([(p["PartNumber"], p["Size"], p["ETag"], p.get("ChecksumCRC32")) for p in ps], [(1, len(good), mp.part_etag(good), mp.crc32_b64(good))], "part 1 after refused replacements")
    mp.expect_free(srv, free0 - used, "free bytes after refused replacements (their space must be freed)")
    # Complete naming a wrong part checksum is InvalidPart.
    with client_error("InvalidPart", 400):
        complete(s3, b, "k", uid, [{"PartNumber": 1, "ETag": pr["ETag"], "ChecksumCRC32": mp.crc32_b64(other)}])
    r = complete(s3, b, "k", uid, [{"PartNumber": 1, "ETag": pr["ETag"], "ChecksumCRC32": pr["ChecksumCRC32"]}])
    eq(r.get("ChecksumCRC32"), mp.composite_crc32([good]), "COMPOSITE CRC32 of a one-part upload")
    same_bytes(get_all(s3, b, "k"), good, "object after refused replacements")
    # Unsupported algorithm / type combinations are refused at creation.
    for alg, typ in [("CRC64NVME", "COMPOSITE"), ("SHA256", "FULL_OBJECT"), ("SHA1", "FULL_OBJECT")]:
        try:
            with client_error("InvalidRequest", 400):
                s3.create_multipart_upload(Bucket=b, Key="bad", ChecksumAlgorithm=alg, ChecksumType=typ)
        except harness.Failure as e:
            raise harness.Failure("CreateMultipartUpload %s/%s: %s" % (alg, typ, e))
    eq(mp.upload_ids(s3, b, Prefix="bad"), [], "uploads created by refused CreateMultipartUpload")


def test_odd_and_long_keys(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-keys")
    base = "L/" + "x" * 900
    long1 = base + "a" * (1024 - len(base) - 1) + "1"
    long2 = base + "a" * (1024 - len(base) - 1) + "2"
    long0 = base + "a" * (1024 - len(base) - 2) + "9"  # shorter, sorts after both
    odd = "dir/spa ce+ünï%&<>'\"?#.bin"
    check(len(long1.encode()) == 1024 and len(long2.encode()) == 1024, "long keys are 1024 bytes")
    keys = [long2, odd, long1, long0, "plain"]
    ids = {k: s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"] for k in keys}
    want = sorted(keys, key=lambda k: k.encode())
    got = [k for k, _ in mp.upload_ids(s3, b)]
    eq(got, want, "ListMultipartUploads order with 1024-byte keys (UTF-8 byte order)")
    pages = []
    args = {}
    for _ in range(10):
        r = s3.list_multipart_uploads(Bucket=b, MaxUploads=1, **args)
        pages += [u["Key"] for u in r.get("Uploads", [])]
        if not r["IsTruncated"]:
            break
        args = {"KeyMarker": r["NextKeyMarker"], "UploadIdMarker": r["NextUploadIdMarker"]}
    eq(pages, want, "paging one upload at a time through 1024-byte keys")
    eq([k for k, _ in mp.upload_ids(s3, b, Prefix=base)], sorted([long1, long2, long0], key=lambda k: k.encode()), "Prefix of 902 bytes")
    eq(mp.all_uploads(s3, b, Prefix="L/", Delimiter="a")[1], [base + "a"], "CommonPrefixes of the long keys")
    for k in keys:
        data = harness.random_bytes(100 + len(k), seed=len(k))
        done = mp.upload_parts(s3, b, k, ids[k], [data])
        eq([p["PartNumber"] for p in mp.all_parts(s3, b, k, ids[k])], [1], "parts of %r" % k[-20:])
        r = complete(s3, b, k, ids[k], done)
        eq(r["Key"], k, "Complete <Key> of %r" % k[-20:])
        eq(get_all(s3, b, k), data, "object %r" % k[-20:])
    eq(mp.upload_ids(s3, b), [], "uploads after completing all")
    listed_keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]
    eq(listed_keys, want, "objects made of uploads with odd and long keys")
    # Uploads for one long key are distinct from the other's.
    with client_error("NoSuchUpload", 404):
        s3.list_parts(Bucket=b, Key=long1, UploadId=s3.create_multipart_upload(Bucket=b, Key=long2)["UploadId"])


def test_copy_object_of_multipart(srv):
    s3 = srv.client()
    b = bucket(s3, "mp-copyobj")
    parts = [harness.random_bytes(5 * MIB + 1, seed=220), harness.random_bytes(333, seed=221)]
    uid = s3.create_multipart_upload(Bucket=b, Key="src", Metadata={"m": "v"})["UploadId"]
    complete(s3, b, "src", uid, mp.upload_parts(s3, b, "src", uid, parts))
    whole = b"".join(parts)
    s3.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src"})
    g = s3.get_object(Bucket=b, Key="dst")
    same_bytes(g["Body"].read(), whole, "CopyObject of a multipart object")
    eq(g["Metadata"], {"m": "v"}, "metadata copied from the multipart object")
    # The copy shares the source's extents, so it keeps its part layout and
    # its "-2" ETag (as S3 keeps a multipart ETag across a metadata copy).
    eq(g["ETag"], s3.head_object(Bucket=b, Key="src")["ETag"], "ETag of the copy")
    p2 = s3.get_object(Bucket=b, Key="dst", PartNumber=2)
    same_bytes(p2["Body"].read(), parts[1], "part 2 of the copy")
    with client_error("InvalidPartNumber", 400):
        s3.get_object(Bucket=b, Key="dst", PartNumber=3)


def test_empty_parts(srv):
    """A zero-byte last part (no extents) and a one-part empty object."""
    s3 = srv.client()
    b = bucket(s3, "mp-empty")
    parts = [harness.random_bytes(5 * MIB + 1, seed=230)]
    free0 = mp.free_settled(srv)
    uid = s3.create_multipart_upload(Bucket=b, Key="z")["UploadId"]
    done = mp.upload_parts(s3, b, "z", uid, [parts[0], b""])
    complete(s3, b, "z", uid, done)
    same_bytes(get_all(s3, b, "z"), parts[0], "object with an empty last part")
    uid = s3.create_multipart_upload(Bucket=b, Key="empty")["UploadId"]
    done = mp.upload_parts(s3, b, "empty", uid, [b""])
    r = complete(s3, b, "empty", uid, done)
    eq(r["ETag"], mp.mp_etag([b""]), "ETag of an empty one-part upload")
    h = s3.head_object(Bucket=b, Key="empty")
    eq((h["ContentLength"], h["ETag"]), (0, mp.mp_etag([b""])), "HEAD of the empty multipart object")
    eq(get_all(s3, b, "empty"), b"", "GET of the empty multipart object")
    eq(get_all(s3, b, "empty", PartNumber=1), b"", "GET partNumber=1 of the empty multipart object")
    mp.expect_free(srv, free0 - mp.align_up(len(parts[0])), "free bytes with the objects of empty parts")


TESTS = [
    test_complete_etag_and_bytes,
    test_unaligned_parts,
    test_checksum_crc32_composite,
    test_checksum_crc32_full_object,
    test_checksum_crc64nvme_full_object,
    test_part_number_limits,
    test_complete_errors_leave_upload_usable,
    test_entity_too_small,
    test_no_such_upload,
    test_reupload_replaces_part,
    test_abort_frees_space,
    test_abort_while_reading_completed_object,
    test_complete_frees_unused_parts,
    test_bucket_not_empty,
    test_list_parts_paging,
    test_list_uploads,
    test_get_part_number_and_ranges,
    test_upload_part_copy,
    test_upload_part_copy_cap,
    test_managed_transfer,
    test_abort_during_part_upload,
    test_complete_during_part_upload,
    test_concurrent_same_part,
    test_concurrent_completes,
    test_complete_races_part_replacement,
    test_conditional_complete,
    test_bad_part_checksum_keeps_old_part,
    test_odd_and_long_keys,
    test_copy_object_of_multipart,
    test_empty_parts,
]

if __name__ == "__main__":
    harness.main(TESTS, config=CONFIG)
