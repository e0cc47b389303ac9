"""test_versioning_model.py: versioning against a model, and rclone.

A seeded random sequence of PUT, DELETE, DELETE ?versionId, GET by version,
suspend and enable on a few keys runs against shardstore and an in-memory
model of S3's rules (Enabled: every write adds a version, DELETE a marker;
Suspended: writes replace the null version; removing a version promotes the
next). After every step ListObjectVersions (all entries, in order, with
IsLatest and markers) and the GET of the latest of each key must match the
model. At the end every version is removed and the space comes back.
rclone --s3-versions lists and reads old versions.
"""

import os
import random
import shutil
import sys
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq  # noqa: E402

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
SEED = int(os.environ.get("SHARD_MODEL_SEED", "1212"))
STEPS = int(os.environ.get("SHARD_MODEL_STEPS", "200"))
KEYS = ["a", "a/b", "b", "k\u00e9y"]


def list_all(srv, bucket, page):
    out, km, vm = [], None, None
    for _ in range(2000):
        q = {"versions": "", "max-keys": str(page)}
        if km is not None:
            q["key-marker"], q["version-id-marker"] = km, vm or ""
        r = srv.request("GET", "/" + bucket, query=urllib.parse.urlencode(q, quote_via=urllib.parse.quote, safe=""))
        eq(r.status, 200, "ListObjectVersions")
        root = ET.fromstring(r.body)
        for el in root:
            tag = el.tag.replace(NS, "")
            if tag in ("Version", "DeleteMarker"):
                out.append((el.find(NS + "Key").text, el.find(NS + "VersionId").text, el.find(NS + "IsLatest").text == "true", tag == "DeleteMarker"))
        if root.find(NS + "IsTruncated").text != "true":
            return out
        km = root.find(NS + "NextKeyMarker").text
        nv = root.find(NS + "NextVersionIdMarker")
        vm = nv.text if nv is not None else ""
    raise harness.Failure("ListObjectVersions does not end: %r..." % out[:20])


def used_bytes(srv):
    m = srv.metric
    return m("shardstore_storage_total_bytes") - m("shardstore_storage_free_bytes") - m("shardstore_storage_pending_bytes")


class Model:
    """S3's versioning rules: per key, versions newest first, each
    [version id, is marker, body]."""

    def __init__(self):
        self.keys = {}
        self.state = None  # None (never), "Enabled", "Suspended"

    def _drop_null(self, key):
        self.keys[key] = [v for v in self.keys.get(key, []) if v[0] != "null"]

    def write(self, key, vid, body, is_marker):
        if self.state == "Suspended":
            self._drop_null(key)
        self.keys.setdefault(key, []).insert(0, [vid, is_marker, body])

    def remove(self, key, vid):
        self.keys[key] = [v for v in self.keys.get(key, []) if v[0] != vid]

    def listing(self):
        out = []
        for k in sorted(self.keys, key=lambda s: s.encode()):
            for i, (vid, is_marker, _) in enumerate(self.keys[k]):
                out.append((k, vid, i == 0, is_marker))
        return out


def test_model(srv):
    s3 = srv.client()
    bucket = "model"
    s3.create_bucket(Bucket=bucket)
    base = used_bytes(srv)
    rng = random.Random(SEED)
    m = Model()
    ops = {"put": 0, "delete": 0, "delete_version": 0, "suspend": 0, "enable": 0}
    for step in range(STEPS):
        what = rng.choices(["put", "delete", "delete_version", "suspend", "enable"], [10, 4, 4, 1, 1])[0]
        key = rng.choice(KEYS)
        if m.state is None and what in ("delete_version", "suspend"):
            what = "enable"
        ops[what] += 1
        ctx = "step %d (%s %s, seed %d)" % (step, what, key, SEED)
        if what == "put":
            body = os.urandom(rng.choice([0, 10, 3000, 70000]))
            r = s3.put_object(Bucket=bucket, Key=key, Body=body)
            vid = r.get("VersionId", "null") if m.state else "null"
            if m.state == "Suspended":
                eq(vid, "null", ctx)
            if m.state is None:
                m.keys[key] = [["null", False, body]]
            else:
                m.write(key, vid, body, False)
        elif what == "delete":
            r = s3.delete_object(Bucket=bucket, Key=key)
            if m.state is None:
                m.keys.pop(key, None)
            else:
                eq(r.get("DeleteMarker"), True, ctx)
                m.write(key, r["VersionId"], None, True)
        elif what == "delete_version":
            vs = m.keys.get(key) or []
            vid = rng.choice(vs)[0] if vs and rng.random() < 0.9 else "0" * 31 + "9"
            s3.delete_object(Bucket=bucket, Key=key, VersionId=vid)
            m.remove(key, vid)
        else:
            state = "Suspended" if what == "suspend" else "Enabled"
            s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": state})
            m.state = state
        m.keys = {k: v for k, v in m.keys.items() if v}
        # Check everything the model knows.
        eq(list_all(srv, bucket, 1 if step % 25 == 0 else rng.choice([4, 1000, 1000])), m.listing(), "listing after " + ctx)
        for k in {key, rng.choice(KEYS)}:
            vs = m.keys.get(k)
            r = srv.request("GET", "/%s/%s" % (bucket, harness.quote_key(k)))
            if not vs or vs[0][1]:
                eq(r.status, 404, "GET latest of %r after %s" % (k, ctx))
                eq(r.header("x-amz-delete-marker"), "true" if vs else None, "marker header of %r after %s" % (k, ctx))
            else:
                eq((r.status, r.body), (200, vs[0][2]), "GET latest of %r after %s" % (k, ctx))
        vs = m.keys.get(key)
        if vs:
            vid, is_marker, body = rng.choice(vs)
            r = srv.request("GET", "/%s/%s" % (bucket, harness.quote_key(key)), query="versionId=" + vid)
            eq((r.status, r.body if not is_marker else None), (405, None) if is_marker else (200, body), "GET %s of %r after %s" % (vid, key, ctx))
    check(all(ops.values()), "every operation ran: %r" % ops)
    # Remove everything: the space all comes back.
    for k, vs in list(m.keys.items()):
        for vid, _, _ in vs:
            s3.delete_object(Bucket=bucket, Key=k, VersionId=vid)
    eq(list_all(srv, bucket, 1000), [], "all versions removed")
    deadline = time.monotonic() + 5
    while used_bytes(srv) > base and time.monotonic() < deadline:
        time.sleep(0.05)
    eq(used_bytes(srv), base, "no bytes leaked")
    s3.delete_bucket(Bucket=bucket)


def test_concurrent_writers(srv):
    """Every acknowledged PUT to one key is a version, in commit order."""
    import threading
    s3 = srv.client()
    s3.create_bucket(Bucket="concur")
    s3.put_bucket_versioning(Bucket="concur", VersioningConfiguration={"Status": "Enabled"})
    got, lock = [], threading.Lock()

    def writer(i):
        c = srv.client()
        for j in range(10):
            body = b"%d-%d" % (i, j)
            v = c.put_object(Bucket="concur", Key="hot", Body=body)["VersionId"]
            with lock:
                got.append((v, body))

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    listed = [v for v in list_all(srv, "concur", 1000)]
    eq(len(listed), 60, "every acknowledged PUT is a version")
    eq(sorted(v[1] for v in listed), sorted(v for v, _ in got), "the same ids")
    eq([v[1] for v in listed], sorted((v for v, _ in got), reverse=True), "newest first is id order")
    newest = max(got)
    eq(s3.get_object(Bucket="concur", Key="hot")["Body"].read(), newest[1], "latest is the last committed")
    for v, body in got[:5]:
        eq(s3.get_object(Bucket="concur", Key="hot", VersionId=v)["Body"].read(), body, "each version readable")


def test_rclone_versions(srv):
    rclone_bin = harness.require_tool("rclone")
    s3 = srv.client()
    s3.create_bucket(Bucket="rcv")
    s3.put_bucket_versioning(Bucket="rcv", VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket="rcv", Key="ckpt.bin", Body=b"epoch 1")
    time.sleep(0.01)
    s3.put_object(Bucket="rcv", Key="ckpt.bin", Body=b"epoch 2")
    tmp = tempfile.mkdtemp(prefix="rclone-versions-")
    try:
        conf = os.path.join(tmp, "rclone.conf")
        open(conf, "w").close()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RCLONE_", "AWS_"))}
        env.update(
            RCLONE_CONFIG=conf, RCLONE_CONFIG_SS_TYPE="s3", RCLONE_CONFIG_SS_PROVIDER="Other",
            RCLONE_CONFIG_SS_ENV_AUTH="false", RCLONE_CONFIG_SS_ACCESS_KEY_ID=srv.access_key,
            RCLONE_CONFIG_SS_SECRET_ACCESS_KEY=srv.secret_key, RCLONE_CONFIG_SS_REGION=harness.REGION,
            RCLONE_CONFIG_SS_ENDPOINT=srv.endpoint, RCLONE_CONFIG_SS_FORCE_PATH_STYLE="true",
        )
        base = [rclone_bin, "--retries", "1", "--low-level-retries", "1"]
        out = harness.run_cmd(base + ["lsf", "--s3-versions", "ss:rcv"], env=env).stdout.decode().split()
        eq(len(out), 2, "rclone --s3-versions lists both: %r" % out)
        old = [n for n in out if n != "ckpt.bin"]
        check(len(old) == 1 and old[0].startswith("ckpt-v"), "old version named by its time: %r" % out)
        data = harness.run_cmd(base + ["cat", "--s3-versions", "ss:rcv/" + old[0]], env=env).stdout
        eq(data, b"epoch 1", "rclone reads the old version")
        eq(harness.run_cmd(base + ["lsf", "ss:rcv"], env=env).stdout.decode().split(), ["ckpt.bin"], "plain listing: latest only")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_lifecycle_versions(srv):
    """Noncurrent* and ExpiredObjectDeleteMarker act; locked versions stay."""
    import datetime
    import json
    s3 = srv.client()
    s3.create_bucket(Bucket="lcver", ObjectLockEnabledForBucket=True)
    v = [s3.put_object(Bucket="lcver", Key="k", Body=b"%d" % i)["VersionId"] for i in range(3)]
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    lk = s3.put_object(Bucket="lcver", Key="locked", Body=b"old", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)["VersionId"]
    lk1 = s3.put_object(Bucket="lcver", Key="locked", Body=b"mid")["VersionId"]
    lk2 = s3.put_object(Bucket="lcver", Key="locked", Body=b"new")["VersionId"]
    solo = s3.delete_object(Bucket="lcver", Key="solo")["VersionId"]
    s3.put_bucket_lifecycle_configuration(Bucket="lcver", LifecycleConfiguration={"Rules": [
        {"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": ""},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
        {"ID": "dm", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"ExpiredObjectDeleteMarker": True}}]})
    time.sleep(2.2)  # lifecycle_day_seconds = 1: two "days"
    r = srv.request("POST", "/_/lifecycle/run", query="bucket=lcver")
    eq(r.status, 200, "lifecycle run (%r)" % r.body[:200])
    st = json.loads(r.body)
    eq(st["objects_expired"], 2, "v0 and the lone marker removed: %r" % st)
    got = sorted((k, vid) for k, vid, _, _ in list_all(srv, "lcver", 1000))
    eq(got, sorted([("k", v[2]), ("k", v[1]), ("locked", lk), ("locked", lk1), ("locked", lk2)]),
       "newest noncurrent kept, locked version kept, lone marker gone (%s)" % solo)


TESTS = [
    test_lifecycle_versions,
    test_model,
    test_concurrent_writers,
    test_rclone_versions,
]

if __name__ == "__main__":
    # The model checks logic, not durability: skip the index fsyncs.
    harness.main(TESTS, config="index_nosync = on\nlifecycle_day_seconds = 1\nlifecycle_interval_s = 0\n")
