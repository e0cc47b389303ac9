"""test_versioning_crash.py: crashes in a versioned bucket.

(a) kill -9 in the middle of a large PUT that would add a version: after a
    restart every earlier version is intact and no space leaked.
(b) kill -9 right after concurrent PUTs, DELETEs (markers) and removals of
    versions were acknowledged: after a restart the listing is exactly the
    acknowledged versions, each readable by id; removing them all gives
    every byte back (the free map rebuilt at startup counts each version's
    extents once, copies' shared extents included).
"""

import concurrent.futures
import os
import socket
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, same_bytes  # noqa: E402

MIB = 1 << 20
FREE = "shardstore_storage_free_bytes"


def settles(srv, want, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = srv.metric(FREE)
        if got == want:
            return
        time.sleep(0.1)
    raise harness.Failure("%s: free bytes %s, expected %s (%+d)" % (what, got, want, int(got - want)))


def listing(s3, bucket):
    out = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        out += [(v["Key"], v["VersionId"], False) for v in page.get("Versions", [])]
        out += [(m["Key"], m["VersionId"], True) for m in page.get("DeleteMarkers", [])]
    return sorted(out)


def test_kill_during_versioned_put():
    with harness.Server(config="volume_size = 1G\nmax_volumes = 2\n", tag="vcrash-a") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="vcrash")
        s3.put_bucket_versioning(Bucket="vcrash", VersioningConfiguration={"Status": "Enabled"})
        bodies = {}
        for i in range(2):
            b = harness.random_bytes(3 * MIB, seed=70 + i)
            bodies[s3.put_object(Bucket="vcrash", Key="ckpt", Body=b)["VersionId"]] = b
        free0 = srv.metric(FREE)
        h = srv.sign("PUT", "/vcrash/ckpt", "", {}, b"", payload_hash="UNSIGNED-PAYLOAD")
        conn = srv.connect(timeout=30)
        conn.putrequest("PUT", "/vcrash/ckpt", skip_host=True, skip_accept_encoding=True)
        for k, v in h.items():
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(512 * MIB))
        conn.endheaders()
        chunk = harness.random_bytes(MIB, seed=79)
        try:
            for _ in range(64):
                conn.send(chunk)
        except (BrokenPipeError, ConnectionResetError, socket.timeout) as e:
            raise harness.Failure("the server stopped reading the PUT: %r" % e)
        srv.kill()
        conn.close()
        srv.start()
        s3 = srv.client()
        eq(sorted(v for _, v, _ in listing(s3, "vcrash")), sorted(bodies), "the versions after kill -9")
        for vid, b in bodies.items():
            same_bytes(s3.get_object(Bucket="vcrash", Key="ckpt", VersionId=vid)["Body"].read(), b, "version %s" % vid)
        settles(srv, free0, "the half-written version must not leak")


def test_kill_after_acknowledged_changes():
    with harness.Server(config="group_commit = on\n", tag="vcrash-b") as srv:
        s3 = srv.client(max_pool_connections=32)
        s3.create_bucket(Bucket="vdur")
        free0 = srv.metric(FREE)
        s3.put_bucket_versioning(Bucket="vdur", VersioningConfiguration={"Status": "Enabled"})
        want = {}  # version id -> (key, body or None for a marker)
        for rnd in range(3):
            def put(i):
                k = "k%d" % (i % 5)
                b = harness.random_bytes(2000 + 4096 * i + rnd, seed=rnd * 100 + i)
                return s3.put_object(Bucket="vdur", Key=k, Body=b)["VersionId"], (k, b)

            def delete(i):
                r = s3.delete_object(Bucket="vdur", Key="k%d" % i)
                return r["VersionId"], ("k%d" % i, None)

            with concurrent.futures.ThreadPoolExecutor(max_workers=16) as ex:
                done = list(ex.map(put, range(15))) + list(ex.map(delete, range(2)))
            want.update(done)
            # Remove a couple of acknowledged versions for good.
            for vid in list(want)[rnd::7][:2]:
                s3.delete_object(Bucket="vdur", Key=want[vid][0], VersionId=vid)
                del want[vid]
            # A copy shares the extents of its source version.
            src = next(v for v, (k, b) in want.items() if b is not None)
            r = s3.copy_object(Bucket="vdur", Key="copy", CopySource={"Bucket": "vdur", "Key": want[src][0], "VersionId": src})
            want[r["VersionId"]] = ("copy", want[src][1])
            srv.kill()  # right after the last acknowledgement
            srv.start()
            s3 = srv.client(max_pool_connections=32)
            eq(listing(s3, "vdur"), sorted((k, v, b is None) for v, (k, b) in want.items()), "round %d: versions after kill -9" % rnd)
            for vid, (k, b) in want.items():
                if b is not None:
                    same_bytes(s3.get_object(Bucket="vdur", Key=k, VersionId=vid)["Body"].read(), b, "round %d: %s of %s" % (rnd, vid, k))
        for vid, (k, _) in want.items():
            s3.delete_object(Bucket="vdur", Key=k, VersionId=vid)
        srv.kill()
        srv.start()
        eq(listing(srv.client(), "vdur"), [], "nothing left")
        settles(srv, free0, "every byte back after removing all versions and a restart")


TESTS = [
    test_kill_during_versioned_put,
    test_kill_after_acknowledged_changes,
]

if __name__ == "__main__":
    harness.main(TESTS, shared_server=False)
