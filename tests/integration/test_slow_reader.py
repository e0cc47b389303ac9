"""test_slow_reader.py: a reader that stalls holds back its own object's
space and nothing else, and not for ever (issue 16, item 5).

A GET pins storage so that space freed by an overwrite is not reused under
it. Here anonymous clients GET from a public-read bucket, read a few bytes
and stop reading (a tiny receive buffer keeps the server from finishing the
response), while other keys are overwritten again and again in a store of
32 MiB: the PUTs must keep succeeding (no 507) and the freed space must be
reclaimed. A stalled streamed (multi-extent) GET also loses its pin after
reader_pin_timeout, so even its own object's old space comes back; a full
pin table answers 503 SlowDown instead of growing.
"""

import os
import socket
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq  # noqa: E402

MIB = 1 << 20
# 32 MiB of volumes; each test sets the pin limits it is about.
CONFIG = """
volume_size = 16M
max_volumes = 2
min_part_size = 1M
reader_pin_timeout = %d
reader_pins_max = %d
"""
BUCKET = "pub"


def server(pin_timeout_s=60, pins_max=64):
    srv = harness.Server(config=CONFIG % (pin_timeout_s, pins_max), tag="slowread",
                         allowed_errors=[])
    srv.start()
    return srv


def finish(srv):
    problems = srv.stop()
    srv.cleanup()
    check(not problems, "teardown: %s" % "\n".join(problems))


def stalled_get(srv, key, want=100):
    """Starts an anonymous GET of 'key', reads 'want' bytes of it and stops
    reading. Returns (socket, bytes received so far)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("127.0.0.1", srv.port))
    s.sendall(("GET /%s/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % (BUCKET, key)).encode())
    got = b""
    while len(got) < want:
        chunk = s.recv(want - len(got))
        check(chunk, "the server closed the GET of %s early" % key)
        got += chunk
    check(got.startswith(b"HTTP/1.1 200"), "anonymous GET of %s: %r" % (key, got[:80]))
    return s, got


def read_all(s, limit_s=20):
    """Reads until the server closes or 'limit_s' passed; returns the bytes."""
    out = b""
    s.settimeout(limit_s)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(1 << 16)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        out += chunk
    return out


def wait_metric(srv, name, pred, what, limit_s=10):
    deadline = time.monotonic() + limit_s
    while True:
        v = srv.metric(name)
        if pred(v):
            return v
        if time.monotonic() > deadline:
            raise harness.Failure("%s: %s is %r" % (what, name, v))
        time.sleep(0.05)


def setup(srv):
    s3 = srv.client()
    try:
        s3.create_bucket(Bucket=BUCKET, ObjectOwnership="ObjectWriter")  # ACLs on
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    s3.put_bucket_acl(Bucket=BUCKET, ACL="public-read")
    return s3


def overwrite_many(srv, s3, rounds, what):
    body = harness.random_bytes(2 * MIB, seed=7)
    for i in range(rounds):
        try:
            s3.put_object(Bucket=BUCKET, Key="churn-%d" % (i % 3), Body=body)
        except Exception as e:
            raise harness.Failure("%s: overwrite %d failed: %s (pending %r)" % (
                what, i, e, srv.metric("shardstore_storage_pending_bytes")))


def test_stalled_readers_hold_only_their_object():
    srv = server()
    try:
        stalled_readers_hold_only_their_object(srv)
    finally:
        finish(srv)


def stalled_readers_hold_only_their_object(srv):
    s3 = setup(srv)
    # One object sent zero-copy (one extent), one streamed (a multipart
    # object: one extent per part).
    s3.put_object(Bucket=BUCKET, Key="single", Body=harness.random_bytes(6 * MIB, seed=1))
    mp = s3.create_multipart_upload(Bucket=BUCKET, Key="multi")
    parts = []
    for n in range(1, 5):
        r = s3.upload_part(Bucket=BUCKET, Key="multi", UploadId=mp["UploadId"], PartNumber=n,
                           Body=harness.random_bytes(MIB, seed=10 + n))
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=BUCKET, Key="multi", UploadId=mp["UploadId"],
                                 MultipartUpload={"Parts": parts})
    pins0 = srv.metric("shardstore_storage_reader_pins")
    a, _ = stalled_get(srv, "single")
    b, _ = stalled_get(srv, "multi")
    try:
        # Both responses are stuck behind the clients' full windows.
        time.sleep(0.3)
        eq(srv.metric("shardstore_storage_reader_pins"), pins0 + 2, "pins held by the stalled GETs")
        # 40 overwrites of 2 MiB in a 32 MiB store: only reclaim makes room.
        overwrite_many(srv, s3, 40, "while two readers stall")
        eq(srv.metric("shardstore_storage_pending_bytes"), 0, "freed space waiting for readers")
        eq(srv.metric("shardstore_storage_reader_pins"), pins0 + 2, "still stalled")
    finally:
        a.close()
        b.close()
    wait_metric(srv, "shardstore_storage_reader_pins", lambda v: v == pins0, "after the readers left")


def test_stalled_stream_loses_its_pin():
    srv = server(pin_timeout_s=1)
    try:
        stalled_stream_loses_its_pin(srv)
    finally:
        finish(srv)


def stalled_stream_loses_its_pin(srv):
    s3 = setup(srv)
    s3.put_object(Bucket=BUCKET, Key="churn-0", Body=b"x")
    mp = s3.create_multipart_upload(Bucket=BUCKET, Key="multi2")
    parts = []
    # Parts of an unaligned length are never joined into one span: the GET
    # is streamed (equal aligned parts would be laid out as one span and
    # sent zero-copy, whose pin is not revocable).
    for n in range(1, 5):
        r = s3.upload_part(Bucket=BUCKET, Key="multi2", UploadId=mp["UploadId"], PartNumber=n,
                           Body=harness.random_bytes(MIB + 1, seed=20 + n))
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=BUCKET, Key="multi2", UploadId=mp["UploadId"],
                                 MultipartUpload={"Parts": parts})
    s, head = stalled_get(srv, "multi2")
    try:
        # The stalled reader's own object is overwritten: its old 4 MiB wait.
        s3.put_object(Bucket=BUCKET, Key="multi2", Body=b"new")
        held = srv.metric("shardstore_storage_pending_bytes")
        check(MIB <= held <= 4 * (MIB + 4096), "the reader's unread parts are held: %r" % held)
        # Past reader_pin_timeout (1 s) the pin is revoked at the next release.
        time.sleep(1.5)
        s3.put_object(Bucket=BUCKET, Key="churn-0", Body=b"y")
        wait_metric(srv, "shardstore_storage_pending_bytes", lambda v: v == 0, "after the pin timeout")
        # The response cannot finish: it ends short of its length.
        rest = read_all(s)
        check(len(head) + len(rest) < 4 * (MIB + 1), "a revoked stream ends early (%d bytes)" % (len(head) + len(rest)))
    finally:
        s.close()
    eq(srv.health(), 200, "healthy after the revoked stream")


def test_full_pin_table_answers_slowdown():
    srv = server(pins_max=8)
    try:
        full_pin_table_answers_slowdown(srv)
    finally:
        finish(srv)


def full_pin_table_answers_slowdown(srv):
    s3 = setup(srv)
    s3.put_object(Bucket=BUCKET, Key="single", Body=harness.random_bytes(6 * MIB, seed=1))
    pins0 = int(srv.metric("shardstore_storage_reader_pins"))
    socks = []
    try:
        for _ in range(8 - pins0):
            socks.append(stalled_get(srv, "single")[0])
        r = srv.request("GET", "/%s/single" % BUCKET, sign=False)
        harness.expect_s3_error(r.status, r.body, 503, "SlowDown", "GET with the pin table full")
    finally:
        for s in socks:
            s.close()
    wait_metric(srv, "shardstore_storage_reader_pins", lambda v: v == pins0, "after the readers left")
    r = srv.request("GET", "/%s/single" % BUCKET, sign=False)
    eq(r.status, 200, "GET once pins are free")


if __name__ == "__main__":
    harness.main([
        test_stalled_readers_hold_only_their_object,
        test_stalled_stream_loses_its_pin,
        test_full_pin_table_answers_slowdown,
    ], shared_server=False)
