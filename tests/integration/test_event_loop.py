"""test_event_loop.py: the event-loop front end never blocks on a commit.

Connections run on a few event-loop threads; steps that may block (commits,
fdatasync, scrub) run on workers while their connection is suspended. The
test-only knob test_commit_delay_ms holds every commit open, as a slow disk
would, and one event-loop thread (http_threads = 1) makes any blocking step
on it visible to every other connection.

(a) Reads go on while a PUT waits for its commit: GETs and HEADs on other
    connections all finish while the PUT is still pending.
(b) Concurrent PUTs still share commits: 24 PUTs that all wait on held
    commits end in a few index transactions, not 24.
(c) Every kind of blocking request (DELETE, CreateBucket, multipart,
    DeleteObjects, CopyObject, scrub) completes through a worker, with the
    right answer, and keep-alive connections carry on afterwards.
(d) SIGTERM while requests are suspended on workers: every PUT gets its 200,
    the server exits 0, and after a restart every object is there.
(e) More connections than select() could watch (past FD_SETSIZE): 1100
    keep-alive connections each get their answer.
(f) Where a step runs is the route's, never the body's: a body sent to a
    route that takes none (DELETE, CopyObject, UploadPartCopy, multipart
    create and abort, DeleteBucket, scrub, GET) is refused with 400
    UnexpectedContent and nothing is done, so `Content-Length: 1` can no
    longer pull a commit onto the event loop; the same requests without a
    body still work, and health answers while one waits on its commit.
(g) A PUT waiting for its commit holds no worker: with one worker
    (worker_threads_max = 1), PUTs that arrive while a commit is held all
    go into the next one, where each used to hold the only worker through
    its own commit and they committed one by one.
(h) The answers a PUT gets after its commit are the same whoever builds
    them (the committer's callback by default; the worker with
    group_commit = off; the connection's thread with
    thread_per_connection = on): the ETag and version id, a failed
    condition (If-None-Match: *) as 412 with nothing stored, a part's ETag
    and checksum, and the completed object.
"""

import concurrent.futures
import http.client
import os
import resource
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, same_bytes  # noqa: E402

DELAY_MS = 1500


def slow_server(tag, delay_ms=DELAY_MS):
    return harness.Server(config="http_threads = 1\ntest_commit_delay_ms = %d\n" % delay_ms, tag=tag)


def test_reads_during_slow_commit():
    with slow_server("evl-a") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="evb")  # one held commit
        body = harness.random_bytes(200000, seed=1)
        s3.put_object(Bucket="evb", Key="old", Body=body)  # another
        done = threading.Event()
        err = []

        def slow_put():
            try:
                srv.client().put_object(Bucket="evb", Key="new", Body=b"x" * 1000)
            except Exception as e:  # reported below
                err.append(e)
            done.set()

        t = threading.Thread(target=slow_put)
        t.start()
        # Wait until the PUT is inside its commit (a worker holds it).
        deadline = time.monotonic() + 10
        while srv.metric("shardstore_http_workers") < 1 or srv.metric("shardstore_requests_in_flight") < 2:
            check(time.monotonic() < deadline, "the PUT never reached its commit")
            time.sleep(0.02)
        reads = 0
        for i in range(20):
            got = s3.get_object(Bucket="evb", Key="old", Range="bytes=%d-%d" % (i * 1000, i * 1000 + 999))["Body"].read()
            same_bytes(got, body[i * 1000:i * 1000 + 1000], "range %d" % i)
            eq(s3.head_object(Bucket="evb", Key="old")["ContentLength"], len(body), "HEAD")
            reads += 2
        check(not done.is_set(), "%d reads on one event-loop thread waited for a held commit" % reads)
        t.join(timeout=30)
        check(not err, "the slow PUT failed: %r" % err)
        eq(s3.get_object(Bucket="evb", Key="new")["Body"].read(), b"x" * 1000, "the slow PUT's object")


def test_puts_share_commits():
    with slow_server("evl-b", delay_ms=500) as srv:
        s3 = srv.client(max_pool_connections=32)
        s3.create_bucket(Bucket="evb")
        before = srv.metric("shardstore_index_commits_total")
        n = 24
        start = threading.Barrier(n)

        def put(i):
            start.wait()
            s3.put_object(Bucket="evb", Key="k%02d" % i, Body=b"v%d" % i)

        with concurrent.futures.ThreadPoolExecutor(max_workers=n) as ex:
            list(ex.map(put, range(n)))
        commits = srv.metric("shardstore_index_commits_total") - before
        check(commits <= 8, "%d concurrent PUTs took %d commits: they are not batched" % (n, commits))
        print("     %d PUTs in %d commits, %d workers" % (n, commits, srv.metric("shardstore_http_workers")), flush=True)
        for i in range(n):
            eq(s3.get_object(Bucket="evb", Key="k%02d" % i)["Body"].read(), b"v%d" % i, "k%02d" % i)


def test_every_blocking_kind():
    with slow_server("evl-c", delay_ms=50) as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="src")
        s3.put_object(Bucket="src", Key="a", Body=b"alpha")
        s3.copy_object(Bucket="src", Key="a-copy", CopySource={"Bucket": "src", "Key": "a"})
        eq(s3.get_object(Bucket="src", Key="a-copy")["Body"].read(), b"alpha", "copy")
        up = s3.create_multipart_upload(Bucket="src", Key="mp")["UploadId"]
        p1 = s3.upload_part(Bucket="src", Key="mp", UploadId=up, PartNumber=1, Body=b"P" * (5 << 20))
        p2 = s3.upload_part(Bucket="src", Key="mp", UploadId=up, PartNumber=2, Body=b"Q" * 10)
        s3.complete_multipart_upload(Bucket="src", Key="mp", UploadId=up, MultipartUpload={"Parts": [
            {"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
        eq(s3.head_object(Bucket="src", Key="mp")["ContentLength"], (5 << 20) + 10, "multipart size")
        up2 = s3.create_multipart_upload(Bucket="src", Key="gone")["UploadId"]
        s3.abort_multipart_upload(Bucket="src", Key="gone", UploadId=up2)
        r = s3.delete_objects(Bucket="src", Delete={"Objects": [{"Key": "a"}, {"Key": "a-copy"}]})
        eq(sorted(d["Key"] for d in r["Deleted"]), ["a", "a-copy"], "DeleteObjects")
        s3.delete_object(Bucket="src", Key="mp")
        with harness.client_error(("404", "NoSuchKey"), 404):
            s3.head_object(Bucket="src", Key="mp")
        # The scrub endpoint (POST, no body) runs on a worker too.
        r = srv.request("POST", "/_/scrub")
        eq(r.status, 200, "scrub")
        # Errors from a worker step are S3 errors like any other.
        r = srv.request("DELETE", "/nosuchbucket")
        harness.expect_s3_error(r.status, r.body, 404, "NoSuchBucket", "DELETE of a missing bucket")
        s3.delete_bucket(Bucket="src")
        # One keep-alive connection: a worker step, then GETs, then another.
        conn = srv.connect()
        for method, path, want in (("PUT", "/kal", 200), ("GET", "/kal", 200), ("DELETE", "/kal", 204),
                                   ("GET", "/kal", 404)):
            h = srv.sign(method, path)
            conn.request(method, path, headers=h)
            resp = conn.getresponse()
            resp.read()
            eq(resp.status, want, "%s %s on one keep-alive connection" % (method, path))
        conn.close()
        check(srv.metric("shardstore_http_offloaded_total") >= 10, "blocking steps were not offloaded")
        # Every thread the server starts carries its job's name (top -H, perf):
        # one started from an event-loop thread would otherwise be another
        # "MHD-worker", as the offload workers were.
        names = []
        task_dir = "/proc/%d/task" % srv.proc.pid
        for tid in os.listdir(task_dir):
            with open(os.path.join(task_dir, tid, "comm")) as f:
                names.append(f.read().strip())
        for want in ("shard-offload", "shard-commit", "shard-hasher", "shard-guard", "shard-prezero"):
            check(want in names, "no %s thread among %s" % (want, sorted(names)))
        eq(sum(n.startswith("MHD-") for n in names), 1, "MHD threads (http_threads = 1) among %s" % sorted(names))


def test_sigterm_with_suspended_requests():
    srv = slow_server("evl-d", delay_ms=1000)
    with srv:
        s3 = srv.client(max_pool_connections=8)
        s3.create_bucket(Bucket="evb")
        results = {}

        def put(i):
            try:
                r = s3.put_object(Bucket="evb", Key="k%d" % i, Body=b"data%d" % i)
                results[i] = r["ResponseMetadata"]["HTTPStatusCode"]
            except Exception as e:
                results[i] = repr(e)

        threads = [threading.Thread(target=put, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while srv.metric("shardstore_requests_in_flight") < 5:  # 4 PUTs + this metrics request
            check(time.monotonic() < deadline, "the PUTs never got in flight")
            time.sleep(0.02)
        problems = srv.stop()
        for t in threads:
            t.join(timeout=30)
        check(not problems, "stop with suspended requests: %s" % problems)
        eq(results, {i: 200 for i in range(4)}, "PUTs acknowledged across SIGTERM")
        srv.start()
        s3 = srv.client()
        for i in range(4):
            eq(s3.get_object(Bucket="evb", Key="k%d" % i)["Body"].read(), b"data%d" % i, "k%d after restart" % i)


def test_many_connections():
    n = 1100
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n * 2 + 200
    if hard != resource.RLIM_INFINITY and hard < want:
        raise harness.Skip("RLIMIT_NOFILE hard limit %d < %d" % (hard, want))
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    # The server inherits the raised limit.
    with harness.Server(config="connection_limit = 4096\nconnection_limit_per_ip = 0\n", tag="evl-e") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="evb")
        s3.put_object(Bucket="evb", Key="o", Body=b"0123456789")
        conns = []
        try:
            for _ in range(n):
                c = srv.connect(timeout=60)
                c.connect()
                conns.append(c)
            h = srv.sign("GET", "/evb/o")
            for c in conns:
                c.request("GET", "/evb/o", headers=dict(h, Range="bytes=2-5"))
            for i, c in enumerate(conns):
                resp = c.getresponse()
                body = resp.read()
                eq((resp.status, body), (206, b"2345"), "answer on connection %d of %d" % (i, n))
            # Every connection is still usable (keep-alive).
            for c in conns[::50]:
                c.request("GET", "/evb/o", headers=h)
                resp = c.getresponse()
                eq((resp.status, resp.read()), (200, b"0123456789"), "second request")
        finally:
            for c in conns:
                c.close()


def test_body_on_routes_without_one():
    with slow_server("evl-f", delay_ms=800) as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="evb")
        s3.put_object(Bucket="evb", Key="victim", Body=b"v")
        up = s3.create_multipart_upload(Bucket="evb", Key="mp")["UploadId"]
        s3.upload_part(Bucket="evb", Key="mp", UploadId=up, PartNumber=1, Body=b"p")
        copy = {"x-amz-copy-source": "/evb/victim"}
        refused = [
            ("DELETE", "/evb/victim", "", {}),
            ("PUT", "/evb/copy", "", copy),
            ("PUT", "/evb/mp", "partNumber=2&uploadId=" + up, copy),
            ("POST", "/evb/new", "uploads=", {}),
            ("DELETE", "/evb/mp", "uploadId=" + up, {}),
            ("DELETE", "/evb", "", {}),
            ("GET", "/evb/victim", "", {}),
            ("POST", "/_/scrub", "", {}),
        ]
        for method, path, query, headers in refused:
            r = srv.request(method, path, query, headers=headers, body=b"x")
            harness.expect_s3_error(r.status, r.body, 400, "UnexpectedContent",
                                    "%s %s?%s with a 1-byte body" % (method, path, query))
        # A chunked body is a body too.
        h = srv.sign("DELETE", "/evb/victim", headers={"Transfer-Encoding": "chunked"}, payload_hash="UNSIGNED-PAYLOAD")
        conn = srv.connect()
        conn.putrequest("DELETE", "/evb/victim", skip_host=True, skip_accept_encoding=True)
        for k, v in h.items():
            conn.putheader(k, v)
        conn.endheaders()
        try:
            conn.send(b"1\r\nx\r\n0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = conn.getresponse()
        harness.expect_s3_error(resp.status, resp.read(), 400, "UnexpectedContent", "DELETE with a chunked body")
        conn.close()
        # Nothing was done.
        eq(s3.get_object(Bucket="evb", Key="victim")["Body"].read(), b"v", "the object after the refused DELETEs")
        with harness.client_error(("404", "NoSuchKey"), 404):
            s3.head_object(Bucket="evb", Key="copy")
        eq(len(s3.list_parts(Bucket="evb", Key="mp", UploadId=up)["Parts"]), 1, "parts after the refused steps")
        eq([u["Key"] for u in s3.list_multipart_uploads(Bucket="evb").get("Uploads", [])], ["mp"], "uploads")
        # Content-Length: 0 is no body.
        r = srv.request("DELETE", "/evb/victim", headers={"Content-Length": "0"}, body=b"")
        eq(r.status, 204, "DELETE with Content-Length: 0")
        # The same kind of request without a body waits for its commit on a
        # worker: health answers meanwhile.
        s3.put_object(Bucket="evb", Key="victim", Body=b"v")
        done = threading.Event()

        def slow_delete():
            srv.client().delete_object(Bucket="evb", Key="victim")
            done.set()

        t = threading.Thread(target=slow_delete)
        t.start()
        deadline = time.monotonic() + 10
        while srv.metric("shardstore_requests_in_flight") < 2:
            check(time.monotonic() < deadline, "the DELETE never reached its commit")
            time.sleep(0.02)
        for _ in range(5):
            eq(srv.health(), 200, "health while a DELETE waits on its commit")
        check(not done.is_set(), "health waited for a held commit")
        t.join(timeout=30)
        check(done.is_set(), "the slow DELETE did not finish")


def test_puts_commit_without_a_worker():
    cfg = "http_threads = 1\nworker_threads_max = 1\ntest_commit_delay_ms = 1000\n"
    with harness.Server(config=cfg, tag="evl-g") as srv:
        n = 8
        s3 = srv.client(max_pool_connections=n + 1)
        s3.create_bucket(Bucket="evb")
        before = srv.metrics()
        first = threading.Thread(target=s3.put_object, kwargs={"Bucket": "evb", "Key": "first", "Body": b"f" * 4096})
        first.start()
        # The first PUT is in its held commit (or queued behind the only
        # worker, before the change): the n others arrive meanwhile.
        deadline = time.monotonic() + 10
        while srv.metric("shardstore_requests_in_flight") < 2:
            check(time.monotonic() < deadline, "the first PUT never got in flight")
            time.sleep(0.02)
        time.sleep(0.2)
        start = threading.Barrier(n)

        def put(i):
            start.wait()
            s3.put_object(Bucket="evb", Key="k%d" % i, Body=harness.random_bytes(4096, seed=i))

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=n) as ex:
            list(ex.map(put, range(n)))
        first.join(timeout=30)
        elapsed = time.monotonic() - t0
        after = srv.metrics()
        commits = after["shardstore_index_commits_total"] - before["shardstore_index_commits_total"]
        ops = after["shardstore_index_committed_ops_total"] - before["shardstore_index_committed_ops_total"]
        print("     %d PUTs in %d commits (%d ops) in %.2f s, %d worker(s)" % (
            n + 1, commits, ops, elapsed, after["shardstore_http_workers"]), flush=True)
        eq(after["shardstore_http_workers"], 1, "workers")
        eq(ops, n + 1, "ops committed")
        check(commits <= 2, "%d PUTs with one worker took %d commits: a PUT holds the worker through its commit"
              % (n + 1, commits))
        for i in range(n):
            same_bytes(s3.get_object(Bucket="evb", Key="k%d" % i)["Body"].read(), harness.random_bytes(4096, seed=i),
                       "k%d" % i)
        eq(s3.get_object(Bucket="evb", Key="first")["Body"].read(), b"f" * 4096, "first")


def test_put_answers_in_every_mode():
    for i, cfg in enumerate(("", "group_commit = off\n", "thread_per_connection = on\n")):
        with harness.Server(config=cfg, tag="evl-h%d" % i) as srv:
            what = cfg.strip() or "default"
            s3 = srv.client()
            s3.create_bucket(Bucket="evb")
            s3.put_bucket_versioning(Bucket="evb", VersioningConfiguration={"Status": "Enabled"})
            body = harness.random_bytes(5000, seed=i)
            r = s3.put_object(Bucket="evb", Key="a", Body=body)
            eq(r["ETag"], '"%s"' % harness.md5_hex(body), "%s: ETag" % what)
            check(r.get("VersionId"), "%s: no version id in the PUT's answer" % what)
            got = srv.request("PUT", "/evb/a", body=b"other", headers={"If-None-Match": "*"})
            harness.expect_s3_error(got.status, got.body, 412, "PreconditionFailed", "%s: If-None-Match: *" % what)
            eq(s3.get_object(Bucket="evb", Key="a")["Body"].read(), body, "%s: after the refused PUT" % what)
            up = s3.create_multipart_upload(Bucket="evb", Key="mp", ChecksumAlgorithm="CRC32")["UploadId"]
            p1 = s3.upload_part(Bucket="evb", Key="mp", UploadId=up, PartNumber=1, Body=b"P" * (5 << 20),
                                ChecksumAlgorithm="CRC32")
            check(p1.get("ChecksumCRC32"), "%s: no checksum in the part's answer" % what)
            p2 = s3.upload_part(Bucket="evb", Key="mp", UploadId=up, PartNumber=2, Body=b"Q" * 10,
                                ChecksumAlgorithm="CRC32")
            s3.complete_multipart_upload(Bucket="evb", Key="mp", UploadId=up, MultipartUpload={"Parts": [
                {"PartNumber": 1, "ETag": p1["ETag"], "ChecksumCRC32": p1["ChecksumCRC32"]},
                {"PartNumber": 2, "ETag": p2["ETag"], "ChecksumCRC32": p2["ChecksumCRC32"]}]})
            eq(s3.head_object(Bucket="evb", Key="mp")["ContentLength"], (5 << 20) + 10, "%s: multipart size" % what)


TESTS = [test_reads_during_slow_commit, test_puts_share_commits, test_every_blocking_kind,
         test_sigterm_with_suspended_requests, test_many_connections, test_body_on_routes_without_one,
         test_puts_commit_without_a_worker, test_put_answers_in_every_mode]

if __name__ == "__main__":
    harness.main(TESTS, shared_server=False)
