"""test_object_lock.py: Object Lock with boto3, aws-cli and raw requests.

CreateBucket with x-amz-bucket-object-lock-enabled turns versioning on for
good (suspending is InvalidBucketState); Put/GetObjectLockConfiguration with
a default retention applied to new versions; x-amz-object-lock-* on PUT,
CopyObject and CreateMultipartUpload and on GET/HEAD; Put/GetObjectRetention
and Put/GetObjectLegalHold; a locked version cannot be removed (GOVERNANCE
only with x-amz-bypass-governance-retention by the owner or an admin grant,
COMPLIANCE never and only extended); a plain DELETE still adds a marker;
Content-MD5 or a checksum is required; AWS's errors.
"""

import base64
import datetime
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

B = "locked"


def future(days=1):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)


def test_create_locked_bucket(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=B, ObjectLockEnabledForBucket=True)
    eq(s3.get_bucket_versioning(Bucket=B)["Status"], "Enabled", "versioning on")
    with client_error("InvalidBucketState", 409):
        s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Suspended"})
    eq(s3.get_object_lock_configuration(Bucket=B)["ObjectLockConfiguration"], {"ObjectLockEnabled": "Enabled"}, "no default yet")
    s3.create_bucket(Bucket="plain-lock")
    with client_error("ObjectLockConfigurationNotFoundError", 404):
        s3.get_object_lock_configuration(Bucket="plain-lock")
    conf = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
    with client_error("InvalidBucketState", 409):
        s3.put_object_lock_configuration(Bucket="plain-lock", ObjectLockConfiguration=conf)
    with client_error("InvalidRequest", 400):
        s3.put_object(Bucket="plain-lock", Key="k", Body=b"x", ObjectLockLegalHoldStatus="ON")
    with client_error("InvalidRequest", 400):
        s3.put_object_retention(Bucket="plain-lock", Key="k", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future()})


def test_default_retention(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="deflock", ObjectLockEnabledForBucket=True)
    conf = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
    s3.put_object_lock_configuration(Bucket="deflock", ObjectLockConfiguration=conf)
    eq(s3.get_object_lock_configuration(Bucket="deflock")["ObjectLockConfiguration"], conf, "read back")
    bad = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 0}}}
    with client_error("InvalidArgument", 400):
        s3.put_object_lock_configuration(Bucket="deflock", ObjectLockConfiguration=bad)
    r = srv.request("PUT", "/deflock", query="object-lock=", body=b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>")
    harness.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "no Content-MD5")
    v = s3.put_object(Bucket="deflock", Key="k", Body=b"data")["VersionId"]
    h = s3.head_object(Bucket="deflock", Key="k")
    eq(h["ObjectLockMode"], "GOVERNANCE", "default mode applied")
    left = h["ObjectLockRetainUntilDate"] - datetime.datetime.now(datetime.timezone.utc)
    check(datetime.timedelta(hours=23) < left <= datetime.timedelta(days=1), "one day: %s" % left)
    with client_error("AccessDenied", 403):
        s3.delete_object(Bucket="deflock", Key="k", VersionId=v)
    # The owner may bypass GOVERNANCE.
    s3.delete_object(Bucket="deflock", Key="k", VersionId=v, BypassGovernanceRetention=True)
    with client_error("NoSuchKey", 404):
        s3.get_object(Bucket="deflock", Key="k")


def test_retention_rules(srv):
    s3 = srv.client()
    until = future(2).replace(microsecond=0)
    v = s3.put_object(Bucket=B, Key="c", Body=b"compliance", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    g = s3.get_object(Bucket=B, Key="c")
    eq((g["ObjectLockMode"], g["ObjectLockRetainUntilDate"]), ("COMPLIANCE", until), "lock headers on GET")
    eq(s3.get_object_retention(Bucket=B, Key="c", VersionId=v)["Retention"], {"Mode": "COMPLIANCE", "RetainUntilDate": until}, "GetObjectRetention")
    with client_error("AccessDenied", 403):
        s3.delete_object(Bucket=B, Key="c", VersionId=v, BypassGovernanceRetention=True)
    with client_error("AccessDenied", 403):
        s3.put_object_retention(Bucket=B, Key="c", VersionId=v, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": future(1)}, BypassGovernanceRetention=True)
    with client_error("AccessDenied", 403):
        s3.put_object_retention(Bucket=B, Key="c", VersionId=v, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(3)}, BypassGovernanceRetention=True)
    later = future(5).replace(microsecond=0)
    s3.put_object_retention(Bucket=B, Key="c", VersionId=v, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": later})
    eq(s3.get_object_retention(Bucket=B, Key="c")["Retention"]["RetainUntilDate"], later, "extended")
    # A plain DELETE adds a marker: the locked version stays.
    eq(s3.delete_object(Bucket=B, Key="c").get("DeleteMarker"), True, "marker over a locked version")
    eq(s3.get_object(Bucket=B, Key="c", VersionId=v)["Body"].read(), b"compliance", "locked version kept")
    # GOVERNANCE: shortened or removed only with the bypass.
    g = s3.put_object(Bucket=B, Key="g", Body=b"gov", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=future(2))["VersionId"]
    with client_error("AccessDenied", 403):
        s3.put_object_retention(Bucket=B, Key="g", VersionId=g, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(1)})
    s3.put_object_retention(Bucket=B, Key="g", VersionId=g, Retention={}, BypassGovernanceRetention=True)
    with client_error("NoSuchObjectLockConfiguration", 404):
        s3.get_object_retention(Bucket=B, Key="g", VersionId=g)
    s3.delete_object(Bucket=B, Key="g", VersionId=g)
    # Bad requests.
    with client_error("InvalidArgument", 400):
        s3.put_object(Bucket=B, Key="p", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=future(-1))
    r = srv.request("PUT", "/%s/p" % B, headers={"x-amz-object-lock-mode": "GOVERNANCE"}, body=b"x")
    harness.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "mode without date")
    r = srv.request("PUT", "/%s/p" % B, headers={"x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": future().strftime("%Y-%m-%dT%H:%M:%SZ")}, body=b"x")
    harness.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "lock without Content-MD5")
    md5 = base64.b64encode(hashlib.md5(b"x").digest()).decode()
    r = srv.request("PUT", "/%s/p" % B, headers={"Content-MD5": md5, "x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": future().strftime("%Y-%m-%dT%H:%M:%SZ")}, body=b"x")
    eq(r.status, 200, "with Content-MD5: %r" % r.body[:200])
    s3.delete_object(Bucket=B, Key="p", VersionId=r.header("x-amz-version-id"), BypassGovernanceRetention=True)


def test_legal_hold(srv):
    s3 = srv.client()
    v = s3.put_object(Bucket=B, Key="h", Body=b"held", ObjectLockLegalHoldStatus="ON")["VersionId"]
    eq(s3.head_object(Bucket=B, Key="h")["ObjectLockLegalHoldStatus"], "ON", "HEAD shows the hold")
    eq(s3.get_object_legal_hold(Bucket=B, Key="h")["LegalHold"], {"Status": "ON"}, "GetObjectLegalHold")
    with client_error("AccessDenied", 403):
        s3.delete_object(Bucket=B, Key="h", VersionId=v, BypassGovernanceRetention=True)
    s3.put_object_legal_hold(Bucket=B, Key="h", VersionId=v, LegalHold={"Status": "OFF"})
    eq(s3.get_object_legal_hold(Bucket=B, Key="h")["LegalHold"], {"Status": "OFF"}, "released")
    s3.delete_object(Bucket=B, Key="h", VersionId=v)
    r = srv.request("PUT", "/%s/h" % B, query="legal-hold=", body=b"<LegalHold><Status>MAYBE</Status></LegalHold>",
                    headers={"Content-MD5": base64.b64encode(hashlib.md5(b"<LegalHold><Status>MAYBE</Status></LegalHold>").digest()).decode()})
    harness.expect_s3_error(r.status, r.body, 400, "MalformedXML", "bad hold status")


def test_copy_and_multipart(srv):
    s3 = srv.client()
    s3.put_object(Bucket=B, Key="src", Body=b"source")
    until = future(1).replace(microsecond=0)
    r = s3.copy_object(Bucket=B, Key="cp", CopySource={"Bucket": B, "Key": "src"}, ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)
    eq(s3.head_object(Bucket=B, Key="cp", VersionId=r["VersionId"])["ObjectLockRetainUntilDate"], until, "copy locked")
    up = s3.create_multipart_upload(Bucket=B, Key="mp", ObjectLockLegalHoldStatus="ON")
    e = s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"part")["ETag"]
    v = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"], MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})["VersionId"]
    eq(s3.head_object(Bucket=B, Key="mp", VersionId=v)["ObjectLockLegalHoldStatus"], "ON", "multipart held")
    with client_error("AccessDenied", 403):
        s3.delete_object(Bucket=B, Key="mp", VersionId=v)


def test_bypass_needs_admin_grant(srv):
    def admin(method, what, **params):
        q = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
        r = srv.request(method, "/_/admin/" + what, query=q)
        check(200 <= r.status < 300, "admin %s %s: %d %r" % (method, what, r.status, r.body[:200]))
        return json.loads(r.body) if r.body else None

    s3 = srv.client()
    v = s3.put_object(Bucket=B, Key="gw", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=future())["VersionId"]
    admin("POST", "users", name="lockwriter")
    admin("POST", "users", name="lockadmin")
    wk = admin("POST", "keys", user="lockwriter")
    ak = admin("POST", "keys", user="lockadmin")
    admin("PUT", "grants", user="lockwriter", bucket=B, level="write")
    admin("PUT", "grants", user="lockadmin", bucket=B, level="admin")
    writer = srv.client(access_key=wk["access_key"], secret_key=wk["secret_key"])
    adm = srv.client(access_key=ak["access_key"], secret_key=ak["secret_key"])
    with client_error("AccessDenied", 403):
        writer.delete_object(Bucket=B, Key="gw", VersionId=v, BypassGovernanceRetention=True)
    adm.delete_object(Bucket=B, Key="gw", VersionId=v, BypassGovernanceRetention=True)


def test_awscli(srv):
    aws = harness.require_tool("aws")
    tmp = tempfile.mkdtemp(prefix="lock-aws-")
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

    # aws-cli starts slowly: a handful of calls, the rest through boto3.
    s3 = srv.client()
    v1 = s3.put_object(Bucket=B, Key="cli", Body=b"cli v1")["VersionId"]
    s3.put_object(Bucket=B, Key="cli", Body=b"cli v2")
    out = os.path.join(tmp, "out")
    run("get-object", "--bucket", B, "--key", "cli", "--version-id", v1, out)
    with open(out, "rb") as f:
        eq(f.read(), b"cli v1", "aws get-object --version-id")
    lv = json.loads(run("list-object-versions", "--bucket", B, "--prefix", "cli").stdout)
    eq([(x["VersionId"] == v1, x["IsLatest"]) for x in lv["Versions"]], [(False, True), (True, False)], "aws list-object-versions")
    until = future(1).strftime("%Y-%m-%dT%H:%M:%SZ")
    run("put-object-retention", "--bucket", B, "--key", "cli", "--version-id", v1, "--retention", json.dumps({"Mode": "GOVERNANCE", "RetainUntilDate": until}))
    eq(s3.get_object_retention(Bucket=B, Key="cli", VersionId=v1)["Retention"]["Mode"], "GOVERNANCE", "aws put-object-retention")
    r = run("delete-object", "--bucket", B, "--key", "cli", "--version-id", v1, check_rc=False)
    check(r.returncode != 0 and b"AccessDenied" in r.stderr, "aws delete of a locked version: %r" % r.stderr[-300:])
    s3.delete_object(Bucket=B, Key="cli", VersionId=v1, BypassGovernanceRetention=True)


TESTS = [
    test_create_locked_bucket,
    test_default_retention,
    test_retention_rules,
    test_legal_hold,
    test_copy_and_multipart,
    test_bypass_needs_admin_grant,
    test_awscli,
]

if __name__ == "__main__":
    harness.main(TESTS)
