"""test_tar_members.py: tar shards read by member (GET/HEAD ?member=NAME)
and listed (?list-members).

WebDataset-like shards made with Python's tarfile in USTAR, PAX (long and
UTF-8 names) and GNU formats are uploaded with boto3 put_object (indexed
as they stream in), upload_file with a small multipart threshold and
CopyObject (both indexed on first use). Checked: member bytes, Content-Type,
the object's ETag, HEAD, Range inside a member, NoSuchMember, a non-tar and
malformed or truncated tars (the PUT still succeeds; member requests answer
InvalidArchive), XML and JSON listings paged over 3000 members, a presigned
member URL (the member is covered by the signature), that indexed members are
served on the event loop (only a first-use build goes to a worker),
overwrites, and that a delete leaves no index behind
(shardstore_index_member_indexes).
"""
import io
import json
import os
import sys
import tarfile
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

B = "tars"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
INDEXES = "shardstore_index_member_indexes"


def make_tar(members, fmt=tarfile.PAX_FORMAT):
    """Returns (tar bytes, {name: (offset_data, bytes)}) for [(name, bytes)]."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        d = tarfile.TarInfo("dir")
        d.type = tarfile.DIRTYPE
        tf.addfile(d)
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1700000000
            tf.addfile(ti, io.BytesIO(data))
    raw = buf.getvalue()
    info = {}
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        for m in tf.getmembers():
            if m.isreg():
                info[m.name] = (m.offset_data, raw[m.offset_data:m.offset_data + m.size])
    return raw, info


def samples(n, size, seed=0, prefix=""):
    out = []
    for i in range(n):
        key = "%s%06d" % (prefix, i)
        out.append((key + ".jpg", h.random_bytes(size + i, seed=seed * 100000 + i)))
        out.append((key + ".cls", b"%d" % (i % 10)))
        out.append((key + ".json", json.dumps({"i": i}).encode()))
    return out


def member(srv, key, name, method="GET", headers=None):
    return srv.request(method, "/%s/%s" % (B, h.quote_key(key)), "member=" + h.quote_param(name),
                       headers=headers)


def check_members(srv, key, info, etag):
    for name, (_, data) in info.items():
        r = member(srv, key, name)
        h.eq(r.status, 200, "GET member %s of %s" % (name, key))
        h.same_bytes(r.body, data, "member %s of %s" % (name, key))
        h.eq(r.header("ETag"), etag, "member ETag is the object's")
        ext = name.rsplit(".", 1)[-1]
        want = {"jpg": "image/jpeg", "cls": "text/plain", "json": "application/json",
                "txt": "text/plain", "npy": "application/octet-stream"}.get(ext)
        if want:
            h.eq(r.header("Content-Type"), want, "Content-Type of %s" % name)


def test_setup(srv):
    srv.client().create_bucket(Bucket=B)


def test_put_formats(srv):
    s3 = srv.client()
    n0 = srv.metric(INDEXES)
    extra = [("long/" + "n" * 300 + ".txt", b"a long name"), ("ünï/名前.txt", "utf-8".encode()),
             ("x.npy", b"\x93NUMPY" + bytes(100)), ("empty.cls", b"")]
    for i, fmt in enumerate((tarfile.USTAR_FORMAT, tarfile.PAX_FORMAT, tarfile.GNU_FORMAT)):
        mem = samples(5, 3000, seed=i)
        if fmt != tarfile.USTAR_FORMAT:
            mem += extra
        raw, info = make_tar(mem, fmt)
        key = "fmt-%d.tar" % i
        etag = s3.put_object(Bucket=B, Key=key, Body=raw)["ETag"]
        check_members(srv, key, info, etag)
        # HEAD: the member's length, no body.
        off, data = info["000001.jpg"]
        r = member(srv, key, "000001.jpg", method="HEAD")
        h.eq(r.status, 200, "HEAD member")
        h.eq(r.header("Content-Length"), str(len(data)), "HEAD Content-Length")
        # Range inside the member.
        r = member(srv, key, "000001.jpg", headers={"Range": "bytes=2-5"})
        h.eq(r.status, 206, "ranged member")
        h.same_bytes(r.body, data[2:6], "ranged member bytes")
        h.eq(r.header("Content-Range"), "bytes 2-5/%d" % len(data), "Content-Range")
        r = member(srv, key, "000001.jpg", headers={"Range": "bytes=-3"})
        h.same_bytes(r.body, data[-3:], "suffix range")
        r = member(srv, key, "000001.jpg", headers={"Range": "bytes=%d-" % len(data)})
        h.expect_s3_error(r.status, r.body, 416, "InvalidRange", "range past the member")
        # Missing member.
        r = member(srv, key, "nope.jpg")
        h.expect_s3_error(r.status, r.body, 404, "NoSuchMember", "missing member")
        # Conditional reads: the object's validators decide.
        r = member(srv, key, "000001.jpg", headers={"If-None-Match": etag})
        h.eq(r.status, 304, "If-None-Match with the object's ETag")
        r = member(srv, key, "000001.jpg", headers={"If-Match": '"0123456789abcdef0123456789abcdef"'})
        h.expect_s3_error(r.status, r.body, 412, "PreconditionFailed", "If-Match another ETag")
        r = member(srv, key, "000001.jpg", headers={"If-Match": etag})
        h.eq(r.status, 200, "If-Match the object's ETag")
        # The object itself reads as before.
        h.same_bytes(s3.get_object(Bucket=B, Key=key)["Body"].read(), raw, "whole object")
    h.eq(srv.metric(INDEXES), n0 + 3, "one index per tar PUT")
    # Content-Type application/x-tar indexes a key without .tar.
    raw, info = make_tar(samples(2, 100, seed=9))
    etag = s3.put_object(Bucket=B, Key="typed-shard", Body=raw,
                         ContentType="application/x-tar")["ETag"]
    h.eq(srv.metric(INDEXES), n0 + 4, "indexed by Content-Type")
    check_members(srv, "typed-shard", info, etag)


def test_multipart_and_copy(srv):
    import boto3.s3.transfer as tr
    s3 = srv.client()
    raw, info = make_tar(samples(120, 100 * 1024, seed=3))
    h.check(len(raw) > 11 * 1024 * 1024, "the shard spans several parts")
    cfg = tr.TransferConfig(multipart_threshold=5 * 1024 * 1024,
                            multipart_chunksize=5 * 1024 * 1024)
    s3.upload_fileobj(io.BytesIO(raw), B, "mp.tar", Config=cfg)
    hd = s3.head_object(Bucket=B, Key="mp.tar")
    h.check("-" in hd["ETag"], "a multipart object")
    n0 = srv.metric(INDEXES)
    check_members(srv, "mp.tar", info, hd["ETag"])
    h.eq(srv.metric(INDEXES), n0 + 1, "built on first use, once")
    # A copy shares the bytes; its index is built on its first use too,
    # whatever its name.
    for dst in ("copy.tar", "copy-of-shard"):
        s3.copy_object(Bucket=B, Key=dst, CopySource={"Bucket": B, "Key": "mp.tar"})
        name = "000007.jpg"
        r = member(srv, dst, name)
        h.eq(r.status, 200, "member of copy %s" % dst)
        h.same_bytes(r.body, info[name][1], "member of copy %s" % dst)
    h.eq(srv.metric(INDEXES), n0 + 3, "the copies got theirs")
    for k in ("mp.tar", "copy.tar", "copy-of-shard"):
        s3.delete_object(Bucket=B, Key=k)
    h.eq(srv.metric(INDEXES), n0, "deletes leave no index")


def test_not_a_tar_and_malformed(srv):
    s3 = srv.client()
    s3.put_object(Bucket=B, Key="plain.bin", Body=h.random_bytes(5000, seed=1))
    r = member(srv, "plain.bin", "a")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArchive", "not a tar")
    garbage = h.random_bytes(20000, seed=2)
    s3.put_object(Bucket=B, Key="bad.tar", Body=garbage)  # the PUT succeeds
    h.same_bytes(s3.get_object(Bucket=B, Key="bad.tar")["Body"].read(), garbage, "bad.tar")
    raw, info = make_tar(samples(3, 4000, seed=4))
    off, data = info["000002.jpg"]
    s3.put_object(Bucket=B, Key="trunc.tar", Body=raw[:off + 100])
    for key in ("bad.tar", "trunc.tar"):
        r = member(srv, key, "000000.jpg")
        h.expect_s3_error(r.status, r.body, 400, "InvalidArchive", key)
        r = srv.request("GET", "/%s/%s" % (B, key), "list-members")
        h.expect_s3_error(r.status, r.body, 400, "InvalidArchive", key + " listing")
    r = member(srv, "absent.tar", "a")
    h.expect_s3_error(r.status, r.body, 404, "NoSuchKey", "absent object")
    r = member(srv, "bad.tar", "")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "empty member name")
    r = srv.request("GET", "/%s/%s" % (B, "fmt-0.tar"), "member=000000.jpg", sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous member read")


def list_xml(srv, key, query):
    r = srv.request("GET", "/%s/%s" % (B, key), query)
    h.eq(r.status, 200, "list-members " + query)
    return ET.fromstring(r.body)


def test_list_members(srv):
    s3 = srv.client()
    raw, info = make_tar(samples(1000, 10, seed=5))  # 3000 members
    s3.put_object(Bucket=B, Key="big.tar", Body=raw)
    want = list(info.keys())
    # XML, default page of 1000, marker paging.
    got, marker, pages = [], "", 0
    while True:
        q = "list-members" + ("&marker=" + h.quote_param(marker) if marker else "")
        doc = list_xml(srv, "big.tar", q)
        for m in doc.findall(NS + "Member"):
            name = m.find(NS + "Name").text
            got.append(name)
            h.eq(int(m.find(NS + "Offset").text), info[name][0], "offset of " + name)
            h.eq(int(m.find(NS + "Size").text), len(info[name][1]), "size of " + name)
        pages += 1
        if doc.find(NS + "IsTruncated").text != "true":
            break
        marker = doc.find(NS + "NextMarker").text
    h.eq(got, want, "XML listing in archive order")
    h.eq(pages, 3, "pages of 1000")
    # JSON, pages of 700.
    got, marker = [], ""
    while True:
        q = "format=json&list-members&max-members=700" + (
            "&marker=" + h.quote_param(marker) if marker else "")
        r = srv.request("GET", "/%s/big.tar" % B, q)
        h.eq(r.status, 200, "JSON listing")
        h.eq(r.header("Content-Type"), "application/json", "JSON content type")
        doc = json.loads(r.body)
        h.check(len(doc["members"]) <= 700, "page size")
        for m in doc["members"]:
            h.eq((m["offset"], m["size"]), (info[m["name"]][0], len(info[m["name"]][1])),
                 m["name"])
            h.eq(m["mtime"], 1700000000, "mtime")
        got += [m["name"] for m in doc["members"]]
        if not doc["is_truncated"]:
            break
        marker = doc["next_marker"]
    h.eq(got, want, "JSON listing")
    r = srv.request("GET", "/%s/big.tar" % B, "list-members&marker=nope")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "unknown marker")
    # Names that XML cannot carry as they are: UTF-8 round-trips.
    raw, info = make_tar([("ünï/名前.txt", b"x"), ("a b&c<d>.json", b"{}")])
    s3.put_object(Bucket=B, Key="names.tar", Body=raw)
    doc = list_xml(srv, "names.tar", "list-members")
    h.eq([m.find(NS + "Name").text for m in doc.findall(NS + "Member")], list(info),
         "escaped names")


def test_presigned_member(srv):
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    s3 = srv.client()
    raw, info = make_tar(samples(3, 500, seed=6))
    s3.put_object(Bucket=B, Key="signed.tar", Body=raw)

    def presign(name):
        req = AWSRequest(method="GET", url="%s/%s/signed.tar?member=%s"
                         % (srv.endpoint, B, h.quote_param(name)))
        S3SigV4QueryAuth(Credentials(h.ACCESS_KEY, h.SECRET_KEY), "s3", h.REGION,
                         expires=300).add_auth(req)
        return req.url

    url = presign("000001.jpg")
    with urllib.request.urlopen(url, timeout=30) as resp:
        h.eq(resp.status, 200, "presigned member")
        h.same_bytes(resp.read(), info["000001.jpg"][1], "presigned member bytes")
    # Another member under the same signature: the query is signed.
    forged = url.replace("member=000001.jpg", "member=000002.jpg")
    h.check(forged != url, "forged URL differs")
    try:
        urllib.request.urlopen(forged, timeout=30)
        raise h.Failure("a member not covered by the signature was served")
    except urllib.error.HTTPError as e:
        h.eq(e.code, 403, "forged member URL")


def test_event_loop_unless_building(srv):
    """An indexed member is served on the event loop like any GET; only the
    first request on an object without an index goes to a worker."""
    s3 = srv.client()
    raw, info = make_tar(samples(3, 700, seed=8))
    s3.put_object(Bucket=B, Key="loop.tar", Body=raw)
    s3.put_object(Bucket=B, Key="loop-unindexed", Body=raw)
    off0 = srv.metric("shardstore_http_offloaded_total")
    for _ in range(5):
        h.eq(member(srv, "loop.tar", "000001.jpg").status, 200, "indexed member")
    h.eq(srv.request("GET", "/%s/loop.tar" % B, "list-members").status, 200, "indexed listing")
    h.eq(srv.metric("shardstore_http_offloaded_total"), off0, "no worker for indexed members")
    h.eq(member(srv, "loop-unindexed", "000001.jpg").status, 200, "first use")
    off1 = srv.metric("shardstore_http_offloaded_total")
    h.eq(off1, off0 + 1, "the first use builds on a worker")
    h.eq(member(srv, "loop-unindexed", "000002.cls").status, 200, "second use")
    h.eq(srv.metric("shardstore_http_offloaded_total"), off1, "built once")


def test_overwrite_and_delete(srv):
    s3 = srv.client()
    n0 = srv.metric(INDEXES)
    raw_a, info_a = make_tar([("a.txt", b"version a"), ("only-a.txt", b"a")])
    raw_b, info_b = make_tar([("a.txt", b"version b!"), ("only-b.txt", b"b")])
    s3.put_object(Bucket=B, Key="ow.tar", Body=raw_a)
    h.same_bytes(member(srv, "ow.tar", "a.txt").body, b"version a", "first version")
    s3.put_object(Bucket=B, Key="ow.tar", Body=raw_b)
    h.same_bytes(member(srv, "ow.tar", "a.txt").body, b"version b!", "overwritten")
    r = member(srv, "ow.tar", "only-a.txt")
    h.expect_s3_error(r.status, r.body, 404, "NoSuchMember", "old member gone")
    h.eq(srv.metric(INDEXES), n0 + 1, "one index after an overwrite")
    s3.put_object(Bucket=B, Key="ow.tar", Body=b"no longer a tar")
    r = member(srv, "ow.tar", "a.txt")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArchive", "overwritten by a non-tar")
    s3.delete_object(Bucket=B, Key="ow.tar")
    h.eq(srv.metric(INDEXES), n0, "delete leaves no index")
    # DeleteObjects too.
    s3.put_object(Bucket=B, Key="d1.tar", Body=raw_a)
    s3.put_object(Bucket=B, Key="d2.tar", Body=raw_b)
    h.eq(srv.metric(INDEXES), n0 + 2, "two more")
    s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "d1.tar"}, {"Key": "d2.tar"}]})
    h.eq(srv.metric(INDEXES), n0, "DeleteObjects leaves no index")


TESTS = [
    test_setup,
    test_put_formats,
    test_multipart_and_copy,
    test_not_a_tar_and_malformed,
    test_list_members,
    test_presigned_member,
    test_event_loop_unless_building,
    test_overwrite_and_delete,
]

if __name__ == "__main__":
    h.main(TESTS)
