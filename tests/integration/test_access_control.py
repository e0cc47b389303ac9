"""test_access_control.py: bucket policies, Public Access Block, Object
Ownership, bucket and object ACLs and anonymous answers (issue 13), through
boto3, aws-cli and raw unsigned requests.

Each case makes its own bucket; users come from the admin API.
"""

import json
import os
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.environ.get("SHARD_SRCDIR", os.path.dirname(__file__)))
import harness as h  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402


def admin_api(srv, method, what, **params):
    q = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
    r = srv.request(method, "/_/admin/" + what, query=q)
    h.check(200 <= r.status < 300, "%s /_/admin/%s: HTTP %d %r" % (method, what, r.status, r.body[:300]))
    return json.loads(r.body) if r.body.strip() else None


_users = {}


def user_client(srv, name, **user_params):
    """A boto3 client for user 'name' (created on first use)."""
    if name not in _users:
        admin_api(srv, "POST", "users", name=name, **user_params)
        k = admin_api(srv, "POST", "keys", user=name)
        _users[name] = k
    k = _users[name]
    return srv.client(access_key=k["access_key"], secret_key=k["secret_key"])


def anon(srv, method, bucket, key="", query="", body=None, headers=None):
    path = "/" + bucket + ("/" + urllib.parse.quote(key) if key else "")
    return srv.request(method, path, query=query, body=body, headers=headers, sign=False)


def policy(*stmts):
    return json.dumps({"Version": "2012-10-17", "Statement": list(stmts)})


def test_policy_round_trip_and_status(srv):
    s3 = srv.client()
    b = "pol-rt"
    s3.create_bucket(Bucket=b)
    with h.client_error("NoSuchBucketPolicy", 404):
        s3.get_bucket_policy(Bucket=b)
    with h.client_error("NoSuchBucketPolicy", 404):
        s3.get_bucket_policy_status(Bucket=b)
    doc = policy({"Sid": "pub", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                  "Resource": "arn:aws:s3:::%s/public/*" % b})
    s3.put_bucket_policy(Bucket=b, Policy=doc)
    h.eq(s3.get_bucket_policy(Bucket=b)["Policy"], doc, "policy reads back byte for byte")
    h.eq(s3.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"], True, "public")
    # Pinned to an address: not public.
    doc2 = policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                   "Resource": "arn:aws:s3:::%s/*" % b,
                   "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}})
    s3.put_bucket_policy(Bucket=b, Policy=doc2)
    h.eq(s3.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"], False, "pinned")
    s3.delete_bucket_policy(Bucket=b)
    with h.client_error("NoSuchBucketPolicy", 404):
        s3.get_bucket_policy(Bucket=b)


def test_malformed_policies(srv):
    s3 = srv.client()
    b = "pol-bad"
    s3.create_bucket(Bucket=b)
    obj = "arn:aws:s3:::%s/*" % b
    cases = [
        ("[]", "Policies must be valid JSON and the first byte must be '{'"),
        ("{\"Statement\": [", "This policy contains invalid Json"),
        (json.dumps({"Version": "2001-01-01", "Statement": []}), "The policy must contain a valid version string"),
        (policy({"Effect": "Allow", "Action": "s3:GetObject", "Resource": obj}), "Missing required field Principal"),
        (policy({"Effect": "Maybe", "Principal": "*", "Action": "s3:GetObject", "Resource": obj}), "Invalid effect: Maybe"),
        (policy({"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:user/nobody"},
                 "Action": "s3:GetObject", "Resource": obj}), "Invalid principal in policy"),
        (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:FlyAway", "Resource": obj}), "Policy has invalid action"),
        (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                 "Resource": "arn:aws:s3:::another-bucket/*"}), "Policy has invalid resource"),
        (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                 "Resource": "arn:aws:s3:::%s" % b}), "Action does not apply to any resource(s) in statement"),
        (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": obj,
                 "Condition": {"StringEqualz": {"s3:prefix": "a"}}}), "Invalid Condition type : StringEqualz"),
        (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": obj,
                 "Condition": {"StringEquals": {"s3:nonsense": "a"}}}), "Policy has an invalid condition key"),
    ]
    for doc, msg in cases:
        try:
            s3.put_bucket_policy(Bucket=b, Policy=doc)
        except ClientError as e:
            h.eq(e.response["Error"]["Code"], "MalformedPolicy", "code for %s" % doc)
            h.eq(e.response["Error"]["Message"], msg, "message for %s" % doc)
        else:
            raise h.Failure("policy accepted: %s" % doc)
    with h.client_error("NoSuchBucketPolicy", 404):
        s3.get_bucket_policy(Bucket=b)


def test_anonymous_and_public_policy(srv):
    s3 = srv.client()
    b = "pol-anon"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="public/a.txt", Body=b"hello")
    s3.put_object(Bucket=b, Key="private/b.txt", Body=b"secret")
    # Anonymous: AccessDenied on an existing bucket, NoSuchBucket on a missing one.
    h.eq(anon(srv, "GET", b, "public/a.txt").status, 403, "anonymous before the policy")
    r = anon(srv, "GET", "pol-no-such-bucket", "x")
    h.expect_s3_error(r.status, r.body, 404, "NoSuchBucket", "anonymous, missing bucket")
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::%s/public/*" % b}))
    r = anon(srv, "GET", b, "public/a.txt")
    h.eq((r.status, r.body), (200, b"hello"), "anonymous read under public/")
    r = anon(srv, "GET", b, "private/b.txt")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous read outside public/")
    r = anon(srv, "GET", b, query="list-type=2")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous list")
    r = anon(srv, "PUT", b, "public/new", body=b"x")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous write")
    # RestrictPublicBuckets: the public statement stops counting.
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
        "BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
        "RestrictPublicBuckets": True})
    h.eq(anon(srv, "GET", b, "public/a.txt").status, 403, "restricted public bucket")
    # BlockPublicPolicy: a public policy cannot be set any more.
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
        "BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": True,
        "RestrictPublicBuckets": False})
    with h.client_error("AccessDenied", 403):
        s3.put_bucket_policy(Bucket=b, Policy=policy(
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::%s/*" % b}))
    h.eq(anon(srv, "GET", b, "public/a.txt").status, 200, "old policy still applies")
    got = s3.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"]
    h.eq(got["BlockPublicPolicy"], True, "PAB reads back")
    s3.delete_public_access_block(Bucket=b)
    with h.client_error("NoSuchPublicAccessBlockConfiguration", 404):
        s3.get_public_access_block(Bucket=b)


def test_explicit_deny_beats_grant(srv):
    s3 = srv.client()
    b = "pol-deny"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="keep/x", Body=b"x")
    s3.put_object(Bucket=b, Key="open/y", Body=b"y")
    alice = user_client(srv, "pol-alice")
    admin_api(srv, "PUT", "grants", user="pol-alice", bucket=b, level="admin")
    alice.get_object(Bucket=b, Key="keep/x")
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Deny", "Principal": {"AWS": "arn:aws:iam::000000000000:user/pol-alice"},
         "Action": ["s3:GetObject", "s3:DeleteObject"], "Resource": "arn:aws:s3:::%s/keep/*" % b}))
    with h.client_error("AccessDenied", 403):
        alice.get_object(Bucket=b, Key="keep/x")
    with h.client_error("AccessDenied", 403):
        alice.delete_object(Bucket=b, Key="keep/x")
    alice.get_object(Bucket=b, Key="open/y")
    # The deny names alice only: root still reads.
    s3.get_object(Bucket=b, Key="keep/x")
    # A Deny for everyone binds the owner (root) too, but root may still
    # manage the policy itself.
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [
            "arn:aws:s3:::%s" % b, "arn:aws:s3:::%s/*" % b]}))
    with h.client_error("AccessDenied", 403):
        s3.get_object(Bucket=b, Key="open/y")
    with h.client_error("AccessDenied", 403):
        s3.list_objects_v2(Bucket=b)
    s3.delete_bucket_policy(Bucket=b)
    s3.get_object(Bucket=b, Key="open/y")


def test_policy_allows_user_without_grant(srv):
    s3 = srv.client()
    b = "pol-allow"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="data/1", Body=b"1")
    s3.put_object(Bucket=b, Key="other/2", Body=b"2")
    bob = user_client(srv, "pol-bob")
    with h.client_error("AccessDenied", 403):
        bob.get_object(Bucket=b, Key="data/1")
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Sid": "read", "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::000000000000:user/pol-bob"]},
         "Action": "s3:Get*", "Resource": "arn:aws:s3:::%s/data/*" % b},
        {"Sid": "list", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::000000000000:user/pol-bob"},
         "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::%s" % b,
         "Condition": {"StringLike": {"s3:prefix": "data/*"}}},
        {"Sid": "put", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::000000000000:user/pol-bob"},
         "Action": "s3:PutObject", "Resource": "arn:aws:s3:::%s/up/*" % b,
         "Condition": {"StringEquals": {"s3:RequestObjectTag/team": "ml"}}},
        {"Sid": "tagged", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::000000000000:user/pol-bob"},
         "Action": "s3:GetObject", "Resource": "arn:aws:s3:::%s/*" % b,
         "Condition": {"StringEquals": {"s3:ExistingObjectTag/share": "yes"}}}))
    h.eq(bob.get_object(Bucket=b, Key="data/1")["Body"].read(), b"1", "allowed by the policy")
    with h.client_error("AccessDenied", 403):
        bob.get_object(Bucket=b, Key="other/2")
    h.eq(bob.list_objects_v2(Bucket=b, Prefix="data/")["KeyCount"], 1, "list with s3:prefix")
    with h.client_error("AccessDenied", 403):
        bob.list_objects_v2(Bucket=b)
    with h.client_error("AccessDenied", 403):
        bob.put_object(Bucket=b, Key="up/x", Body=b"x")
    bob.put_object(Bucket=b, Key="up/x", Body=b"x", Tagging="team=ml")
    # s3:ExistingObjectTag: tagging the object opens it.
    s3.put_object_tagging(Bucket=b, Key="other/2", Tagging={"TagSet": [{"Key": "share", "Value": "yes"}]})
    h.eq(bob.get_object(Bucket=b, Key="other/2")["Body"].read(), b"2", "ExistingObjectTag")


def test_condition_keys(srv):
    s3 = srv.client()
    b = "pol-cond"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"k")
    res = "arn:aws:s3:::%s/*" % b
    # SecureTransport: plain HTTP here, so a deny on false applies.
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": res,
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}}))
    with h.client_error("AccessDenied", 403):
        s3.get_object(Bucket=b, Key="k")
    # SourceIp: the loopback address matches 127.0.0.0/8, not 10.0.0.0/8.
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": res,
         "Condition": {"NotIpAddress": {"aws:SourceIp": ["10.0.0.0/8"]}}}))
    with h.client_error("AccessDenied", 403):
        s3.get_object(Bucket=b, Key="k")
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": res,
         "Condition": {"NotIpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}}))
    s3.get_object(Bucket=b, Key="k")
    # Dates, numbers, IfExists, Null.
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": res,
         "Condition": {"DateGreaterThan": {"aws:CurrentTime": "2001-01-01T00:00:00Z"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::%s" % b,
         "Condition": {"NumericGreaterThanIfExists": {"s3:max-keys": "10"}}}))
    with h.client_error("AccessDenied", 403):
        s3.get_object(Bucket=b, Key="k")
    # IfExists: a request without max-keys matches too.
    with h.client_error("AccessDenied", 403):
        s3.list_objects_v2(Bucket=b)
    s3.list_objects_v2(Bucket=b, MaxKeys=5)
    with h.client_error("AccessDenied", 403):
        s3.list_objects_v2(Bucket=b, MaxKeys=50)
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": res,
         "Condition": {"Null": {"s3:x-amz-server-side-encryption": "true"},
                       "StringNotEquals": {"aws:username": "nobody"}}}))
    with h.client_error("AccessDenied", 403):
        s3.put_object(Bucket=b, Key="k2", Body=b"x")
    s3.delete_bucket_policy(Bucket=b)


def test_ownership_controls(srv):
    s3 = srv.client()
    b = "pol-own"
    s3.create_bucket(Bucket=b)
    # AWS's default for new buckets since April 2023: ACLs off.
    got = s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"][0]
    h.eq(got["ObjectOwnership"], "BucketOwnerEnforced", "a new bucket's default")
    s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={
        "Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    got = s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"][0]
    h.eq(got["ObjectOwnership"], "ObjectWriter", "ownership reads back")
    s3.delete_bucket_ownership_controls(Bucket=b)
    with h.client_error("OwnershipControlsNotFoundError", 404):
        s3.get_bucket_ownership_controls(Bucket=b)


ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


def grants_of(resp):
    out = set()
    for g in resp["Grants"]:
        ge = g["Grantee"]
        out.add((ge.get("URI") or ge.get("ID"), g["Permission"]))
    return out


def test_bucket_acls(srv):
    s3 = srv.client()
    b = "acl-bucket"
    s3.create_bucket(Bucket=b, ACL="authenticated-read", ObjectOwnership="ObjectWriter")
    s3.put_object(Bucket=b, Key="k", Body=b"k")
    carol = user_client(srv, "acl-carol", email="carol@example.com")
    carol_id = admin_user(srv, "acl-carol")["id"]
    owner = s3.get_bucket_acl(Bucket=b)["Owner"]["ID"]
    h.eq(grants_of(s3.get_bucket_acl(Bucket=b)), {(owner, "FULL_CONTROL"), (AUTH_USERS, "READ")},
         "authenticated-read at create")
    # Bucket READ lists; it does not read objects.
    h.eq(carol.list_objects_v2(Bucket=b)["KeyCount"], 1, "authenticated user lists")
    with h.client_error("AccessDenied", 403):
        carol.get_object(Bucket=b, Key="k")
    h.eq(anon(srv, "GET", b).status, 403, "anonymous cannot list")
    # public-read: anonymous list and read (the bucket's public-read flag).
    s3.put_bucket_acl(Bucket=b, ACL="public-read")
    h.eq(anon(srv, "GET", b, "k").status, 200, "public-read bucket serves objects")
    h.eq(grants_of(s3.get_bucket_acl(Bucket=b)), {(owner, "FULL_CONTROL"), (ALL_USERS, "READ")}, "public-read")
    s3.put_bucket_acl(Bucket=b, ACL="private")
    h.eq(anon(srv, "GET", b, "k").status, 403, "private again")
    with h.client_error("AccessDenied", 403):
        carol.list_objects_v2(Bucket=b)
    # An AccessControlPolicy body: grants by id and by e-mail address.
    s3.put_bucket_acl(Bucket=b, AccessControlPolicy={
        "Owner": {"ID": owner},
        "Grants": [{"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": "carol@example.com"},
                    "Permission": "WRITE"},
                   {"Grantee": {"Type": "CanonicalUser", "ID": carol_id}, "Permission": "READ_ACP"}]})
    h.eq(grants_of(s3.get_bucket_acl(Bucket=b)),
         {(owner, "FULL_CONTROL"), (carol_id, "WRITE"), (carol_id, "READ_ACP")}, "XML grants")
    carol.put_object(Bucket=b, Key="by-carol", Body=b"c")
    carol.get_bucket_acl(Bucket=b)
    with h.client_error("AccessDenied", 403):
        carol.put_bucket_acl(Bucket=b, ACL="public-read")
    # x-amz-grant-* headers.
    s3.put_bucket_acl(Bucket=b, GrantRead='uri="%s"' % AUTH_USERS, GrantWriteACP='id="%s"' % carol_id)
    carol.put_bucket_acl(Bucket=b, ACL="private")
    # Unknown grantees.
    with h.client_error("UnresolvableGrantByEmailAddress", 400):
        s3.put_bucket_acl(Bucket=b, GrantRead='emailAddress="nobody@example.com"')
    with h.client_error("InvalidArgument", 400):
        s3.put_bucket_acl(Bucket=b, GrantRead='id="%s"' % ("0" * 64))
    with h.client_error("InvalidArgument", 400):
        s3.put_bucket_acl(Bucket=b, GrantRead='uri="http://example.com/group"')
    with h.client_error("InvalidArgument", 400):
        s3.put_bucket_acl(Bucket=b, ACL="wide-open")


def admin_user(srv, name):
    r = srv.request("GET", "/_/admin/users")
    for u in json.loads(r.body)["users"]:
        if u["name"] == name:
            return u
    raise h.Failure("no user %s" % name)


def test_object_acls(srv):
    s3 = srv.client()
    b = "acl-object"
    s3.create_bucket(Bucket=b, ObjectOwnership="BucketOwnerPreferred")
    dave = user_client(srv, "acl-dave", email="dave@example.com")
    s3.put_object(Bucket=b, Key="pub", Body=b"p", ACL="public-read")
    s3.put_object(Bucket=b, Key="priv", Body=b"q")
    h.eq(anon(srv, "GET", b, "pub").status, 200, "public-read object")
    h.eq(anon(srv, "GET", b, "priv").status, 403, "private object")
    h.check((ALL_USERS, "READ") in grants_of(s3.get_object_acl(Bucket=b, Key="pub")), "object ACL shows AllUsers")
    s3.put_object_acl(Bucket=b, Key="pub", ACL="private")
    h.eq(anon(srv, "GET", b, "pub").status, 403, "made private")
    s3.put_object_acl(Bucket=b, Key="priv", GrantRead='emailAddress="dave@example.com"')
    h.eq(dave.get_object(Bucket=b, Key="priv")["Body"].read(), b"q", "grant by e-mail")
    with h.client_error("AccessDenied", 403):
        dave.get_object_acl(Bucket=b, Key="priv")
    with h.client_error("NoSuchKey", 404):
        s3.get_object_acl(Bucket=b, Key="missing")
    # CopyObject and multipart uploads take ACLs too.
    s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "priv"}, ACL="public-read")
    h.eq(anon(srv, "GET", b, "copy").status, 200, "copy with public-read")
    mp = s3.create_multipart_upload(Bucket=b, Key="mp", ACL="public-read")
    part = s3.upload_part(Bucket=b, Key="mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"m" * 10)
    s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=mp["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    h.eq(anon(srv, "GET", b, "mp").status, 200, "multipart with public-read")
    # A policy Deny beats the object ACL.
    s3.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::%s/copy" % b}))
    h.eq(anon(srv, "GET", b, "copy").status, 403, "deny beats the object ACL")
    s3.delete_bucket_policy(Bucket=b)
    # Public Access Block: BlockPublicAcls refuses, IgnorePublicAcls ignores.
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
        "BlockPublicAcls": True, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
        "RestrictPublicBuckets": False})
    with h.client_error("AccessDenied", 403):
        s3.put_object(Bucket=b, Key="pub2", Body=b"x", ACL="public-read")
    with h.client_error("AccessDenied", 403):
        s3.put_object_acl(Bucket=b, Key="priv", ACL="public-read")
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
        "BlockPublicAcls": False, "IgnorePublicAcls": True, "BlockPublicPolicy": False,
        "RestrictPublicBuckets": False})
    h.eq(anon(srv, "GET", b, "copy").status, 403, "IgnorePublicAcls")
    s3.delete_public_access_block(Bucket=b)
    h.eq(anon(srv, "GET", b, "copy").status, 200, "public again")


def test_owner_enforced_turns_acls_off(srv):
    s3 = srv.client()
    b = "acl-enforced"
    s3.create_bucket(Bucket=b, ObjectOwnership="BucketOwnerEnforced")
    with h.client_error("AccessControlListNotSupported", 400):
        s3.put_object(Bucket=b, Key="x", Body=b"x", ACL="public-read")
    with h.client_error("AccessControlListNotSupported", 400):
        s3.put_bucket_acl(Bucket=b, ACL="public-read")
    s3.put_object(Bucket=b, Key="x", Body=b"x", ACL="bucket-owner-full-control")
    s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    s3.put_object(Bucket=b, Key="y", Body=b"y", ACL="public-read")
    h.eq(anon(srv, "GET", b, "y").status, 200, "ACLs on again")
    s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    h.eq(anon(srv, "GET", b, "y").status, 403, "ACLs off: the object ACL decides nothing")
    owner = s3.get_bucket_acl(Bucket=b)["Owner"]["ID"]
    h.eq(grants_of(s3.get_object_acl(Bucket=b, Key="y")), {(owner, "FULL_CONTROL")},
         "ACLs off: GetObjectAcl shows only the owner's FULL_CONTROL")
    # A bucket whose ACL grants others cannot turn ACLs off.
    b2 = "acl-enforced2"
    s3.create_bucket(Bucket=b2, ACL="public-read", ObjectOwnership="ObjectWriter")
    with h.client_error("InvalidBucketAclWithObjectOwnership", 400):
        s3.put_bucket_ownership_controls(Bucket=b2, OwnershipControls={
            "Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    with h.client_error("InvalidBucketAclWithObjectOwnership", 400):
        s3.create_bucket(Bucket="acl-enforced3", ACL="public-read", ObjectOwnership="BucketOwnerEnforced")


def test_default_ownership_acls_off(srv):
    """New buckets start with BucketOwnerEnforced (AWS since April 2023):
    ACL-setting requests fail but for owner-only ones, ACL reads answer the
    owner's FULL_CONTROL."""
    s3 = srv.client()
    b = "own-default"
    s3.create_bucket(Bucket=b)
    owner = s3.get_bucket_acl(Bucket=b)["Owner"]["ID"]
    with h.client_error("AccessControlListNotSupported", 400):
        s3.put_object(Bucket=b, Key="x", Body=b"x", ACL="public-read")
    with h.client_error("AccessControlListNotSupported", 400):
        s3.put_bucket_acl(Bucket=b, ACL="public-read")
    with h.client_error("AccessControlListNotSupported", 400):
        s3.create_multipart_upload(Bucket=b, Key="m", ACL="authenticated-read")
    # Owner-only ACLs are accepted: bucket-owner-full-control, private.
    s3.put_object(Bucket=b, Key="x", Body=b"x", ACL="bucket-owner-full-control")
    s3.put_object(Bucket=b, Key="p", Body=b"p", ACL="private")
    s3.put_object_acl(Bucket=b, Key="x", ACL="bucket-owner-full-control")
    s3.put_bucket_acl(Bucket=b, ACL="private")
    with h.client_error("AccessControlListNotSupported", 400):
        s3.put_object_acl(Bucket=b, Key="x", ACL="public-read")
    h.eq(grants_of(s3.get_bucket_acl(Bucket=b)), {(owner, "FULL_CONTROL")}, "GetBucketAcl with ACLs off")
    h.eq(grants_of(s3.get_object_acl(Bucket=b, Key="x")), {(owner, "FULL_CONTROL")}, "GetObjectAcl with ACLs off")
    h.eq(anon(srv, "GET", b, "x").status, 403, "nothing public")
    # CreateBucket with a non-private canned ACL and no ownership.
    with h.client_error("InvalidBucketAclWithObjectOwnership", 400):
        s3.create_bucket(Bucket="own-default2", ACL="public-read")
    h.eq(srv.request("HEAD", "/own-default2").status, 404, "no bucket made with a refused ACL")
    s3.create_bucket(Bucket="own-default3", ACL="private")
    # No ownership stored (as for a bucket made before this default, or after
    # DeleteBucketOwnershipControls): ACLs on, as before.
    s3.delete_bucket_ownership_controls(Bucket="own-default3")
    s3.put_object(Bucket="own-default3", Key="o", Body=b"o", ACL="public-read")
    h.eq(anon(srv, "GET", "own-default3", "o").status, 200, "no stored ownership: ACLs on")
    # With ObjectWriter asked for, ACLs are on from the start.
    s3.create_bucket(Bucket="own-writer", ACL="public-read", ObjectOwnership="ObjectWriter")
    s3.put_object(Bucket="own-writer", Key="o", Body=b"o")
    h.eq(anon(srv, "GET", "own-writer", "o").status, 200, "public-read with ObjectWriter")


def test_private_object_in_public_bucket(srv):
    """An object's own ACL decides reads of it: private in a public-read
    bucket stays private, public-read in a private bucket is served."""
    s3 = srv.client()
    b = "acl-mixed"
    s3.create_bucket(Bucket=b, ACL="public-read", ObjectOwnership="ObjectWriter")
    erin = user_client(srv, "acl-erin")
    r = srv.request("PUT", "/%s/secret" % b, body=b"s", headers={"x-amz-acl": "private"})
    h.eq(r.status, 200, "x-amz-acl: private in a public-read bucket: %r" % r.body[:200])
    s3.put_object(Bucket=b, Key="secret-boto", Body=b"s", ACL="private")
    s3.put_object(Bucket=b, Key="plain", Body=b"p")
    s3.put_object(Bucket=b, Key="src", Body=b"c")
    s3.copy_object(Bucket=b, Key="secret-copy", CopySource={"Bucket": b, "Key": "src"}, ACL="private")
    for k in ("secret", "secret-boto", "secret-copy"):
        h.eq(anon(srv, "GET", b, k).status, 403, "anonymous GET of private %s" % k)
        h.eq(anon(srv, "HEAD", b, k).status, 403, "anonymous HEAD of private %s" % k)
    with h.client_error("AccessDenied", 403):
        erin.get_object(Bucket=b, Key="secret")
    # Others may not copy it out either.
    erin_b = "acl-mixed-erin"
    erin.create_bucket(Bucket=erin_b)
    with h.client_error("AccessDenied", 403):
        erin.copy_object(Bucket=erin_b, Key="stolen", CopySource={"Bucket": b, "Key": "secret"})
    # The owner still reads it; objects without an ACL of their own follow
    # the bucket; listing stays public.
    h.eq(s3.get_object(Bucket=b, Key="secret")["Body"].read(), b"s", "owner reads")
    h.eq(anon(srv, "GET", b, "plain").status, 200, "no object ACL: the bucket's public-read")
    h.eq(anon(srv, "GET", b).status, 200, "anonymous list of a public-read bucket")
    # PutObjectAcl both ways.
    s3.put_object_acl(Bucket=b, Key="plain", ACL="private")
    h.eq(anon(srv, "GET", b, "plain").status, 403, "PutObjectAcl private")
    s3.put_object_acl(Bucket=b, Key="secret", ACL="public-read")
    h.eq(anon(srv, "GET", b, "secret").status, 200, "PutObjectAcl public-read")
    # A public-read object in a private bucket is served to anyone.
    b2 = "acl-mixed-priv"
    s3.create_bucket(Bucket=b2, ObjectOwnership="ObjectWriter")
    s3.put_object(Bucket=b2, Key="open", Body=b"o", ACL="public-read")
    s3.put_object(Bucket=b2, Key="closed", Body=b"c")
    h.eq(anon(srv, "GET", b2, "open").status, 200, "public-read object in a private bucket")
    h.eq(anon(srv, "GET", b2, "closed").status, 403, "private bucket, object without ACL")
    h.eq(erin.get_object(Bucket=b2, Key="open")["Body"].read(), b"o", "another user reads it")
    erin.copy_object(Bucket=erin_b, Key="copied", CopySource={"Bucket": b2, "Key": "open"})


def test_awscli_policy(srv):
    h.require_tool("aws")
    s3 = srv.client()
    b = "pol-cli"
    s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=h.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=h.SECRET_KEY,
               AWS_DEFAULT_REGION=h.REGION, AWS_EC2_METADATA_DISABLED="true")
    env.pop("AWS_PROFILE", None)

    def cli(*args):
        p = subprocess.run(["aws", "--endpoint-url", srv.endpoint, "s3api"] + list(args),
                           env=env, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    doc = policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                  "Resource": "arn:aws:s3:::%s/*" % b})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(doc)
    try:
        rc, out, err = cli("put-bucket-policy", "--bucket", b, "--policy", "file://" + f.name)
        h.eq(rc, 0, "put-bucket-policy: %s" % err)
    finally:
        os.unlink(f.name)
    rc, out, err = cli("get-bucket-policy-status", "--bucket", b)
    h.eq(rc, 0, "get-bucket-policy-status: %s" % err)
    h.eq(json.loads(out)["PolicyStatus"]["IsPublic"], True, "cli policy status")
    s3.put_object(Bucket=b, Key="o", Body=b"o")
    rc, out, err = cli("put-object-acl", "--bucket", b, "--key", "o", "--acl", "authenticated-read")
    h.eq(rc, 0, "put-object-acl: %s" % err)
    h.check((AUTH_USERS, "READ") in grants_of(s3.get_object_acl(Bucket=b, Key="o")), "cli object ACL")
    rc, out, err = cli("put-public-access-block", "--bucket", b, "--public-access-block-configuration",
                       "BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true")
    h.eq(rc, 0, "put-public-access-block: %s" % err)
    h.eq(s3.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"]["IgnorePublicAcls"],
         True, "cli PAB")


TESTS = [
    test_policy_round_trip_and_status,
    test_malformed_policies,
    test_anonymous_and_public_policy,
    test_explicit_deny_beats_grant,
    test_policy_allows_user_without_grant,
    test_condition_keys,
    test_ownership_controls,
    test_bucket_acls,
    test_object_acls,
    test_owner_enforced_turns_acls_off,
    test_default_ownership_acls_off,
    test_private_object_in_public_bucket,
    test_awscli_policy,
]

if __name__ == "__main__":
    h.main(TESTS)
