"""test_reserve.py: uploads hold space only for the bytes they sent.

A PUT used to reserve its whole declared Content-Length (creating volume
files for it) and take its staging buffers before the first body byte, so
a few dozen held uploads that sent one byte each filled the store and a
victim's 12-byte PUT got 507.

(a) Many held PUTs and UploadParts that declared 32 MiB each and sent one
    byte: a victim's small PUT still succeeds, no volume file was created
    for them, and once they are dropped the free space is back where it was.
(b) reserve_max_per_principal: one user's held uploads past the cap are
    answered 503 SlowDown, another user's upload is unaffected, and the
    first user can upload again once the held ones are gone; an upload whose
    own steps pass the cap is refused mid-body and gives its space back.
"""

import json
import os
import socket
import struct
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, expect_s3_error  # noqa: E402

MIB = 1 << 20
FREE = "shardstore_storage_free_bytes"
DECLARED = 32 * MIB  # each held upload's Content-Length: fits the store alone
HELD = 40
STEP = 512 << 10  # the first reservation of an upload (one staging buffer)
CONFIG = "volume_size = 32M\nmax_volumes = 4\n"


def held_put(srv, path, query=""):
    """Opens a PUT (or with 'query' an UploadPart) declaring DECLARED bytes,
    sends one, and keeps it open."""
    h = srv.sign("PUT", path, query, {}, b"", payload_hash="UNSIGNED-PAYLOAD")
    h["Content-Length"] = str(DECLARED)
    target = path + ("?" + query if query else "")
    lines = ["PUT %s HTTP/1.1" % target] + ["%s: %s" % kv for kv in h.items()]
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + b"x")
    return s


def drop(socks):
    for s in socks:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        s.close()


def volume_files(srv):
    return sorted(f for f in os.listdir(os.path.join(srv.data_dir, "volumes")) if f.endswith(".dat"))


def wait_for(what, cond, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise harness.Failure("timed out waiting for " + what)
        time.sleep(0.05)


def test_held_puts_leave_room():
    with harness.Server(config=CONFIG, tag="reserve-a") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="held")
        eq(volume_files(srv), ["vol-0000.dat"], "volume files at start")
        free0 = srv.metric(FREE)
        uid = s3.create_multipart_upload(Bucket="held", Key="mp")["UploadId"]
        socks = []
        try:
            # Three quarters PUTs, the rest UploadParts (the same body path).
            for i in range(HELD):
                if i % 4 == 3:
                    q = "partNumber=%d&uploadId=%s" % (i + 1, urllib.parse.quote(uid, safe=""))
                    socks.append(held_put(srv, "/held/mp", q))
                else:
                    socks.append(held_put(srv, "/held/h%02d" % i))
            # Wait until the server has taken in the held uploads' bytes: each
            # holds at least one step now (all of its declared size without
            # the fix).
            wait_for("the held uploads to reserve", lambda: free0 - srv.metric(FREE) >= HELD * STEP)
            r = srv.request("PUT", "/held/victim", body=b"hello victim")
            eq(r.status, 200, "a victim's 12-byte PUT while %d uploads are held: %r" % (HELD, r.body[:300]))
            eq(s3.get_object(Bucket="held", Key="victim")["Body"].read(), b"hello victim", "victim's object")
            eq(volume_files(srv), ["vol-0000.dat"], "volume files with %d held uploads" % HELD)
            check(free0 - srv.metric(FREE) <= HELD * 2 * STEP + MIB,
                  "%d held uploads of one byte hold %d bytes" % (HELD, free0 - srv.metric(FREE)))
        finally:
            drop(socks)
        # Nothing leaks: the held uploads' space comes back.
        victim_len = 4096
        wait_for("free bytes to come back", lambda: srv.metric(FREE) == free0 - victim_len)
        for i in range(HELD):
            if i % 4 != 3:
                eq(srv.request("HEAD", "/held/h%02d" % i).status, 404, "held upload h%02d after the drop" % i)
        eq(s3.list_parts(Bucket="held", Key="mp", UploadId=uid).get("Parts", []), [], "parts after the drop")


def admin(srv, method, what, **params):
    q = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
    r = srv.request(method, "/_/admin/" + what, query=q)
    check(200 <= r.status < 300, "%s /_/admin/%s: HTTP %d %r" % (method, what, r.status, r.body[:300]))
    return json.loads(r.body) if r.body else None


def test_principal_cap():
    # One held upload holds about 1 MiB (a 512 KiB step and a 512 KiB
    # staging buffer): 8 MiB admits a few, not 16.
    cfg = CONFIG + "reserve_max_per_principal = 8M\n"
    with harness.Server(config=cfg, tag="reserve-b") as srv:
        srv.client().create_bucket(Bucket="root-b")
        admin(srv, "POST", "users", name="alice")
        k = admin(srv, "POST", "keys", user="alice")
        ak, sk = k["access_key"], k["secret_key"]
        alice = srv.client(access_key=ak, secret_key=sk)
        alice.create_bucket(Bucket="alice-b")
        free0 = srv.metric(FREE)
        socks = []
        try:
            for i in range(16):
                socks.append(held_put(srv, "/root-b/h%02d" % i))

            def root_refused():
                r = srv.request("PUT", "/root-b/probe", body=b"root's probe")
                if r.status == 200:
                    return None
                expect_s3_error(r.status, r.body, 503, "SlowDown", "root's PUT past its cap")
                return r

            wait_for("root's uploads to reach reserve_max_per_principal", root_refused)
            # Another user is not affected.
            alice.put_object(Bucket="alice-b", Key="small", Body=b"alice's data")
            eq(alice.get_object(Bucket="alice-b", Key="small")["Body"].read(), b"alice's data", "alice's object")
            eq(volume_files(srv), ["vol-0000.dat"], "volume files with held uploads")
        finally:
            drop(socks)
        # Once they are gone, root uploads again and nothing leaked.
        wait_for("root's charge to be released",
                 lambda: srv.request("PUT", "/root-b/after", body=b"after the drop").status == 200)
        wait_for("free bytes to come back", lambda: srv.metric(FREE) == free0 - 2 * 4096)
        # One upload alone whose reservation steps (doubling to 16 MiB) pass
        # the cap is refused mid-body, and its space is given back.
        big = harness.random_bytes(24 * MIB, seed=7)
        r = srv.request("PUT", "/root-b/big", body=big)
        expect_s3_error(r.status, r.body, 503, "SlowDown", "an upload whose steps pass the cap")
        eq(srv.request("HEAD", "/root-b/big").status, 404, "the refused upload")
        eq(srv.metric(FREE), free0 - 2 * 4096, "free bytes after the refused upload")


TESTS = [
    test_held_puts_leave_room,
    test_principal_cap,
]

if __name__ == "__main__":
    harness.main(TESTS, shared_server=False)
