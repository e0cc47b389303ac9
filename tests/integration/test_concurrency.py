"""test_concurrency.py: readers and writers racing on the same keys.

(a) Overwrites of one key while readers GET it and range-read it: every
    answer is exactly one version (its body matches its ETag), never a mix.
(b) Deferred reclaim: a slow reader keeps streaming an object that was
    deleted meanwhile, while new PUTs fill the volume; the reader still gets
    the old bytes, and the space comes back once it is done.
(c) Many parallel PUTs and GETs of distinct keys (group commit path).
"""

import concurrent.futures
import hashlib
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, same_bytes  # noqa: E402

MIB = 1 << 20
FREE = "shardstore_storage_free_bytes"


def version_bytes(v, n):
    """Object version 'v': n bytes, every 8-byte word tagged with v, so a
    mixed answer is visible at the first foreign byte."""
    word = b"V%06dX" % v + b"\n"
    return (word * (n // len(word) + 1))[:n]


def test_overwrite_while_reading():
    with harness.Server(tag="conc-a") as srv:
        s3 = srv.client(max_pool_connections=16)
        s3.create_bucket(Bucket="race")
        n = 3 * MIB + 5
        versions = {}
        versions[0] = version_bytes(0, n)
        s3.put_object(Bucket="race", Key="hot", Body=versions[0])
        etag_of = {'"%s"' % hashlib.md5(versions[0]).hexdigest(): 0}
        stop = threading.Event()
        errors = []
        lock = threading.Lock()

        def writer():
            v = 1
            while not stop.is_set() and v < 40:
                data = version_bytes(v, n)
                with lock:
                    etag_of['"%s"' % hashlib.md5(data).hexdigest()] = v
                s3.put_object(Bucket="race", Key="hot", Body=data)
                v += 1

        def reader(ranged):
            count = 0
            while not stop.is_set():
                try:
                    if ranged:
                        lo = (count * 524309) % (n - 100000)
                        r = s3.get_object(Bucket="race", Key="hot", Range="bytes=%d-%d" % (lo, lo + 99999))
                    else:
                        r = s3.get_object(Bucket="race", Key="hot")
                    body = r["Body"].read()
                    etag = r["ETag"]
                except Exception as e:  # noqa: BLE001
                    errors.append("GET failed: %r" % e)
                    return
                with lock:
                    v = etag_of.get(etag)
                if v is None:
                    errors.append("GET returned unknown ETag %s" % etag)
                    return
                want = version_bytes(v, n)
                if ranged:
                    want = want[lo:lo + 100000]
                if body != want:
                    first = next((i for i in range(min(len(body), len(want))) if body[i] != want[i]), None)
                    errors.append("GET (%s) with ETag of version %d returned other bytes (len %d vs %d, first difference at %s: %r)" % ("ranged" if ranged else "full", v, len(body), len(want), first, body[first:first + 16] if first is not None else b""))
                    return
                count += 1

        with concurrent.futures.ThreadPoolExecutor(max_workers=6) as ex:
            futs = [ex.submit(reader, i % 2 == 1) for i in range(4)]
            w = ex.submit(writer)
            w.result(timeout=120)
            stop.set()
            for f in futs:
                f.result(timeout=60)
        check(not errors, "; ".join(errors[:5]))


def test_deferred_reclaim():
    with harness.Server(config="volume_size = 64M\nmax_volumes = 1\n", tag="conc-b") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="reclaim")
        free0 = srv.metric(FREE)
        old = harness.random_bytes(24 * MIB, seed=901)
        s3.put_object(Bucket="reclaim", Key="old", Body=old)
        filler = harness.random_bytes(28 * MIB, seed=902)
        s3.put_object(Bucket="reclaim", Key="filler", Body=filler)
        # Start a slow reader of "old": read 1 MiB, then stall.
        h = srv.sign("GET", "/reclaim/old")
        conn = srv.connect(timeout=60)
        conn.request("GET", "/reclaim/old", headers=h)
        resp = conn.getresponse()
        eq(resp.status, 200, "slow GET status")
        got = resp.read(MIB)
        # Delete it and write new objects that would reuse its extents.
        s3.delete_object(Bucket="reclaim", Key="old")
        written = {}
        for i in range(3):
            data = harness.random_bytes(7 * MIB, seed=910 + i)
            r = srv.request("PUT", "/reclaim/new%d" % i, body=data)
            if r.status == 200:
                written["new%d" % i] = data
            else:
                harness.expect_s3_error(r.status, r.body, 507, "InsufficientStorage", "PUT while a reader holds deleted extents")
        # The stalled reader still gets the old bytes.
        t0 = time.monotonic()
        while True:
            chunk = resp.read(MIB)
            if not chunk:
                break
            got += chunk
            check(time.monotonic() - t0 < 60, "slow GET does not finish")
        conn.close()
        same_bytes(got, old, "bytes of a deleted object read by a reader that started before the delete")
        for k, v in written.items():
            same_bytes(s3.get_object(Bucket="reclaim", Key=k)["Body"].read(), v, k)
        # Once the reader is gone the space is reusable.
        for k in list(written) + ["filler"]:
            s3.delete_object(Bucket="reclaim", Key=k)
        deadline = time.monotonic() + 10
        while srv.metric(FREE) != free0 and time.monotonic() < deadline:
            time.sleep(0.1)
        eq(srv.metric(FREE), free0, "free bytes after everything is deleted and the reader is done")
        r = srv.request("PUT", "/reclaim/after", body=harness.random_bytes(40 * MIB, seed=920))
        eq(r.status, 200, "40 MiB PUT once the space is reclaimed: %r" % r.body[:200])


def test_parallel_small_objects():
    with harness.Server(tag="conc-c") as srv:
        s3 = srv.client(max_pool_connections=32)
        s3.create_bucket(Bucket="many")
        items = {"k/%04d" % i: harness.random_bytes(100 + (i * 7919) % 20000, seed=3000 + i) for i in range(400)}

        def put(k):
            s3.put_object(Bucket="many", Key=k, Body=items[k])

        def get(k):
            body = s3.get_object(Bucket="many", Key=k)["Body"].read()
            if body != items[k]:
                return k
            return None

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
            list(ex.map(put, items))
            bad = [k for k in ex.map(get, items) if k]
        check(not bad, "wrong bodies for %s" % bad[:10])
        keys = []
        token = None
        while True:
            kw = {"Bucket": "many", "Prefix": "k/"}
            if token:
                kw["ContinuationToken"] = token
            r = s3.list_objects_v2(**kw)
            keys += [o["Key"] for o in r.get("Contents", [])]
            if not r["IsTruncated"]:
                break
            token = r["NextContinuationToken"]
        eq(keys, sorted(items), "listing of 400 parallel PUTs")
        print("     400 PUTs + 400 GETs in %.2f s" % (time.monotonic() - t0), flush=True)
        srv.restart()
        s3 = srv.client(max_pool_connections=32)
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
            bad = [k for k in ex.map(get, items) if k]
        check(not bad, "wrong bodies after a restart for %s" % bad[:10])


TESTS = [test_overwrite_while_reading, test_deferred_reclaim, test_parallel_small_objects]

if __name__ == "__main__":
    harness.main(TESTS, shared_server=False)
