"""test_lifecycle.py: bucket lifecycle configuration, bucket tagging and the
lifecycle worker.

- Put/Get/DeleteBucketLifecycleConfiguration round trips with boto3 and
  aws-cli; every validation error S3 gives (MalformedXML, InvalidArgument,
  InvalidRequest with S3's messages); Content-MD5 or a checksum required;
  a Transition refused when no tier serves its class; NoSuchLifecycleConfiguration.
- Put/Get/DeleteBucketTagging with S3's limits (InvalidTag) and NoSuchTagSet.
- The worker, with lifecycle_day_seconds = 1: expiration by days, date,
  prefix and size (matching objects vanish, the others stay, space comes
  back), abort of stale multipart uploads, x-amz-expiration on PUT, GET and
  HEAD, and kill -9 during a pass (each object afterwards either whole or
  gone, and no space leaked).
- Tag filters (Filter/Tag and And{Prefix, Tag, Tag}): objects whose tags
  match expire, the others (wrong value, a tag missing, untagged) stay;
  tags set or changed by PutObjectTagging after the PUT count;
  x-amz-expiration on PUT, HEAD and GET follows the object's tags; a bucket
  without Tag filters reads no object record.
"""
import base64
import datetime
import email.utils
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

B = "lc-main"
NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
FAST = "volume_size = 64M\nmax_volumes = 2\nlifecycle_day_seconds = 1\n"


def md5_b64(body):
    return base64.b64encode(hashlib.md5(body).digest()).decode()


def put_raw(srv, bucket, sub, body, md5=True, headers=None):
    hdrs = dict(headers or {})
    if md5:
        hdrs["Content-MD5"] = md5_b64(body)
    return srv.request("PUT", "/" + bucket, query=sub, headers=hdrs, body=body)


def lc_xml(*rules):
    return ("<LifecycleConfiguration %s>%s</LifecycleConfiguration>" % (NS, "".join(rules))).encode()


def rule(body, rid="r", status="Enabled", filt="<Filter><Prefix>p/</Prefix></Filter>"):
    idx = "<ID>%s</ID>" % rid if rid is not None else ""
    return "<Rule>%s%s<Status>%s</Status>%s</Rule>" % (idx, filt, status, body)


EXP1 = "<Expiration><Days>1</Days></Expiration>"


def expect_put_error(srv, body, status, code, message=None, what=""):
    r = put_raw(srv, B, "lifecycle", body)
    err = h.expect_s3_error(r.status, r.body, status, code, what)
    if message is not None:
        h.check(message in (err.get("Message") or ""),
                "%s: message %r lacks %r" % (what, err.get("Message"), message))


def run_pass(srv, bucket=None):
    r = srv.request("POST", "/_/lifecycle/run", query="bucket=" + bucket if bucket else "")
    h.eq(r.status, 200, "lifecycle run (%r)" % r.body[:300])
    return json.loads(r.body)


def test_setup(srv):
    s3 = srv.client()
    for b in (B, "lc-tags", "lc-cli"):
        s3.create_bucket(Bucket=b)


def test_boto3_round_trip(srv):
    s3 = srv.client()
    with h.client_error("NoSuchLifecycleConfiguration", 404):
        s3.get_bucket_lifecycle_configuration(Bucket=B)
    cfg = {"Rules": [
        {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
         "Expiration": {"Days": 7}},
        {"ID": "and", "Status": "Disabled",
         "Filter": {"And": {"Prefix": "ck/", "Tags": [{"Key": "k", "Value": "v"}],
                            "ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 1000}},
         "Expiration": {"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}},
        {"ID": "big", "Status": "Enabled", "Filter": {"ObjectSizeGreaterThan": 1 << 20},
         "Expiration": {"Days": 30}},
        {"ID": "mpu", "Status": "Enabled", "Filter": {},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 5}},
        {"ID": "tag", "Status": "Enabled", "Filter": {"Tag": {"Key": "tmp", "Value": "1"}},
         "Expiration": {"Days": 1}},
    ]}
    s3.put_bucket_lifecycle_configuration(Bucket=B, LifecycleConfiguration=cfg)
    got = s3.get_bucket_lifecycle_configuration(Bucket=B)["Rules"]
    h.eq([r["ID"] for r in got], ["logs", "and", "big", "mpu", "tag"], "rule ids")
    h.eq(got[0]["Filter"], {"Prefix": "logs/"}, "prefix filter")
    h.eq(got[0]["Expiration"], {"Days": 7}, "expiration days")
    h.eq(got[1]["Status"], "Disabled", "status")
    h.eq(got[1]["Filter"]["And"]["Tags"], [{"Key": "k", "Value": "v"}], "and tags")
    h.eq(got[1]["Filter"]["And"]["ObjectSizeLessThan"], 1000, "and size lt")
    h.eq(got[1]["Expiration"]["Date"],
         datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc), "expiration date")
    h.eq(got[3]["AbortIncompleteMultipartUpload"], {"DaysAfterInitiation": 2}, "abort")
    h.eq(got[3]["NoncurrentVersionExpiration"], {"NoncurrentDays": 5}, "noncurrent kept")
    h.eq(got[4]["Filter"], {"Tag": {"Key": "tmp", "Value": "1"}}, "tag filter")
    s3.delete_bucket_lifecycle(Bucket=B)
    with h.client_error("NoSuchLifecycleConfiguration", 404):
        s3.get_bucket_lifecycle_configuration(Bucket=B)
    # Deleting again is not an error, as in S3.
    s3.delete_bucket_lifecycle(Bucket=B)


def test_legacy_prefix_and_generated_id(srv):
    body = lc_xml(rule(EXP1, rid=None, filt="<Prefix>old/</Prefix>"))
    r = put_raw(srv, B, "lifecycle", body)
    h.eq(r.status, 200, "legacy prefix put (%r)" % r.body[:300])
    got = srv.client().get_bucket_lifecycle_configuration(Bucket=B)["Rules"]
    h.eq(got[0].get("Prefix"), "old/", "legacy Prefix answered as given")
    h.check(got[0].get("ID"), "a rule without ID gets one")


def test_validation_errors(srv):
    cases = [
        (b"<LifecycleConfiguration", 400, "MalformedXML", None),
        (lc_xml(), 400, "MalformedXML", None),
        (b"<Other/>", 400, "MalformedXML", None),
        (lc_xml(rule(EXP1, status="On")), 400, "MalformedXML", None),
        (lc_xml(rule(EXP1, filt="")), 400, "MalformedXML", None),
        (lc_xml(rule(EXP1, filt="<Prefix>a</Prefix><Filter/>")), 400, "MalformedXML", None),
        (lc_xml(rule(EXP1, filt="<Filter><Prefix>a</Prefix><ObjectSizeLessThan>5"
                                "</ObjectSizeLessThan></Filter>")), 400, "MalformedXML", None),
        (lc_xml(rule(EXP1 + "<Bogus/>")), 400, "MalformedXML", None),
        (lc_xml(rule("<Expiration><Days>1</Days><Date>2030-01-01</Date></Expiration>")),
         400, "MalformedXML", None),
        (lc_xml(rule("<Expiration><Days>0</Days></Expiration>")), 400, "InvalidArgument",
         "'Days' for Expiration action must be a positive integer"),
        (lc_xml(rule("<Expiration><Days>-3</Days></Expiration>")), 400, "InvalidArgument",
         "'Days' for Expiration action must be a positive integer"),
        (lc_xml(rule("<Expiration><Date>2030-01-01T12:00:00Z</Date></Expiration>")), 400,
         "InvalidArgument", "'Date' must be at midnight GMT"),
        (lc_xml(rule(EXP1), rule(EXP1)), 400, "InvalidArgument",
         "Rule ID must be unique. Found same ID for more than one rule"),
        (lc_xml(rule(EXP1, rid="x" * 256)), 400, "InvalidArgument",
         "ID length should not exceed allowed limit of 255"),
        (lc_xml(rule("")), 400, "InvalidRequest",
         "At least one action needs to be specified in a rule"),
        (lc_xml(rule("<AbortIncompleteMultipartUpload><DaysAfterInitiation>0"
                     "</DaysAfterInitiation></AbortIncompleteMultipartUpload>")),
         400, "InvalidArgument", "'DaysAfterInitiation' for AbortIncompleteMultipartUpload"),
        (lc_xml(rule("<AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
                     "</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
                     filt="<Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter>")),
         400, "InvalidRequest", "AbortIncompleteMultipartUpload cannot be specified with Tags"),
        (lc_xml(rule("<AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
                     "</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
                     filt="<Filter><ObjectSizeGreaterThan>5</ObjectSizeGreaterThan></Filter>")),
         400, "InvalidRequest", "AbortIncompleteMultipartUpload cannot be specified with an object"),
        (lc_xml(rule(EXP1, filt="<Filter><And><Tag><Key>a</Key><Value>1</Value></Tag>"
                                "<Tag><Key>a</Key><Value>2</Value></Tag></And></Filter>")),
         400, "InvalidRequest", "Duplicate Tag Keys are not allowed."),
        (lc_xml(rule(EXP1, filt="<Filter><And><ObjectSizeGreaterThan>9</ObjectSizeGreaterThan>"
                                "<ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter>")),
         400, "InvalidArgument", "ObjectSizeGreaterThan must be less than ObjectSizeLessThan"),
        (lc_xml(rule("<Transition><Days>1</Days><StorageClass>STANDARD</StorageClass>"
                     "</Transition>")), 400, "InvalidRequest", "STANDARD"),
        (lc_xml(rule("<Transition><Days>40</Days><StorageClass>GLACIER_IR</StorageClass>"
                     "</Transition><Transition><Days>40</Days><StorageClass>GLACIER_IR"
                     "</StorageClass></Transition>")), 400, "InvalidRequest",
         "'StorageClass' must be different for 'Transition' actions in same 'Rule'"),
        (lc_xml(rule("<Transition><Days>60</Days><StorageClass>STANDARD_IA</StorageClass>"
                     "</Transition><Transition><Days>40</Days><StorageClass>GLACIER_IR"
                     "</StorageClass></Transition>")), 400, "InvalidRequest", "must be later"),
        (lc_xml(rule("<Transition><Days>10</Days><StorageClass>STANDARD_IA</StorageClass>"
                     "</Transition>")), 400, "InvalidRequest",
         "must be greater than or equal to 30 for storageClass 'STANDARD_IA'"),
        (lc_xml(rule("<Expiration><Days>5</Days></Expiration><Transition><Days>10</Days>"
                     "<StorageClass>COLD</StorageClass></Transition>")), 400, "InvalidRequest",
         "must be greater than 'Days' in the Transition action"),
        (lc_xml(rule("<Transition><Days>1</Days><StorageClass>cold!</StorageClass>"
                     "</Transition>")), 400, "InvalidStorageClass", None),
        # Valid as S3 sees it, but no tier serves the class: refused, never
        # accepted and silently not applied (COLD, STANDARD_IA and
        # GLACIER_IR are served: test_tiers.py).
        (lc_xml(rule("<Transition><Days>1</Days><StorageClass>DEEP_ARCHIVE</StorageClass>"
                     "</Transition>")), 400, "InvalidStorageClass",
         "No tier is configured for storage class DEEP_ARCHIVE"),
        (lc_xml(rule("<Transition><Days>30</Days><StorageClass>ONEZONE_IA</StorageClass>"
                     "</Transition>")), 400, "InvalidStorageClass",
         "No tier is configured for storage class ONEZONE_IA"),
    ]
    for i, (body, status, code, msg) in enumerate(cases):
        expect_put_error(srv, body, status, code, msg, "case %d" % i)
    # 1,001 rules.
    many = lc_xml(*[rule(EXP1, rid="r%d" % i) for i in range(1001)])
    expect_put_error(srv, many, 400, "InvalidRequest", "1000", "1001 rules")
    # 1,000 rules are fine.
    ok = lc_xml(*[rule(EXP1, rid="r%d" % i) for i in range(1000)])
    r = put_raw(srv, B, "lifecycle", ok)
    h.eq(r.status, 200, "1000 rules (%r)" % r.body[:300])
    h.eq(len(srv.client().get_bucket_lifecycle_configuration(Bucket=B)["Rules"]), 1000,
         "rules kept")
    # Nothing replaced the configuration on a failed put.
    expect_put_error(srv, lc_xml(rule("")), 400, "InvalidRequest")
    h.eq(len(srv.client().get_bucket_lifecycle_configuration(Bucket=B)["Rules"]), 1000,
         "configuration unchanged by a refused put")
    srv.client().delete_bucket_lifecycle(Bucket=B)


def test_content_md5_required(srv):
    body = lc_xml(rule(EXP1))
    r = put_raw(srv, B, "lifecycle", body, md5=False)
    err = h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "no Content-MD5")
    h.eq(err.get("Message"), "Missing required header for this request: Content-MD5", "message")
    r = put_raw(srv, B, "lifecycle", body, md5=False,
                headers={"Content-MD5": md5_b64(b"other")})
    h.expect_s3_error(r.status, r.body, 400, "BadDigest", "wrong Content-MD5")
    r = put_raw(srv, B, "lifecycle", body, md5=False,
                headers={"x-amz-checksum-crc32c": h.checksum_b64("CRC32C", body)})
    h.eq(r.status, 200, "a checksum header instead of Content-MD5 (%r)" % r.body[:200])
    r = put_raw(srv, "lc-tags", "tagging",
                b"<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>",
                md5=False)
    h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "tagging without Content-MD5")
    srv.client().delete_bucket_lifecycle(Bucket=B)


def test_no_such_bucket(srv):
    r = srv.request("GET", "/lc-nobucket", query="lifecycle")
    h.expect_s3_error(r.status, r.body, 404, "NoSuchBucket", "get on a missing bucket")
    r = put_raw(srv, "lc-nobucket", "lifecycle", lc_xml(rule(EXP1)))
    h.expect_s3_error(r.status, r.body, 404, "NoSuchBucket", "put on a missing bucket")


def test_awscli_round_trip(srv):
    aws = h.require_tool("aws")
    tmp = tempfile.mkdtemp(prefix="lc-cli-")
    cfg = os.path.join(tmp, "lc.json")
    with open(cfg, "w") as f:
        json.dump({"Rules": [{"ID": "cli", "Status": "Enabled", "Filter": {"Prefix": "tmp/"},
                              "Expiration": {"Days": 3},
                              "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]}, f)
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("AWS_"):
            del env[k]
    conf = os.path.join(tmp, "config")
    with open(conf, "w") as f:
        f.write("[default]\n")
    env.update(AWS_ACCESS_KEY_ID=srv.access_key, AWS_SECRET_ACCESS_KEY=srv.secret_key,
               AWS_DEFAULT_REGION=h.REGION, AWS_CONFIG_FILE=conf,
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "none"),
               AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="")

    def cli(*args, check_rc=True):
        return h.run_cmd([aws, "s3api"] + list(args) + ["--endpoint-url", srv.endpoint],
                         env=env, check_rc=check_rc)

    cli("put-bucket-lifecycle-configuration", "--bucket", "lc-cli",
        "--lifecycle-configuration", "file://" + cfg)
    out = json.loads(cli("get-bucket-lifecycle-configuration", "--bucket", "lc-cli").stdout)
    h.eq(out["Rules"][0]["ID"], "cli", "aws-cli rule id")
    h.eq(out["Rules"][0]["Expiration"], {"Days": 3}, "aws-cli expiration")
    h.eq(out["Rules"][0]["AbortIncompleteMultipartUpload"], {"DaysAfterInitiation": 1},
         "aws-cli abort")
    cli("delete-bucket-lifecycle", "--bucket", "lc-cli")
    p = cli("get-bucket-lifecycle-configuration", "--bucket", "lc-cli", check_rc=False)
    h.check(p.returncode != 0 and b"NoSuchLifecycleConfiguration" in p.stderr,
            "aws-cli get after delete: %r" % p.stderr[-300:])
    # Bucket tagging through aws-cli too.
    cli("put-bucket-tagging", "--bucket", "lc-cli", "--tagging",
        "TagSet=[{Key=team,Value=ml}]")
    out = json.loads(cli("get-bucket-tagging", "--bucket", "lc-cli").stdout)
    h.eq(out["TagSet"], [{"Key": "team", "Value": "ml"}], "aws-cli bucket tags")
    cli("delete-bucket-tagging", "--bucket", "lc-cli")


def test_bucket_tagging(srv):
    s3 = srv.client()
    with h.client_error("NoSuchTagSet", 404):
        s3.get_bucket_tagging(Bucket="lc-tags")
    tags = [{"Key": "k%d" % i, "Value": "v%d" % i} for i in range(50)]
    s3.put_bucket_tagging(Bucket="lc-tags", Tagging={"TagSet": tags})
    h.eq(s3.get_bucket_tagging(Bucket="lc-tags")["TagSet"], tags, "50 tags kept in order")
    with h.client_error("InvalidTag", 400):
        s3.put_bucket_tagging(Bucket="lc-tags", Tagging={"TagSet": tags + [
            {"Key": "one-too-many", "Value": ""}]})
    with h.client_error("InvalidTag", 400):
        s3.put_bucket_tagging(Bucket="lc-tags", Tagging={"TagSet": [
            {"Key": "k" * 129, "Value": "v"}]})
    with h.client_error("InvalidTag", 400):
        s3.put_bucket_tagging(Bucket="lc-tags", Tagging={"TagSet": [
            {"Key": "k", "Value": "v" * 257}]})
    with h.client_error("InvalidTag", 400):
        s3.put_bucket_tagging(Bucket="lc-tags", Tagging={"TagSet": [
            {"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}]})
    # Limits are characters, not bytes.
    s3.put_bucket_tagging(Bucket="lc-tags", Tagging={"TagSet": [
        {"Key": "\u00e9" * 128, "Value": "\u00e8" * 256}]})
    h.eq(s3.get_bucket_tagging(Bucket="lc-tags")["TagSet"][0]["Key"], "\u00e9" * 128,
         "128 two-byte characters")
    # Tags are separate from lifecycle in the same store.
    with h.client_error("NoSuchLifecycleConfiguration", 404):
        s3.get_bucket_lifecycle_configuration(Bucket="lc-tags")
    s3.delete_bucket_tagging(Bucket="lc-tags")
    with h.client_error("NoSuchTagSet", 404):
        s3.get_bucket_tagging(Bucket="lc-tags")
    # A deleted and re-created bucket starts without tags or rules.
    s3.put_bucket_tagging(Bucket="lc-tags", Tagging={"TagSet": tags[:1]})
    s3.put_bucket_lifecycle_configuration(Bucket="lc-tags", LifecycleConfiguration={"Rules": [
        {"ID": "x", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1}}]})
    s3.delete_bucket(Bucket="lc-tags")
    s3.create_bucket(Bucket="lc-tags")
    with h.client_error("NoSuchTagSet", 404):
        s3.get_bucket_tagging(Bucket="lc-tags")
    with h.client_error("NoSuchLifecycleConfiguration", 404):
        s3.get_bucket_lifecycle_configuration(Bucket="lc-tags")


def test_expiration_header_default_day(srv):
    s3 = srv.client()
    s3.put_bucket_lifecycle_configuration(Bucket=B, LifecycleConfiguration={"Rules": [
        {"ID": "ten", "Status": "Enabled", "Filter": {"Prefix": "e/"}, "Expiration": {"Days": 10}},
        {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": "e/"},
         "Expiration": {"Days": 1}},
        {"ID": "never", "Status": "Enabled", "Filter": {"Prefix": "never/"},
         "Expiration": {"Days": 2147483647}}]})
    put = s3.put_object(Bucket=B, Key="e/x", Body=b"abc")
    hdr = put["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")
    h.check(hdr is not None, "PUT lacks x-amz-expiration")
    h.check('rule-id="ten"' in hdr, "rule-id in %r" % hdr)
    date = email.utils.parsedate_to_datetime(hdr.split('"')[1])
    h.eq((date.hour, date.minute, date.second), (0, 0, 0), "expiry at midnight GMT")
    now = datetime.datetime.now(datetime.timezone.utc)
    h.check(datetime.timedelta(days=10) <= date - now <= datetime.timedelta(days=11),
            "expiry 10 to 11 days ahead: %s" % date)
    for method in ("get_object", "head_object"):
        got = getattr(s3, method)(Bucket=B, Key="e/x")
        h.eq(got["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration"), hdr, method)
    # The largest Days S3 takes lies past any HTTP date (year 9999): no
    # header, rather than a product of days and seconds that wrapped around.
    put = s3.put_object(Bucket=B, Key="never/x", Body=b"abc")
    h.check("x-amz-expiration" not in put["ResponseMetadata"]["HTTPHeaders"],
            "no header for a rule 2^31 days ahead: %r" % put["ResponseMetadata"]["HTTPHeaders"])
    s3.delete_object(Bucket=B, Key="never/x")
    put = s3.put_object(Bucket=B, Key="other", Body=b"abc")
    h.check("x-amz-expiration" not in put["ResponseMetadata"]["HTTPHeaders"],
            "no header outside the rule's prefix")
    # The cache forgets the rules when they change.
    s3.delete_bucket_lifecycle(Bucket=B)
    got = s3.head_object(Bucket=B, Key="e/x")
    h.check("x-amz-expiration" not in got["ResponseMetadata"]["HTTPHeaders"],
            "no header once the configuration is deleted")
    s3.delete_object(Bucket=B, Key="e/x")
    s3.delete_object(Bucket=B, Key="other")


def admin_api(srv, method, what, **params):
    q = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
    r = srv.request(method, "/_/admin/" + what, query=q)
    h.check(200 <= r.status < 300, "%s /_/admin/%s: HTTP %d %r" % (method, what, r.status, r.body[:300]))
    return json.loads(r.body) if r.body.strip() else None


def test_bucket_admin_grant_required(srv):
    # Lifecycle and bucket tagging need the bucket's admin grant; write is not enough.
    admin_api(srv, "POST", "users", name="lc-user")
    k = admin_api(srv, "POST", "keys", user="lc-user")
    user = srv.client(access_key=k["access_key"], secret_key=k["secret_key"])
    rules = {"Rules": [{"ID": "a", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1}}]}
    tags = {"TagSet": [{"Key": "a", "Value": "b"}]}
    admin_api(srv, "PUT", "grants", user="lc-user", bucket="lc-cli", level="write")
    with h.client_error("AccessDenied", 403):
        user.put_bucket_lifecycle_configuration(Bucket="lc-cli", LifecycleConfiguration=rules)
    with h.client_error("AccessDenied", 403):
        user.get_bucket_lifecycle_configuration(Bucket="lc-cli")
    with h.client_error("AccessDenied", 403):
        user.delete_bucket_lifecycle(Bucket="lc-cli")
    with h.client_error("AccessDenied", 403):
        user.put_bucket_tagging(Bucket="lc-cli", Tagging=tags)
    with h.client_error("AccessDenied", 403):
        user.get_bucket_tagging(Bucket="lc-cli")
    # The lifecycle admin endpoints are for root and admin users only.
    r = srv.request("POST", "/_/lifecycle/run", access_key=k["access_key"],
                    secret_key=k["secret_key"])
    h.eq(r.status, 403, "lifecycle run by a plain user")
    admin_api(srv, "PUT", "grants", user="lc-user", bucket="lc-cli", level="admin")
    user.put_bucket_lifecycle_configuration(Bucket="lc-cli", LifecycleConfiguration=rules)
    h.eq(user.get_bucket_lifecycle_configuration(Bucket="lc-cli")["Rules"][0]["ID"], "a",
         "admin grant reads back")
    user.delete_bucket_lifecycle(Bucket="lc-cli")
    user.put_bucket_tagging(Bucket="lc-cli", Tagging=tags)
    user.delete_bucket_tagging(Bucket="lc-cli")


def wait_for(cond, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise h.Failure("timed out waiting for " + what)


def keys_of(s3, bucket):
    out = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        out += [o["Key"] for o in page.get("Contents", [])]
    return sorted(out)


def test_worker_expires_by_days_date_prefix_size(_shared):
    # Runs its own server (its own configuration); the shared one is unused.
    # A background pass every second; a "day" is one second.
    with h.Server(config=FAST + "lifecycle_interval_s = 1\n", tag="lc-exp") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="exp")
        free0 = srv.metric("shardstore_storage_free_bytes")
        big = h.random_bytes(3 << 20, seed=3)
        for k in ("tmp/a", "tmp/b", "keep/a", "dated/a"):
            s3.put_object(Bucket="exp", Key=k, Body=b"x" * 5000)
        s3.put_object(Bucket="exp", Key="sized/big", Body=big)
        s3.put_object(Bucket="exp", Key="sized/small", Body=b"s" * 100)
        today = datetime.datetime.now(datetime.timezone.utc).replace(
            hour=0, minute=0, second=0, microsecond=0)
        s3.put_bucket_lifecycle_configuration(Bucket="exp", LifecycleConfiguration={"Rules": [
            {"ID": "days", "Status": "Enabled", "Filter": {"Prefix": "tmp/"},
             "Expiration": {"Days": 2}},
            {"ID": "date", "Status": "Enabled", "Filter": {"Prefix": "dated/"},
             "Expiration": {"Date": today}},
            {"ID": "size", "Status": "Enabled",
             "Filter": {"And": {"Prefix": "sized/", "ObjectSizeGreaterThan": 1 << 20}},
             "Expiration": {"Days": 1}},
            {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": "keep/"},
             "Expiration": {"Days": 1}},
            {"ID": "tags", "Status": "Enabled",
             "Filter": {"Tag": {"Key": "t", "Value": "1"}}, "Expiration": {"Days": 1}},
        ]})
        wait_for(lambda: keys_of(s3, "exp") == ["keep/a", "sized/small"], "expiration")
        with h.client_error("NoSuchKey", 404):
            s3.get_object(Bucket="exp", Key="tmp/a")
        h.eq(s3.get_object(Bucket="exp", Key="keep/a")["Body"].read(), b"x" * 5000, "kept")
        st = json.loads(srv.request("GET", "/_/lifecycle/status").body)
        h.eq(st["objects_expired"], 4, "objects expired")
        h.check(st["bytes_expired"] == 3 * 5000 + len(big), "bytes expired %r" % st)
        h.check(st["passes"] >= 1 and st["errors"] == 0, "status %r" % st)
        h.check(st["tags_read"] >= 1, "keep/a's tags are read for the tag rule %r" % st)
        h.eq(srv.metric("shardstore_lifecycle_objects_expired_total"), 4, "metric")
        # Space comes back (deferred reclaim releases once no reader holds it).
        wait_for(lambda: srv.metric("shardstore_storage_free_bytes") >= free0 - 2 * 8192,
                 "space freed")


def test_abort_stale_uploads(_shared):
    # Runs its own server (its own configuration); the shared one is unused.
    with h.Server(config=FAST + "lifecycle_interval_s = 0\n", tag="lc-abort") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="mpu")
        free0 = srv.metric("shardstore_storage_free_bytes")
        stale = s3.create_multipart_upload(Bucket="mpu", Key="up/stale")["UploadId"]
        s3.upload_part(Bucket="mpu", Key="up/stale", UploadId=stale, PartNumber=1,
                       Body=b"p" * (1 << 20))
        other = s3.create_multipart_upload(Bucket="mpu", Key="keep/x")["UploadId"]
        s3.put_bucket_lifecycle_configuration(Bucket="mpu", LifecycleConfiguration={"Rules": [
            {"ID": "abort", "Status": "Enabled", "Filter": {"Prefix": "up/"},
             "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}}]})
        st = run_pass(srv, "mpu")
        h.eq(st["uploads_aborted"], 0, "nothing is stale yet")
        time.sleep(3.2)
        st = run_pass(srv, "mpu")
        h.eq(st["uploads_aborted"], 1, "the stale upload is aborted")
        ups = [u["UploadId"] for u in s3.list_multipart_uploads(Bucket="mpu").get("Uploads", [])]
        h.eq(ups, [other], "the upload outside the prefix stays")
        with h.client_error("NoSuchUpload", 404):
            s3.list_parts(Bucket="mpu", Key="up/stale", UploadId=stale)
        wait_for(lambda: srv.metric("shardstore_storage_free_bytes") >= free0, "parts freed")
        h.eq(srv.metric("shardstore_lifecycle_uploads_aborted_total"), 1, "metric")


def test_expiration_header_fast_day(_shared):
    # Runs its own server (its own configuration); the shared one is unused.
    with h.Server(config=FAST + "lifecycle_interval_s = 0\n", tag="lc-hdr") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="hdr")
        s3.put_bucket_lifecycle_configuration(Bucket="hdr", LifecycleConfiguration={"Rules": [
            {"ID": "far", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 100}},
            {"ID": "near", "Status": "Enabled", "Filter": {"ObjectSizeLessThan": 10},
             "Expiration": {"Days": 5}},
            {"ID": "never", "Status": "Enabled", "Filter": {"Prefix": "never/"},
             "Expiration": {"Days": 2147483647}}]})
        t0 = time.time()
        put = s3.put_object(Bucket="hdr", Key="small", Body=b"abc")
        hdr = put["ResponseMetadata"]["HTTPHeaders"]["x-amz-expiration"]
        h.check('rule-id="near"' in hdr, "the earliest rule wins: %r" % hdr)
        when = email.utils.parsedate_to_datetime(hdr.split('"')[1]).timestamp()
        h.check(t0 + 4 <= when <= t0 + 7, "expiry about 5 s ahead: %s vs %s" % (when, t0))
        put = s3.put_object(Bucket="hdr", Key="large", Body=b"x" * 100)
        h.check('rule-id="far"' in put["ResponseMetadata"]["HTTPHeaders"]["x-amz-expiration"],
                "size filter picks the other rule")
        # The largest Days S3 takes lies past any HTTP date: no header, and it
        # never fires (no overflow into the past).
        put = s3.put_object(Bucket="hdr", Key="never/x", Body=b"x" * 100)
        h.check('rule-id="far"' in put["ResponseMetadata"]["HTTPHeaders"]["x-amz-expiration"],
                "the huge rule gives way to the nearer one: %r" % put["ResponseMetadata"])
        # A manual pass right away expires nothing; after 6 "days" it does.
        h.eq(run_pass(srv, "hdr")["objects_expired"], 0, "too early")
        time.sleep(6.2)
        h.eq(run_pass(srv, "hdr")["objects_expired"], 1, "small expired")
        h.eq(keys_of(s3, "hdr"), ["large", "never/x"], "large and never/x stay")


def expiration_of(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")


def test_expiration_by_tags(_shared):
    # Runs its own server (its own configuration); the shared one is unused.
    with h.Server(config=FAST + "lifecycle_interval_s = 0\n", tag="lc-tag") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="tagx")
        s3.create_bucket(Bucket="plain")
        s3.put_bucket_lifecycle_configuration(Bucket="tagx", LifecycleConfiguration={"Rules": [
            {"ID": "tag", "Status": "Enabled", "Filter": {"Tag": {"Key": "t", "Value": "1"}},
             "Expiration": {"Days": 1}},
            {"ID": "and", "Status": "Enabled",
             "Filter": {"And": {"Prefix": "and/", "Tags": [{"Key": "a", "Value": "1"},
                                                          {"Key": "b", "Value": "2"}]}},
             "Expiration": {"Days": 1}},
        ]})
        s3.put_bucket_lifecycle_configuration(Bucket="plain", LifecycleConfiguration={"Rules": [
            {"ID": "p", "Status": "Enabled", "Filter": {"Prefix": "p/"},
             "Expiration": {"Days": 1}}]})
        tagged = {
            "t/match": "t=1",  # expires
            "t/wrong": "t=2",
            "t/other": "u=1",
            "t/removed": "t=1",  # retagged below: stays
            "and/both": "a=1&b=2&c=3",  # expires
            "and/one": "a=1",
            "and/wrongval": "a=1&b=3",
            "x/both": "a=1&b=2",  # outside the And prefix
        }
        puts = {}
        for k, tagging in tagged.items():
            puts[k] = s3.put_object(Bucket="tagx", Key=k, Body=b"x" * 100, Tagging=tagging)
        for k in ("t/none", "t/later", "and/later"):
            puts[k] = s3.put_object(Bucket="tagx", Key=k, Body=b"y" * 100)
        s3.put_object(Bucket="plain", Key="q/x", Body=b"z", Tagging="t=1")
        s3.put_object_tagging(Bucket="tagx", Key="t/later",
                              Tagging={"TagSet": [{"Key": "t", "Value": "1"}]})
        s3.put_object_tagging(Bucket="tagx", Key="and/later", Tagging={"TagSet": [
            {"Key": "b", "Value": "2"}, {"Key": "a", "Value": "1"}]})
        s3.put_object_tagging(Bucket="tagx", Key="t/removed",
                              Tagging={"TagSet": [{"Key": "t", "Value": "0"}]})

        # x-amz-expiration follows the tags: on PUT (x-amz-tagging), then
        # HEAD and GET (the stored tags, as PutObjectTagging left them).
        h.check('rule-id="tag"' in (expiration_of(puts["t/match"]) or ""),
                "PUT with matching tags: %r" % puts["t/match"]["ResponseMetadata"])
        h.check('rule-id="and"' in (expiration_of(puts["and/both"]) or ""), "PUT and/both")
        h.eq(expiration_of(puts["t/wrong"]), None, "PUT with a wrong tag value")
        h.eq(expiration_of(puts["t/later"]), None, "PUT untagged")
        expiring = {"t/match": "tag", "t/later": "tag", "and/both": "and", "and/later": "and"}
        for k in sorted(tagged) + ["t/none", "t/later", "and/later"]:
            got = expiration_of(s3.head_object(Bucket="tagx", Key=k))
            if k in expiring:
                h.check(got and 'rule-id="%s"' % expiring[k] in got, "HEAD %s: %r" % (k, got))
            else:
                h.eq(got, None, "HEAD %s has no x-amz-expiration" % k)
        got = expiration_of(s3.get_object(Bucket="tagx", Key="and/later"))
        h.check(got and 'rule-id="and"' in got, "GET and/later: %r" % got)

        # A "day" is a second: 2.2 s after the last PUT every rule is due.
        time.sleep(2.2)
        st = run_pass(srv, "tagx")
        h.eq(st["objects_expired"], 4, "the objects with matching tags expire (%r)" % st)
        h.eq(st["errors"], 0, "no errors (%r)" % st)
        h.check(st["tags_read"] >= 4, "tags are read (%r)" % st)
        stay = (set(tagged) | {"t/none", "t/later", "and/later"}) - set(expiring)
        h.eq(keys_of(s3, "tagx"), sorted(stay), "the others stay")
        with h.client_error("NoSuchKey", 404):
            s3.get_object(Bucket="tagx", Key="t/later")
        # No Tag filter: no object record is read beyond the listing.
        st = run_pass(srv, "plain")
        h.eq((st["objects_expired"], st["tags_read"]), (0, 0), "plain bucket (%r)" % st)


def test_kill9_during_pass(_shared):
    # Runs its own server (its own configuration); the shared one is unused.
    # Slow the worker so that the kill lands in the middle of a pass.
    conf = FAST + "lifecycle_interval_s = 0\nlifecycle_max_objects_per_s = 40\n"
    srv = h.Server(config=conf, tag="lc-kill")
    try:
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="kill")
        bodies = {}
        for i in range(240):
            k = "ck/%03d" % i
            bodies[k] = h.random_bytes(4096 + i * 37, seed=i)
            s3.put_object(Bucket="kill", Key=k, Body=bodies[k])
        s3.put_object(Bucket="kill", Key="keep", Body=b"keep")
        s3.put_bucket_lifecycle_configuration(Bucket="kill", LifecycleConfiguration={"Rules": [
            {"ID": "ck", "Status": "Enabled", "Filter": {"Prefix": "ck/"},
             "Expiration": {"Days": 1}}]})
        time.sleep(2.2)

        def run():
            try:
                srv.request("POST", "/_/lifecycle/run", query="bucket=kill", timeout=60)
            except Exception:  # noqa: BLE001 - the server dies under it
                pass
        t = threading.Thread(target=run)
        t.start()
        # Kill once the first batch is gone (the pass then sleeps for its
        # rate budget before the next one, so it is mid-pass).
        wait_for(lambda: len(keys_of(s3, "kill")) < 241, "the first expirations", timeout=30)
        srv.kill()
        t.join(30)
        srv.start()
        s3 = srv.client()
        left = [k for k in keys_of(s3, "kill") if k.startswith("ck/")]
        h.check(0 < len(left) < 240, "the kill landed mid-pass: %d objects left" % len(left))
        for k in sorted(bodies):
            if k in left:
                h.same_bytes(s3.get_object(Bucket="kill", Key=k)["Body"].read(), bodies[k], k)
            else:
                with h.client_error("NoSuchKey", 404):
                    s3.get_object(Bucket="kill", Key=k)
        # The next pass finishes the job; then all space but "keep"'s is free.
        st = run_pass(srv, "kill")
        h.eq(st["objects_expired"], len(left), "the rest expires")
        h.eq(keys_of(s3, "kill"), ["keep"], "only keep stays")
        problems = srv.stop()
        if problems:
            raise h.Failure("\n".join(problems))
        srv.start()
        free = srv.metric("shardstore_storage_free_bytes")
        total = srv.metric("shardstore_storage_total_bytes")
        h.eq(total - free, 4096, "only keep's 4 KiB block is in use (nothing leaked)")
    finally:
        srv.stop()
        srv.cleanup()


TESTS = [
    test_setup,
    test_boto3_round_trip,
    test_legacy_prefix_and_generated_id,
    test_validation_errors,
    test_content_md5_required,
    test_no_such_bucket,
    test_awscli_round_trip,
    test_bucket_tagging,
    test_bucket_admin_grant_required,
    test_expiration_header_default_day,
    test_worker_expires_by_days_date_prefix_size,
    test_abort_stale_uploads,
    test_expiration_header_fast_day,
    test_expiration_by_tags,
    test_kill9_during_pass,
]

if __name__ == "__main__":
    h.main(TESTS, config="volume_size = 64M\nmax_volumes = 2\n")
