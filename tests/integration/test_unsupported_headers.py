"""test_unsupported_headers.py: headers that ask for what the server does
not do are refused (501 NotImplemented naming the header), never ignored
(issue 16 item 4): website redirects (object lock, ACL grants, object ACLs
and server-side encryption are implemented: test_object_lock.py,
test_access_control.py, test_sse.py, and checked here not to be refused).
Each refused write leaves no object behind; the headers SDKs send by
default (checksums, Content-MD5) pass.
"""
import base64
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

BUCKET = "unsupported"
PUBLIC = "unsupported-pub"


def refused(r, header, what):
    h.expect_s3_error(r.status, r.body, 501, "NotImplemented", what)
    h.check(header.lower().encode() in r.body.lower(), "%s: the message names %s: %r" % (what, header, r.body))


def absent(srv, bucket, key, what):
    r = srv.request("HEAD", "/%s/%s" % (bucket, key))
    h.eq(r.status, 404, "%s: the object must not exist" % what)


def put(srv, key, headers, bucket=BUCKET, body=b"data"):
    return srv.request("PUT", "/%s/%s" % (bucket, key), headers=headers, body=body)


def setup(srv):
    s3 = srv.client()
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    if BUCKET not in names:
        s3.create_bucket(Bucket=BUCKET, ObjectOwnership="ObjectWriter")
        s3.put_object(Bucket=BUCKET, Key="src", Body=b"source")
    if PUBLIC not in names:
        s3.create_bucket(Bucket=PUBLIC, ACL="public-read", ObjectOwnership="ObjectWriter")
    return s3


def test_object_lock(srv):
    # Object Lock is implemented (test_object_lock.py): in a bucket without
    # it the headers are refused as S3 refuses them, never ignored.
    s3 = setup(srv)
    for hdrs in ({"x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": "2099-01-01T00:00:00Z"},
                 {"x-amz-object-lock-legal-hold": "ON"}):
        r = put(srv, "locked", hdrs)
        h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "PutObject with %r" % hdrs)
        absent(srv, BUCKET, "locked", "object lock PutObject")
    with h.client_error("InvalidRequest", 400):
        s3.create_multipart_upload(Bucket=BUCKET, Key="locked-mp", ObjectLockLegalHoldStatus="ON")
    r = srv.request("PUT", "/unsupported-nolock", headers={"x-amz-bucket-object-lock-enabled": "false"})
    h.eq(r.status, 200, "CreateBucket with object lock disabled (%r)" % r.body[:200])


def test_grants(srv):
    # ACL grants are implemented (test_access_control.py): a grant to a
    # grantee that does not exist is refused as S3 refuses it.
    s3 = setup(srv)
    r = put(srv, "granted", {"x-amz-grant-read": 'uri="http://acs.amazonaws.com/groups/global/AllUsers"'})
    h.eq(r.status, 200, "PutObject with a grant (%r)" % r.body[:200])
    with h.client_error("InvalidArgument", 400):
        s3.create_bucket(Bucket="unsupported-grant", GrantFullControl='id="someone"')
    h.eq(srv.request("HEAD", "/unsupported-grant").status, 404, "no bucket created with a bad grant")
    r = srv.request("PUT", "/%s" % BUCKET, query="acl", headers={"x-amz-acl": "private", "x-amz-grant-read": 'id="x"'})
    h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "PutBucketAcl with both")


def test_object_acl(srv):
    s3 = setup(srv)
    # private in a public-read bucket is honoured (the object's own ACL
    # decides): stored, and not readable anonymously.
    r = put(srv, "secret", {"x-amz-acl": "private"}, bucket=PUBLIC)
    h.eq(r.status, 200, "x-amz-acl: private in a public-read bucket (%r)" % r.body[:200])
    h.eq(srv.request("GET", "/%s/secret" % PUBLIC, sign=False).status, 403, "not readable anonymously")
    s3.put_object(Bucket=PUBLIC, Key="secret-boto", Body=b"x", ACL="private")
    s3.copy_object(Bucket=PUBLIC, Key="secret-copy", CopySource={"Bucket": BUCKET, "Key": "src"}, ACL="private")
    for k in ("secret-boto", "secret-copy"):
        h.eq(srv.request("GET", "/%s/%s" % (PUBLIC, k), sign=False).status, 403, "%s private" % k)
    # Object ACLs that add readers are kept (acl.c).
    for acl in ("public-read", "authenticated-read", "public-read-write", "aws-exec-read"):
        h.eq(put(srv, "other", {"x-amz-acl": acl}).status, 200, "x-amz-acl: %s" % acl)
    # What the bucket gives anyway is honoured.
    h.eq(put(srv, "priv", {"x-amz-acl": "private"}).status, 200, "private in a private bucket")
    h.eq(put(srv, "own", {"x-amz-acl": "bucket-owner-full-control"}).status, 200, "bucket-owner-full-control")
    h.eq(put(srv, "pub", {"x-amz-acl": "public-read"}, bucket=PUBLIC).status, 200, "public-read in a public-read bucket")
    s3.put_object(Bucket=BUCKET, Key="priv-boto", Body=b"x", ACL="private")
    # Bucket canned ACLs are implemented and stay accepted.
    s3.put_bucket_acl(Bucket=BUCKET, ACL="private")


def test_redirects(srv):
    setup(srv)
    r = put(srv, "redirect", {"x-amz-website-redirect-location": "https://evil.example/"})
    refused(r, "x-amz-website-redirect-location", "PutObject with a website redirect")
    absent(srv, BUCKET, "redirect", "redirect PutObject")


def test_default_client_headers_pass(srv):
    s3 = setup(srv)
    data = b"checksummed" * 100
    s3.put_object(Bucket=BUCKET, Key="ck", Body=data, ChecksumAlgorithm="CRC32")
    md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    s3.put_object(Bucket=BUCKET, Key="md5", Body=data, ContentMD5=md5)
    r = put(srv, "payer", {"x-amz-request-payer": "requester"})
    h.eq(r.status, 200, "x-amz-request-payer is accepted")
    h.eq(s3.get_object(Bucket=BUCKET, Key="ck")["Body"].read(), data, "checksummed object")


if __name__ == "__main__":
    h.main([
        test_object_lock,
        test_grants,
        test_object_acl,
        test_redirects,
        test_default_client_headers_pass,
    ])
