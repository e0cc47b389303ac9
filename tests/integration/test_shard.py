"""test_shard.py: libshard reads and writes through the shard tool against a
real server: streamed bytes equal the object for many (size, chunk,
parallelism) combinations including 0- and 1-byte objects and ranges at the
ends; shard_read_range and shard_reader_read into a buffer (through the
shared libshard); multipart uploads from a file and from stdin (CRC32 part
checksums, ETag of N parts); cp -r both ways, ls, rm -r, mb, rb, also of
keys a listing must URI-encode; error messages and exit codes; a listing
whose continuation token does not advance ends in an error."""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402
import shard_util as su  # noqa: E402

SIZES = [0, 1, 2, 999, 4096, 65537, 1048576 + 3, 3 * 1048576 + 1]
COMBOS = [(1, 1), (1, 4096), (3, 1000), (2, 4096), (8, 65536), (4, 1048576), (16, 8 << 20)]


def setup_objects(srv, bucket):
    s3 = srv.client()
    s3.create_bucket(Bucket=bucket)
    data = {}
    for i, size in enumerate(SIZES):
        body = h.random_bytes(size, seed=100 + i)
        key = "obj/size-%d" % size
        s3.put_object(Bucket=bucket, Key=key, Body=body)
        data[key] = body
    return data


def test_stream_combinations(srv):
    data = setup_objects(srv, "stream")
    for key, body in data.items():
        size = len(body)
        for parallel, chunk in COMBOS:
            if size // chunk > 1200:
                continue  # 1-byte chunks only on small objects
            p = su.run(srv, "cat", "--parallel", parallel, "--chunk-size", chunk, "s3://stream/" + key)
            h.same_bytes(p.stdout, body, "%s parallel=%d chunk=%d" % (key, parallel, chunk))
            if size == 0:
                continue
            ranges = [(0, 0), (size - 1, size - 1), (0, size - 1), (size // 3, size - 1),
                      (max(0, size - 5000), size - 1)]
            if size > 2:
                ranges.append((1, min(size - 2, 70000)))
            for a, b in ranges:
                p = su.run(srv, "cat", "--parallel", parallel, "--chunk-size", chunk,
                           "--range", "%d-%d" % (a, b), "s3://stream/" + key)
                h.same_bytes(p.stdout, body[a:b + 1], "%s %d-%d p=%d c=%d" % (key, a, b, parallel, chunk))
        if size > 0:
            p = su.run(srv, "cat", "--range", "-%d" % min(size, 7), "s3://stream/" + key)
            h.same_bytes(p.stdout, body[-min(size, 7):], key + " suffix range")
            p = su.run(srv, "cat", "--range", "%d-" % (size // 2), "s3://stream/" + key)
            h.same_bytes(p.stdout, body[size // 2:], key + " open range")
            # A range that ends past the object is cut at its end, like S3.
            p = su.run(srv, "cat", "--range", "%d-%d" % (size - 1, size + 100), "s3://stream/" + key)
            h.same_bytes(p.stdout, body[size - 1:], key + " range past the end")
    # A range that starts past the end is an error.
    p = su.run(srv, "cat", "--range", "5000-6000", "s3://stream/obj/size-999", rc=1)
    h.check(b"InvalidRange" in p.stderr, "past-the-end message: %r" % p.stderr)


def test_read_range_into_buffer(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="rrange")
    body = h.random_bytes(5 * 1048576 + 11, seed=9)
    s3.put_object(Bucket="rrange", Key="big", Body=body)
    s3.put_object(Bucket="rrange", Key="one", Body=b"x")
    n = len(body)
    for off, length, par, chunk in [(0, n, 4, 1048576), (0, n, 1, 3 << 20), (n - 1, 1, 2, 10),
                                    (12345, 999999, 8, 65536), (0, 1, None, None),
                                    (n - 70000, 70000, 3, 4096)]:
        p = su.read_range(srv, "rrange", "big", off, length, par, chunk)
        h.same_bytes(p.stdout, body[off:off + length], "read_range %d+%d" % (off, length))
    p = su.read_range(srv, "rrange", "one", 0, 1)
    h.eq(p.stdout, b"x", "1-byte object")
    p = su.read_range(srv, "rrange", "big", n - 10, 20, rc=1)
    h.check(b"InvalidRange" in p.stderr, "read_range past the end: %r" % p.stderr)
    p = su.read_range(srv, "rrange", "big", n + 10, 20, rc=1)
    h.check(b"InvalidRange" in p.stderr, "read_range after the end: %r" % p.stderr)
    p = su.read_range(srv, "rrange", "missing", 0, 20, rc=1)
    h.check(b"NoSuchKey" in p.stderr, "read_range of a missing key: %r" % p.stderr)
    # shard_reader_read: copies into a caller's buffer of any size, across
    # chunk boundaries, to the end (LEN 0) or for a range.
    for off, length, cap, par, chunk in [(0, 0, 1000, 3, 65536), (0, 0, 1 << 20, 8, 1048576),
                                         (777, 300000, 4093, 2, 4096), (n - 5, 0, 1, 1, 2),
                                         (0, 0, 10 << 20, None, None)]:
        p = su.read_range(srv, "rrange", "big", off, length, par, chunk, reader_cap=cap)
        want = body[off:off + length] if length else body[off:]
        h.same_bytes(p.stdout, want, "reader_read %d+%d cap %d" % (off, length, cap))
    p = su.read_range(srv, "rrange", "one", 0, 0, reader_cap=7)
    h.eq(p.stdout, b"x", "reader_read of a 1-byte object")
    p = su.read_range(srv, "rrange", "big", n + 10, 0, reader_cap=7, rc=1)
    h.check(b"InvalidRange" in p.stderr, "reader_read after the end: %r" % p.stderr)


def test_upload_file_and_stdin(srv):
    s3 = srv.client()
    su.run(srv, "mb", "s3://upl")
    tmp = tempfile.mkdtemp(prefix="shard-upl-")
    try:
        for size, part, parallel, want_parts in [(12 * 1048576 + 7, "5M", 3, 3), (10 * 1048576, "5M", 2, 2),
                                                 (5 * 1048576 - 1, "5M", 4, 0), (0, "5M", 2, 0),
                                                 (1, "8M", 1, 0), (21 * 1048576, "5M", 8, 5)]:
            body = h.random_bytes(size, seed=size)
            path = os.path.join(tmp, "f%d" % size)
            with open(path, "wb") as f:
                f.write(body)
            for how in ("file", "stdin"):
                key = "up/%s-%d" % (how, size)
                if how == "file":
                    su.run(srv, "cp", "--part-size", part, "--parallel", parallel, path, "s3://upl/" + key)
                else:
                    su.run(srv, "cp", "--part-size", part, "--parallel", parallel, "-", "s3://upl/" + key,
                           input=body)
                got = s3.get_object(Bucket="upl", Key=key)
                h.same_bytes(got["Body"].read(), body, key)
                etag = got["ETag"].strip('"')
                if want_parts:
                    h.check(etag.endswith("-%d" % want_parts), "%s: ETag %s, want %d parts" % (key, etag, want_parts))
                else:
                    h.eq(etag, h.md5_hex(body), "%s single PUT ETag" % key)
                # Round trip through the tool as well (to a file).
                out = os.path.join(tmp, "back")
                su.run(srv, "cp", "s3://upl/" + key, out)
                with open(out, "rb") as f:
                    h.same_bytes(f.read(), body, key + " downloaded")
        # A part with a wrong checksum is refused by the server: prove the
        # header is sent by checking the stored part checksum of a multipart object.
        attrs = s3.head_object(Bucket="upl", Key="up/file-%d" % (12 * 1048576 + 7), ChecksumMode="ENABLED")
        ck = attrs.get("ChecksumCRC32")
        h.check(ck is not None and ck.endswith("-3"), "multipart CRC32 checksum of 3 parts: %r" % ck)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def test_cp_recursive_ls_rm_mb_rb(srv):
    tmp = tempfile.mkdtemp(prefix="shard-tree-")
    try:
        src = os.path.join(tmp, "src")
        files = {"a.txt": b"alpha", "d1/b.bin": h.random_bytes(70000, 1), "d1/d2/c": b"",
                 "d1/d2/e f+g": h.random_bytes(6 * 1048576, 2)}
        for rel, body in files.items():
            p = os.path.join(src, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(body)
        su.run(srv, "mb", "s3://tree")
        # In us-east-1, re-creating one's own bucket answers 200 (AWS's legacy rule).
        su.run(srv, "mb", "s3://tree")
        su.run(srv, "cp", "-r", "--part-size", "5M", src, "s3://tree/data")
        p = su.run(srv, "ls", "--recursive", "s3://tree")
        keys = sorted(line.split(None, 3)[3] for line in p.stdout.decode().splitlines())
        h.eq(keys, sorted("data/" + k for k in files), "ls --recursive")
        p = su.run(srv, "ls", "s3://tree/data/")
        lines = p.stdout.decode().splitlines()
        h.check(any(re.match(r"^\s+PRE d1/$", l) for l in lines), "ls shows PRE d1/: %r" % lines)
        h.check(any(l.endswith(" 5 a.txt") for l in lines), "ls shows a.txt with its size: %r" % lines)
        h.eq(len(lines), 2, "ls entries under data/")
        p = su.run(srv, "ls")
        h.check(any(l.endswith(" tree") for l in p.stdout.decode().splitlines()), "ls lists buckets")
        dst = os.path.join(tmp, "dst")
        su.run(srv, "cp", "--recursive", "s3://tree/data/", dst)
        h.eq(tree(dst), files, "downloaded tree")
        p = su.run(srv, "rb", "s3://tree", rc=1)
        h.check(b"BucketNotEmpty" in p.stderr, "rb of a non-empty bucket: %r" % p.stderr)
        su.run(srv, "rm", "s3://tree/data/a.txt")
        su.run(srv, "rm", "-r", "s3://tree/data/d1")
        p = su.run(srv, "ls", "-r", "s3://tree")
        h.eq(p.stdout, b"", "ls after rm -r")
        su.run(srv, "rb", "s3://tree")
        p = su.run(srv, "ls", "s3://tree", rc=1)
        h.check(b"NoSuchBucket" in p.stderr, "ls of a removed bucket: %r" % p.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# Keys holding bytes a listing must carry URI-encoded (a control character
# has no XML 1.0 form at all) or that a sloppy decoder changes ('+', '%').
ODD_KEYS = ["sp ace", "plus+sign", "pct%41", "pct%", "pct%zz", "uni-\u00e9\u20ac\U0001f600",
            "ctl\x01x", "tab\tx", "del\x7fx", "xml<&>'\"", "dir x+/f%2B"]


def test_odd_keys_ls_cp_recursive(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="oddkeys")
    for k in ODD_KEYS:
        s3.put_object(Bucket="oddkeys", Key="d/" + k, Body=k.encode())
    p = su.run(srv, "ls", "-r", "s3://oddkeys")
    keys = [line.split(None, 3)[3] for line in p.stdout.split(b"\n") if line]
    h.eq(sorted(keys), sorted(("d/" + k).encode() for k in ODD_KEYS), "ls -r keys")
    p = su.run(srv, "ls", "s3://oddkeys/d/")
    h.check(re.search(rb"^\s+PRE dir x\+/$", p.stdout, re.M) is not None, "ls PRE of a decoded prefix: %r" % p.stdout)
    h.check(re.search(rb" 6 pct%41$", p.stdout, re.M) is not None, "ls of 'pct%%41': %r" % p.stdout)
    tmp = tempfile.mkdtemp(prefix="shard-odd-")
    try:
        dst = os.path.join(tmp, "dst")
        su.run(srv, "cp", "-r", "s3://oddkeys/d/", dst)
        h.eq(tree(dst), {k: k.encode() for k in ODD_KEYS}, "downloaded odd keys")
        su.run(srv, "mb", "s3://oddkeys2")
        su.run(srv, "cp", "-r", dst, "s3://oddkeys2/up")
        got = s3.list_objects_v2(Bucket="oddkeys2")
        h.eq(sorted(o["Key"] for o in got.get("Contents", [])), sorted("up/" + k for k in ODD_KEYS),
             "uploaded odd keys (boto3 listing)")
        su.run(srv, "rm", "-r", "-q", "s3://oddkeys/d")
        h.eq(s3.list_objects_v2(Bucket="oddkeys").get("KeyCount"), 0, "rm -r of odd keys")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_many_keys_rm_recursive(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="many")
    for i in range(1203):
        s3.put_object(Bucket="many", Key="k/%05d" % i, Body=b"")
    p = su.run(srv, "ls", "-r", "s3://many/k/")
    h.eq(len(p.stdout.splitlines()), 1203, "listing across pages")
    su.run(srv, "rm", "-r", "-q", "s3://many/k")
    h.eq(s3.list_objects_v2(Bucket="many").get("KeyCount"), 0, "keys after rm -r")


def test_errors_and_exit_codes(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="errs")
    s3.put_object(Bucket="errs", Key="k", Body=b"hello")
    for args in (["cat", "s3:/errs/k"], ["cat", "errs/k"], ["cat", "s3://"], ["cat", "s3://errs"],
                 ["ls", "http://x"], ["cp", "a", "b"], ["cp", "s3://errs/k", "s3://errs/k2"],
                 ["frobnicate"], ["cat", "--bogus", "s3://errs/k"], ["cp", "--part-size", "1K", "x", "s3://errs/x"],
                 ["cat", "--range", "5-2", "s3://errs/k"], ["--parallel", "0", "cat", "s3://errs/k"], []):
        p = su.run(srv, *args, rc=2)
        h.check(p.stderr.startswith(b"shard: ") or (not args and b"usage" in p.stderr),
                "%s: message %r" % (args, p.stderr[:200]))
    p = su.run(srv, "cat", "s3://errs/nope", rc=1)
    h.check(re.match(rb"^shard: s3://errs/nope: NoSuchKey: .* \(HTTP 404\)\n$", p.stderr), "NoSuchKey message %r" % p.stderr)
    p = su.run(srv, "cp", "s3://nobucket/k", "-", rc=1)
    h.check(b"HTTP 404" in p.stderr, "missing bucket %r" % p.stderr)
    p = su.run(srv, "ls", "s3://nobucket", rc=1)
    h.check(b"NoSuchBucket" in p.stderr, "ls missing bucket %r" % p.stderr)
    bad = su.base_env(srv, AWS_SECRET_ACCESS_KEY="wrong")
    p = su.run(srv, "cat", "s3://errs/k", env=bad, rc=1)
    h.check(b"HTTP 403" in p.stderr, "wrong secret: %r" % p.stderr)
    p = su.run(srv, "ls", "s3://errs", env=bad, rc=1)
    h.check(b"SignatureDoesNotMatch" in p.stderr, "wrong secret on ls: %r" % p.stderr)
    nocreds = su.base_env(srv, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None)
    p = su.run(srv, "cat", "s3://errs/k", env=nocreds, rc=3)
    h.check(p.stderr.startswith(b"shard: ") and b"credentials" in p.stderr, "no creds: %r" % p.stderr)
    p = su.run(srv, "cp", "/nonexistent/file", "s3://errs/x", rc=4)
    h.check(b"No such file" in p.stderr, "missing local file: %r" % p.stderr)
    p = su.run(srv, "cp", "s3://errs/k", "/etc/passwd/sub/", rc=4)
    h.check(p.stderr.startswith(b"shard: "), "unwritable target %r" % p.stderr)
    # Quiet when piped: nothing on stderr on success.
    p = su.run(srv, "cat", "s3://errs/k")
    h.eq((p.stdout, p.stderr), (b"hello", b""), "cat output and silent stderr")
    # Nothing reachable: a network error, exit 1.
    env = su.base_env(srv, AWS_ENDPOINT_URL="http://127.0.0.1:1")
    p = su.run(srv, "--retries", "1", "cat", "s3://errs/k", env=env, rc=1)
    h.check(b"ConnectionError" in p.stderr, "unreachable endpoint: %r" % p.stderr)


def test_listing_not_advancing(srv):
    """A server that answers every ListObjectsV2 page with the same
    continuation token ends `shard ls` with an error, not a loop."""
    page = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>b</Name>"
            b"<IsTruncated>true</IsTruncated><NextContinuationToken>same</NextContinuationToken>"
            b"<Contents><Key>k</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
            b"<ETag>\"e\"</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>"
            b"</ListBucketResult>")
    with su.fake_s3(lambda path: page) as (env, seen):
        p = su.run(None, "ls", "-r", "s3://b", env=env, rc=1, timeout=60)
        h.check(b"does not advance" in p.stderr, "repeated token: %r" % p.stderr[-300:])
        h.eq(len(seen), 2, "requests before giving up")


if __name__ == "__main__":
    h.main([test_stream_combinations, test_read_range_into_buffer, test_upload_file_and_stdin,
            test_cp_recursive_ls_rm_mb_rb, test_odd_keys_ls_cp_recursive, test_many_keys_rm_recursive, test_errors_and_exit_codes,
            test_listing_not_advancing])
