"""test_bucket_logging.py: S3 server access logging with boto3.

Put/GetBucketLogging round trips (an empty BucketLoggingStatus turns it off;
a missing target is InvalidTargetBucketForLogging); records of a bucket's
requests arrive as objects under the target prefix within the delivery
period, one line per request in S3's server access log format (fields
checked: bucket, time, requester, request id, operation, key, request line,
status, error code, bytes); a bucket without logging leaves no record; a
target owned by another user is refused; a target that does not let the
logging service write (no bucket policy for Service logging.s3.amazonaws.com,
no LogDelivery WRITE grant with ACLs on) is refused, and delivery stops while
that permission is withdrawn; and
records spooled by a server that never delivered (bucket_log_interval_s = 0)
are delivered after a restart with a delivery period.
"""

import json
import os
import re
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, client_error, eq  # noqa: E402

LINE = re.compile(r'^(\S+) (\S+) \[([^\]]+)\] (\S+) (\S+) (\S+) (\S+) (\S+) "([^"]*)" (\d+) (\S+) (\S+) (\S+) (\d+) (\d+) "([^"]*)" "([^"]*)" (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+)$')


def records(s3, bucket, prefix, want, timeout=15.0):
    """Waits until the target holds at least 'want' records; returns the
    parsed lines of every log object (in key order)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = []
        for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []):
            check(re.match(re.escape(prefix) + r"\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d-[0-9A-F]{16}$", o["Key"]), "log object name %r" % o["Key"])
            body = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read().decode()
            for line in body.splitlines():
                m = LINE.match(line)
                check(m, "a record in S3's format: %r" % line)
                lines.append(m.groups())
        if len(lines) >= want or time.monotonic() > deadline:
            return lines
        time.sleep(0.3)


def delivery_policy(bucket, prefix, source, effect="Allow"):
    """AWS's documented bucket policy that lets log delivery write."""
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Sid": "S3ServerAccessLogsPolicy", "Effect": effect,
        "Principal": {"Service": "logging.s3.amazonaws.com"}, "Action": ["s3:PutObject"],
        "Resource": "arn:aws:s3:::%s/%s*" % (bucket, prefix),
        "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::%s" % source},
                      "StringEquals": {"aws:SourceAccount": "000000000000"}}}]})


def test_logging():
    with harness.Server(config="bucket_log_interval_s = 1\n", tag="bucketlog") as srv:
        check_logging(srv)


def check_logging(srv):
    s3 = srv.client()
    for b in ("logsrc", "logdst", "quiet"):
        s3.create_bucket(Bucket=b)
    eq(s3.get_bucket_logging(Bucket="logsrc").get("LoggingEnabled"), None, "no logging yet")
    with client_error("InvalidTargetBucketForLogging", 400):
        s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "no-such-target", "TargetPrefix": "x/"}})
    # A target owned by someone else: refused (the owner's permission is what delivers).
    r = srv.request("POST", "/_/admin/users", query="name=carol")
    eq(r.status, 200, "admin: create a user")
    r = srv.request("POST", "/_/admin/keys", query="user=carol")
    k = json.loads(r.body)
    carol = srv.client(access_key=k["access_key"], secret_key=k["secret_key"])
    carol.create_bucket(Bucket="carol-logs")
    with client_error("InvalidTargetBucketForLogging", 400):
        s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "carol-logs", "TargetPrefix": "x/"}})
    # The target must let the logging service write (AWS): not yet.
    with client_error("InvalidTargetBucketForLogging", 400):
        s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "logdst", "TargetPrefix": "access/"}})
    # A policy for another prefix or another source bucket is not enough.
    s3.put_bucket_policy(Bucket="logdst", Policy=delivery_policy("logdst", "other/", "logsrc"))
    with client_error("InvalidTargetBucketForLogging", 400):
        s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "logdst", "TargetPrefix": "access/"}})
    s3.put_bucket_policy(Bucket="logdst", Policy=delivery_policy("logdst", "access/", "quiet"))
    with client_error("InvalidTargetBucketForLogging", 400):
        s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "logdst", "TargetPrefix": "access/"}})
    # With ACLs on, the LogDelivery group's WRITE does it too.
    s3.create_bucket(Bucket="acllogs", ObjectOwnership="ObjectWriter")
    with client_error("InvalidTargetBucketForLogging", 400):
        s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "acllogs", "TargetPrefix": "a/"}})
    s3.put_bucket_acl(Bucket="acllogs", ACL="log-delivery-write")
    s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "acllogs", "TargetPrefix": "a/"}})
    s3.put_bucket_policy(Bucket="logdst", Policy=delivery_policy("logdst", "access/", "logsrc"))
    s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "logdst", "TargetPrefix": "access/"}})
    eq(s3.get_bucket_logging(Bucket="logsrc")["LoggingEnabled"], {"TargetBucket": "logdst", "TargetPrefix": "access/"}, "configuration read back")
    put = s3.put_object(Bucket="logsrc", Key="dir/a b.txt", Body=b"12345")
    eq(s3.get_object(Bucket="logsrc", Key="dir/a b.txt")["Body"].read(), b"12345", "GET")
    with client_error("NoSuchKey"):
        s3.get_object(Bucket="logsrc", Key="missing")
    s3.put_object(Bucket="quiet", Key="k", Body=b"q")
    lines = records(s3, "logdst", "access/", 4)
    by_op = {}
    for g in lines:
        eq(g[1], "logsrc", "bucket field")
        check(re.match(r"\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000$", g[2]), "time %r" % g[2])
        eq(g[3], "127.0.0.1", "remote address")
        by_op.setdefault((g[6], g[7]), []).append(g)
    put_rec = by_op[("REST.PUT.OBJECT", "dir/a%20b.txt")][0]
    eq((put_rec[8], put_rec[9], put_rec[10], put_rec[12]), ("PUT /logsrc/dir/a%20b.txt HTTP/1.1", "200", "-", "5"), "PUT record")
    eq(put_rec[5], put["ResponseMetadata"]["RequestId"], "request id")
    check(put_rec[4] != "-", "a signed request names its requester")
    get_rec = by_op[("REST.GET.OBJECT", "dir/a%20b.txt")][0]
    eq((get_rec[9], get_rec[11], get_rec[12]), ("200", "5", "5"), "GET record: status, bytes sent, object size")
    miss = by_op[("REST.GET.OBJECT", "missing")][0]
    eq((miss[9], miss[10]), ("404", "NoSuchKey"), "error record")
    check(("REST.PUT.LOGGING", "-") in by_op, "the configuration change itself is logged: %r" % list(by_op))
    check(not any(g[1] == "quiet" for g in lines), "a bucket without logging leaves no record")
    # Permission withdrawn (an explicit Deny): nothing more is delivered.
    s3.put_bucket_policy(Bucket="logdst", Policy=delivery_policy("logdst", "access/", "logsrc", "Deny"))
    time.sleep(1.5)  # what was spooled before goes out with the next pass
    before = s3.list_objects_v2(Bucket="logdst", Prefix="access/").get("KeyCount", 0)
    s3.put_object(Bucket="logsrc", Key="while-denied", Body=b"d")
    time.sleep(2.5)
    eq(s3.list_objects_v2(Bucket="logdst", Prefix="access/").get("KeyCount", 0), before, "no delivery while denied")
    # Off: no more records.
    s3.put_bucket_logging(Bucket="logsrc", BucketLoggingStatus={})
    eq(s3.get_bucket_logging(Bucket="logsrc").get("LoggingEnabled"), None, "logging off")


def test_records_survive_restart():
    with harness.Server(config="bucket_log_interval_s = 0\n", tag="bucketlog-restart") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="rsrc")
        s3.create_bucket(Bucket="rdst")
        s3.put_bucket_policy(Bucket="rdst", Policy=delivery_policy("rdst", "r/", "rsrc"))
        s3.put_bucket_logging(Bucket="rsrc", BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "rdst", "TargetPrefix": "r/"}})
        for i in range(5):
            s3.put_object(Bucket="rsrc", Key="k%d" % i, Body=b"x")
        time.sleep(0.3)
        eq(s3.list_objects_v2(Bucket="rdst").get("KeyCount"), 0, "nothing delivered without a period")
        srv.kill()
        with open(srv.config_path, "w") as f:
            f.write("bucket_log_interval_s = 1\n")
        srv.start()
        s3 = srv.client()
        lines = records(s3, "rdst", "r/", 6)
        keys = sorted(g[7] for g in lines if g[6] == "REST.PUT.OBJECT")
        eq(keys, ["k0", "k1", "k2", "k3", "k4"], "records spooled before a kill, delivered after the restart")


if __name__ == "__main__":
    harness.main([test_logging, test_records_survive_restart], shared_server=False)
