"""test_tagging.py: object tagging with boto3 (default configuration, CRC32
checksums on), aws-cli and raw signed requests.

PutObjectTagging / GetObjectTagging / DeleteObjectTagging round trips; AWS's
limits and errors (10 tags, 128-character keys, 256-character values,
duplicate keys, MalformedXML, a missing body digest); x-amz-tagging on
PutObject, CreateMultipartUpload (applied at completion) and CopyObject with
both x-amz-tagging-directive values; x-amz-tagging-count on GET and HEAD;
tagging leaves the data, ETag and Last-Modified alone; an overwrite without
tags drops them; hostile bodies (huge, invalid UTF-8, entities); the read and
write grants of a user.
"""

import base64
import hashlib
import json
import os
import sys
import tempfile
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, client_error, eq  # noqa: E402

BUCKET = "tagging"
MIB = 1 << 20


def tagset(d):
    return [{"Key": k, "Value": v} for k, v in d.items()]


def tags_of(s3, key):
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=BUCKET, Key=key)["TagSet"]}


def raw_put_tagging(srv, key, body, md5=True):
    """PUT ?tagging with a raw body (and its Content-MD5 unless md5=False)."""
    headers = {}
    if md5:
        headers["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
    return srv.request("PUT", "/%s/%s" % (BUCKET, harness.quote_key(key)), query="tagging=", headers=headers, body=body)


def test_setup(srv):
    srv.client().create_bucket(Bucket=BUCKET)


def test_round_trip(srv):
    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="rt", Body=b"round trip")
    eq(s3.get_object_tagging(Bucket=BUCKET, Key="rt")["TagSet"], [], "no tags yet: empty TagSet")
    want = {"project": "llm", "stage": "ckpt/epoch 3", "empty": "", "uni": "données-été", "sym": "a+b-c=d._:/@"}
    s3.put_object_tagging(Bucket=BUCKET, Key="rt", Tagging={"TagSet": tagset(want)})
    eq(tags_of(s3, "rt"), want, "tags read back")
    # The order given is the order kept.
    eq([t["Key"] for t in s3.get_object_tagging(Bucket=BUCKET, Key="rt")["TagSet"]], list(want), "tag order")
    # A new set replaces the old one whole.
    s3.put_object_tagging(Bucket=BUCKET, Key="rt", Tagging={"TagSet": tagset({"only": "one"})})
    eq(tags_of(s3, "rt"), {"only": "one"}, "replaced set")
    r = s3.delete_object_tagging(Bucket=BUCKET, Key="rt")
    eq(r["ResponseMetadata"]["HTTPStatusCode"], 204, "DeleteObjectTagging status")
    eq(tags_of(s3, "rt"), {}, "deleted tags")
    s3.delete_object_tagging(Bucket=BUCKET, Key="rt")  # deleting none is fine
    # An empty TagSet is accepted and clears the tags.
    s3.put_object_tagging(Bucket=BUCKET, Key="rt", Tagging={"TagSet": tagset({"a": "1"})})
    s3.put_object_tagging(Bucket=BUCKET, Key="rt", Tagging={"TagSet": []})
    eq(tags_of(s3, "rt"), {}, "empty TagSet clears")
    eq(s3.get_object(Bucket=BUCKET, Key="rt")["Body"].read(), b"round trip", "data unchanged")


def test_missing_object_and_bucket(srv):
    s3 = srv.client()
    with client_error("NoSuchKey", 404):
        s3.get_object_tagging(Bucket=BUCKET, Key="absent")
    with client_error("NoSuchKey", 404):
        s3.put_object_tagging(Bucket=BUCKET, Key="absent", Tagging={"TagSet": tagset({"a": "b"})})
    with client_error("NoSuchKey", 404):
        s3.delete_object_tagging(Bucket=BUCKET, Key="absent")
    with client_error("NoSuchBucket", 404):
        s3.get_object_tagging(Bucket="no-such-bucket-tagging", Key="k")


def test_limits(srv):
    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="lim", Body=b"x")
    ten = {"k%d" % i: "v%d" % i for i in range(10)}
    s3.put_object_tagging(Bucket=BUCKET, Key="lim", Tagging={"TagSet": tagset(ten)})
    eq(tags_of(s3, "lim"), ten, "10 tags")
    eleven = dict(ten, k10="v10")
    try:
        s3.put_object_tagging(Bucket=BUCKET, Key="lim", Tagging={"TagSet": tagset(eleven)})
        raise harness.Failure("11 tags accepted")
    except harness.Failure:
        raise
    except Exception as e:  # botocore ClientError
        eq(e.response["Error"]["Code"], "BadRequest", "11 tags: code")
        eq(e.response["Error"]["Message"], "Object tags cannot be greater than 10", "11 tags: message")
    eq(tags_of(s3, "lim"), ten, "a refused set leaves the old one")

    # Lengths count characters, not bytes: 128 and 256 three-byte characters pass.
    s3.put_object_tagging(Bucket=BUCKET, Key="lim", Tagging={"TagSet": [{"Key": "é" * 128, "Value": "€" * 256}]})
    eq(tags_of(s3, "lim"), {"é" * 128: "€" * 256}, "longest key and value")
    cases = [
        ({"Key": "k" * 129, "Value": "v"}, "InvalidTag", "The TagKey you have provided is too long, max 128"),
        ({"Key": "k", "Value": "v" * 257}, "InvalidTag", "The TagValue you have provided is too long, max 256"),
        ({"Key": "a,b", "Value": "v"}, "InvalidTag", "The TagKey you have provided is invalid"),
        ({"Key": "k", "Value": "a#b"}, "InvalidTag", "The TagValue you have provided is invalid"),
        ({"Key": "k", "Value": "tab\there"}, "InvalidTag", "The TagValue you have provided is invalid"),
    ]
    for tag, code, msg in cases:
        try:
            s3.put_object_tagging(Bucket=BUCKET, Key="lim", Tagging={"TagSet": [tag]})
            raise harness.Failure("accepted %r" % tag)
        except harness.Failure:
            raise
        except Exception as e:
            eq((e.response["Error"]["Code"], e.response["Error"]["Message"]), (code, msg), "tag %r" % (tag,)[:80])
            eq(e.response["ResponseMetadata"]["HTTPStatusCode"], 400, "status")
    try:
        s3.put_object_tagging(Bucket=BUCKET, Key="lim", Tagging={"TagSet": tagset({"a": "1"}) + tagset({"a": "2"})})
        raise harness.Failure("duplicate keys accepted")
    except harness.Failure:
        raise
    except Exception as e:
        eq(e.response["Error"]["Code"], "InvalidTag", "duplicate: code")
        eq(e.response["Error"]["Message"], "Cannot provide multiple Tags with the same key", "duplicate: message")
    # An empty key (boto3 refuses to send one).
    r = raw_put_tagging(srv, "lim", b"<Tagging><TagSet><Tag><Key></Key><Value>v</Value></Tag></TagSet></Tagging>")
    err = harness.expect_s3_error(r.status, r.body, 400, "InvalidTag", "empty key")
    eq(err["Message"], "The TagKey you have provided is invalid", "empty key: message")
    eq(tags_of(s3, "lim"), {"é" * 128: "€" * 256}, "refused sets changed nothing")


def test_malformed_and_hostile_bodies(srv):
    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="hostile", Body=b"x")
    s3.put_object_tagging(Bucket=BUCKET, Key="hostile", Tagging={"TagSet": tagset({"keep": "me"})})
    bad = [
        b"",
        b"not xml",
        b"<Tagging></Tagging>",  # no TagSet
        b"<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",  # no Value
        b"<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>",  # no Key
        b"<Tagging><TagSet><Tag><Key>k</Key><Key>j</Key><Value>v</Value></Tag></TagSet></Tagging>",
        b"<Tagging><TagSet></TagSet><TagSet></TagSet></Tagging>",
        b"<Other><TagSet></TagSet></Other>",
        b"<Tagging><TagSet><Tag><Key>\xff\xfe</Key><Value>v</Value></Tag></TagSet></Tagging>",  # bad UTF-8
        b'<!DOCTYPE x [<!ENTITY a "aaaa">]><Tagging><TagSet><Tag><Key>&a;</Key><Value>v</Value></Tag></TagSet></Tagging>',
        b"<Tagging><TagSet><Tag><Key>k</Key><Value>" + b"v" * 5000 + b"</Value></Tag></TagSet></Tagging>",
    ]
    for body in bad:
        r = raw_put_tagging(srv, "hostile", body)
        harness.expect_s3_error(r.status, r.body, 400, "MalformedXML", "body %r" % body[:60])
    # 11 tags in raw XML, and a huge body (over the 64 KiB limit for this call).
    eleven = b"<Tagging><TagSet>" + b"".join(b"<Tag><Key>k%d</Key><Value>v</Value></Tag>" % i for i in range(11)) + b"</TagSet></Tagging>"
    r = raw_put_tagging(srv, "hostile", eleven)
    harness.expect_s3_error(r.status, r.body, 400, "BadRequest", "11 raw tags")
    huge = b"<Tagging><TagSet>" + b"<Tag><Key>k</Key><Value>v</Value></Tag>" * 40000 + b"</TagSet></Tagging>"
    r = raw_put_tagging(srv, "hostile", huge)
    harness.expect_s3_error(r.status, r.body, 400, "MalformedXML", "huge body")
    # A body digest is required, and must match.
    good = b"<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>"
    r = raw_put_tagging(srv, "hostile", good, md5=False)
    harness.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "no Content-MD5")
    r = srv.request(
        "PUT", "/%s/hostile" % BUCKET, query="tagging=",
        headers={"Content-MD5": base64.b64encode(hashlib.md5(b"other").digest()).decode()}, body=good,
    )
    harness.expect_s3_error(r.status, r.body, 400, "BadDigest", "wrong Content-MD5")
    eq(tags_of(s3, "hostile"), {"keep": "me"}, "hostile bodies changed nothing")
    # A namespace and unknown elements are fine.
    ns = b'<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet><Tag><Key>n</Key><Value>s</Value><X>y</X></Tag></TagSet></Tagging>'
    r = raw_put_tagging(srv, "hostile", ns)
    eq(r.status, 200, "namespaced body: %r" % r.body[:200])
    eq(tags_of(s3, "hostile"), {"n": "s"}, "namespaced tags")


def test_tagging_keeps_data_etag_and_mtime(srv):
    s3 = srv.client()
    data = harness.random_bytes(MIB + 7, seed=3)
    s3.put_object(Bucket=BUCKET, Key="same", Body=data, Metadata={"m": "1"}, ContentType="text/x-test")
    before = s3.head_object(Bucket=BUCKET, Key="same")
    s3.put_object_tagging(Bucket=BUCKET, Key="same", Tagging={"TagSet": tagset({"a": "1"})})
    mid = s3.head_object(Bucket=BUCKET, Key="same")
    s3.delete_object_tagging(Bucket=BUCKET, Key="same")
    after = s3.head_object(Bucket=BUCKET, Key="same")
    for h in (mid, after):
        eq(h["ETag"], before["ETag"], "ETag unchanged")
        eq(h["LastModified"], before["LastModified"], "Last-Modified unchanged")
        eq(h["Metadata"], {"m": "1"}, "user metadata unchanged")
        eq(h["ContentType"], "text/x-test", "content type unchanged")
    got = s3.get_object(Bucket=BUCKET, Key="same", ChecksumMode="ENABLED")
    harness.same_bytes(got["Body"].read(), data)
    check(got.get("ChecksumCRC32"), "the object's checksum survives tagging: %r" % got.get("ChecksumCRC32"))
    # No tag entry leaks out as a header.
    r = srv.request("GET", "/%s/same" % BUCKET)
    check(not any(k.lower().startswith("x-shard") for k in r.headers.keys()), "internal header leaked: %r" % r.headers.items())


def test_count_header(srv):
    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="count", Body=b"c")
    check("TagCount" not in s3.get_object(Bucket=BUCKET, Key="count"), "no count without tags")
    r = srv.request("HEAD", "/%s/count" % BUCKET)
    eq(r.header("x-amz-tagging-count"), None, "HEAD without tags")
    s3.put_object_tagging(Bucket=BUCKET, Key="count", Tagging={"TagSet": tagset({"a": "1", "b": "2", "c": "3"})})
    eq(s3.get_object(Bucket=BUCKET, Key="count")["TagCount"], 3, "GET TagCount")
    eq(s3.head_object(Bucket=BUCKET, Key="count")["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count"), "3", "HEAD count")
    eq(s3.get_object(Bucket=BUCKET, Key="count", Range="bytes=0-0")["TagCount"], 3, "ranged GET TagCount")


def test_tagging_on_put_and_overwrite(srv):
    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="onput", Body=b"p", Tagging="k1=v1&k2=v%202&e=&plus=a+b&sym=%2F%40")
    eq(tags_of(s3, "onput"), {"k1": "v1", "k2": "v 2", "e": "", "plus": "a b", "sym": "/@"}, "tags from x-amz-tagging")
    # A new PUT without tags makes an object without tags, as S3 does.
    s3.put_object(Bucket=BUCKET, Key="onput", Body=b"p2")
    eq(tags_of(s3, "onput"), {}, "overwrite drops tags")
    check("TagCount" not in s3.get_object(Bucket=BUCKET, Key="onput"), "no count after overwrite")
    # Header errors.
    for value, code in [
        ("a=1&a=2", "InvalidArgument"),
        ("a=%zz", "InvalidArgument"),
        ("a=%ff", "InvalidArgument"),
        ("&".join("k%d=v" % i for i in range(11)), "BadRequest"),
        ("k=" + "v" * 257, "InvalidTag"),
        ("=v", "InvalidTag"),
        ("k=a%2Cb", "InvalidTag"),
    ]:
        with client_error(code, 400):
            s3.put_object(Bucket=BUCKET, Key="badhdr", Body=b"x", Tagging=value)
    with client_error("NoSuchKey", 404):
        s3.get_object(Bucket=BUCKET, Key="badhdr")
    # Empty pairs are skipped; a key alone has an empty value.
    s3.put_object(Bucket=BUCKET, Key="loose", Body=b"x", Tagging="&a&&b=2&")
    eq(tags_of(s3, "loose"), {"a": "", "b": "2"}, "loose header")


def test_multipart(srv):
    s3 = srv.client()
    up = s3.create_multipart_upload(Bucket=BUCKET, Key="mp", Tagging="team=ml&run=42")
    parts = []
    for n, data in enumerate([harness.random_bytes(5 * MIB, seed=11), b"tail"], start=1):
        p = s3.upload_part(Bucket=BUCKET, Key="mp", UploadId=up["UploadId"], PartNumber=n, Body=data)
        parts.append({"PartNumber": n, "ETag": p["ETag"], "ChecksumCRC32": p.get("ChecksumCRC32")})
        parts[-1] = {k: v for k, v in parts[-1].items() if v}
    s3.complete_multipart_upload(Bucket=BUCKET, Key="mp", UploadId=up["UploadId"], MultipartUpload={"Parts": parts})
    eq(tags_of(s3, "mp"), {"team": "ml", "run": "42"}, "tags applied at completion")
    eq(s3.head_object(Bucket=BUCKET, Key="mp")["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count"), "2", "count")
    # partNumber reads still work after tagging changes the metadata.
    s3.put_object_tagging(Bucket=BUCKET, Key="mp", Tagging={"TagSet": tagset({"x": "y"})})
    eq(s3.get_object(Bucket=BUCKET, Key="mp", PartNumber=2)["Body"].read(), b"tail", "part 2 after tagging")
    with client_error("InvalidArgument", 400):
        s3.create_multipart_upload(Bucket=BUCKET, Key="mp2", Tagging="a=1&a=2")


def test_copy(srv):
    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="src", Body=b"copy me", Tagging="from=src&n=1")
    src = {"Bucket": BUCKET, "Key": "src"}
    s3.copy_object(Bucket=BUCKET, Key="c-default", CopySource=src)
    eq(tags_of(s3, "c-default"), {"from": "src", "n": "1"}, "COPY is the default")
    s3.copy_object(Bucket=BUCKET, Key="c-copy", CopySource=src, TaggingDirective="COPY", Tagging="ignored=1")
    eq(tags_of(s3, "c-copy"), {"from": "src", "n": "1"}, "COPY ignores x-amz-tagging")
    s3.copy_object(Bucket=BUCKET, Key="c-replace", CopySource=src, TaggingDirective="REPLACE", Tagging="new=tag")
    eq(tags_of(s3, "c-replace"), {"new": "tag"}, "REPLACE")
    s3.copy_object(Bucket=BUCKET, Key="c-none", CopySource=src, TaggingDirective="REPLACE")
    eq(tags_of(s3, "c-none"), {}, "REPLACE without x-amz-tagging")
    s3.copy_object(Bucket=BUCKET, Key="c-meta", CopySource=src, MetadataDirective="REPLACE", Metadata={"z": "1"})
    eq(tags_of(s3, "c-meta"), {"from": "src", "n": "1"}, "metadata REPLACE keeps the tags (tagging COPY)")
    eq(tags_of(s3, "src"), {"from": "src", "n": "1"}, "source untouched")
    with client_error("InvalidArgument", 400):
        s3.copy_object(Bucket=BUCKET, Key="c-bad", CopySource=src, TaggingDirective="MERGE")
    with client_error("InvalidArgument", 400):
        s3.copy_object(Bucket=BUCKET, Key="c-bad", CopySource=src, TaggingDirective="REPLACE", Tagging="a=1&a=1")
    # Tagging a copy does not touch the source, which shares its extents.
    s3.put_object_tagging(Bucket=BUCKET, Key="c-default", Tagging={"TagSet": tagset({"mine": "1"})})
    eq(tags_of(s3, "src"), {"from": "src", "n": "1"}, "source tags after tagging the copy")
    eq(s3.get_object(Bucket=BUCKET, Key="c-default")["Body"].read(), b"copy me", "copy data")


def test_awscli(srv):
    aws = harness.require_tool("aws")
    tmp = tempfile.mkdtemp(prefix="tagging-aws-")
    cfg = os.path.join(tmp, "config")
    with open(cfg, "w") as f:
        f.write("[default]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID=srv.access_key, AWS_SECRET_ACCESS_KEY=srv.secret_key,
        AWS_DEFAULT_REGION=harness.REGION, AWS_CONFIG_FILE=cfg,
        AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "none"), AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="",
    )

    def run(*args, check_rc=True):
        return harness.run_cmd([aws, "s3api"] + list(args) + ["--endpoint-url", srv.endpoint], env=env, check_rc=check_rc, timeout=120)

    body = os.path.join(tmp, "body")
    with open(body, "wb") as f:
        f.write(b"cli body")
    run("put-object", "--bucket", BUCKET, "--key", "cli", "--body", body, "--tagging", "tool=aws&kind=cli")
    out = json.loads(run("get-object-tagging", "--bucket", BUCKET, "--key", "cli").stdout)
    eq({t["Key"]: t["Value"] for t in out["TagSet"]}, {"tool": "aws", "kind": "cli"}, "aws put-object --tagging")
    run("put-object-tagging", "--bucket", BUCKET, "--key", "cli", "--tagging", json.dumps({"TagSet": [{"Key": "x", "Value": "y z"}]}))
    out = json.loads(run("get-object-tagging", "--bucket", BUCKET, "--key", "cli").stdout)
    eq(out["TagSet"], [{"Key": "x", "Value": "y z"}], "aws put-object-tagging")
    eleven = {"TagSet": [{"Key": "k%d" % i, "Value": "v"} for i in range(11)]}
    r = run("put-object-tagging", "--bucket", BUCKET, "--key", "cli", "--tagging", json.dumps(eleven), check_rc=False)
    out = (r.stderr + r.stdout).decode(errors="replace")
    check(r.returncode != 0 and "Object tags cannot be greater than 10" in out, "aws: 11 tags refused: %r" % out[-300:])
    run("delete-object-tagging", "--bucket", BUCKET, "--key", "cli")
    out = json.loads(run("get-object-tagging", "--bucket", BUCKET, "--key", "cli").stdout)
    eq(out["TagSet"], [], "aws delete-object-tagging")


def test_grants(srv):
    def admin(method, what, **params):
        q = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
        r = srv.request(method, "/_/admin/" + what, query=q)
        check(200 <= r.status < 300, "admin %s %s: %d %r" % (method, what, r.status, r.body[:200]))
        return json.loads(r.body) if r.body else None

    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="granted", Body=b"g", Tagging="a=1")
    admin("POST", "users", name="tagreader")
    admin("POST", "users", name="tagwriter")
    rk = admin("POST", "keys", user="tagreader")
    wk = admin("POST", "keys", user="tagwriter")
    admin("PUT", "grants", user="tagreader", bucket=BUCKET, level="read")
    admin("PUT", "grants", user="tagwriter", bucket=BUCKET, level="write")
    reader = srv.client(access_key=rk["access_key"], secret_key=rk["secret_key"])
    writer = srv.client(access_key=wk["access_key"], secret_key=wk["secret_key"])
    eq({t["Key"]: t["Value"] for t in reader.get_object_tagging(Bucket=BUCKET, Key="granted")["TagSet"]}, {"a": "1"}, "read grant reads tags")
    with client_error("AccessDenied", 403):
        reader.put_object_tagging(Bucket=BUCKET, Key="granted", Tagging={"TagSet": tagset({"b": "2"})})
    with client_error("AccessDenied", 403):
        reader.delete_object_tagging(Bucket=BUCKET, Key="granted")
    writer.put_object_tagging(Bucket=BUCKET, Key="granted", Tagging={"TagSet": tagset({"b": "2"})})
    eq(tags_of(s3, "granted"), {"b": "2"}, "write grant tags")
    writer.delete_object_tagging(Bucket=BUCKET, Key="granted")
    eq(tags_of(s3, "granted"), {}, "write grant deletes tags")
    r = srv.request("GET", "/%s/granted" % BUCKET, query="tagging=", sign=False)
    harness.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous GetObjectTagging")


def test_tags_survive_restart(srv):
    s3 = srv.client()
    s3.put_object(Bucket=BUCKET, Key="durable", Body=b"d", Tagging="keep=yes")
    srv.restart()
    s3 = srv.client()
    eq(tags_of(s3, "durable"), {"keep": "yes"}, "tags after restart")


TESTS = [
    test_setup,
    test_round_trip,
    test_missing_object_and_bucket,
    test_limits,
    test_malformed_and_hostile_bodies,
    test_tagging_keeps_data_etag_and_mtime,
    test_count_header,
    test_tagging_on_put_and_overwrite,
    test_multipart,
    test_copy,
    test_awscli,
    test_grants,
    test_tags_survive_restart,
]

if __name__ == "__main__":
    harness.main(TESTS)
