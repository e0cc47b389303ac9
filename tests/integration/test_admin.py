"""test_admin.py: the admin endpoints under /_/.

- /_/health answers without authentication; nothing else does.
- /_/metrics needs SigV4 with the root key and reports storage figures.
- POST /_/scrub re-reads every extent: clean data reports 0 bad blocks; a
  byte flipped in a volume file is reported as a bad block of exactly the
  object that holds it, while the object itself stays readable.
"""
import os
import sys
import json

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402


def test_health_is_the_only_anonymous_path(srv):
    r = srv.request("GET", "/_/health", sign=False)
    h.eq(r.status, 200, "health status")
    for method, path in (("GET", "/_/metrics"), ("POST", "/_/scrub"), ("GET", "/"),
                         ("GET", "/_/nothing")):
        r = srv.request(method, path, sign=False)
        h.eq(r.status, 403, "%s %s without auth" % (method, path))
    r = srv.request("GET", "/_/metrics", sign=True, secret_key="wrong-secret")
    h.check(r.status == 403, "metrics with a bad signature: %d" % r.status)


def test_metrics_signed(srv):
    r = srv.request("GET", "/_/metrics")
    h.eq(r.status, 200, "metrics status")
    text = r.body.decode()
    for name in ("shardstore_storage_free_bytes", "shardstore_storage_total_bytes",
                 "shardstore_requests_total", "shardstore_index_commits_total"):
        h.check(("\n%s " % name) in text, "metrics lack %s" % name)
    h.check(srv.metric("shardstore_storage_free_bytes") <= srv.metric("shardstore_storage_total_bytes"),
            "free <= total")


def scrub(srv):
    r = srv.request("POST", "/_/scrub")
    h.eq(r.status, 200, "scrub status (%r)" % r.body[:200])
    return json.loads(r.body)


def test_scrub_finds_a_flipped_byte():
    # The flipped byte is reported (on purpose) as corruption by storage.
    srv = h.Server(tag="scrub", allowed_errors=[r"corruption detected .*block checksum mismatch"])
    try:
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="scrub")
        data = h.random_bytes(3 * 1024 * 1024 + 17, seed=7)
        s3.put_object(Bucket="scrub", Key="victim", Body=data)
        report = scrub(srv)
        h.eq(report["objects"], 1, "objects scrubbed")
        h.eq(report["bytes"], len(data), "bytes scrubbed")
        h.eq(report["bad_blocks"], 0, "bad blocks on clean data")

        # The only object is the first allocation of the first volume; flip
        # one byte in its second 1 MiB block.
        vol = os.path.join(srv.data_dir, "volumes", "vol-0000.dat")
        off = 1024 * 1024 + 12345
        with open(vol, "r+b") as f:
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ 0x5A]))
            f.flush()
            os.fsync(f.fileno())
        s3.put_object(Bucket="scrub", Key="innocent", Body=b"x" * 5000)
        report = scrub(srv)
        h.eq(report["objects"], 2, "objects scrubbed")
        h.eq(report["bad_blocks"], 1, "bad blocks after the flip")
        h.eq([o["key"] for o in report["bad_objects"]], ["victim"], "bad objects")
    finally:
        problems = srv.stop()
        srv.cleanup()
    h.check(not problems, "teardown: %s" % problems)


if __name__ == "__main__":
    shared = [test_health_is_the_only_anonymous_path, test_metrics_signed]
    failed, passed, skipped = [], [], []
    srv = h.Server(tag="admin")
    try:
        srv.start()
        f, p, s = h.run_tests(shared, srv)
        failed += f
        passed += p
        skipped += s
        problems = srv.stop()
        if problems:
            failed.append("teardown: %s" % problems)
    finally:
        srv.cleanup()
    f, p, s = h.run_tests([test_scrub_finds_a_flipped_byte])
    failed += f
    passed += p
    skipped += s
    print("%d passed, %d failed, %d skipped" % (len(passed), len(failed), len(skipped)))
    sys.exit(1 if failed else 0)
