"""test_multipart_crash.py: kill -9 in the middle of multipart uploads.

(a) kill -9 while 16 parts of 8 MiB upload in parallel: after a restart the
    upload is listed, every acknowledged part is there with its ETag, the
    rest can be uploaded again and the object completed, byte for byte; free
    space is exactly what the listed parts leave.
(b) kill -9 right after the body of a CompleteMultipartUpload (41 parts) was
    sent, at delays of 0-20 ms, over an older object under the same key:
    after the restart either the new object is there and the upload is gone,
    or the old object is intact and the upload with all its parts is still
    there. Never a mix; free space matches whichever happened.
(c) kill -9 right after Complete, Abort and UploadPart were acknowledged:
    each of them is durable.
(d) kill -9 while parts are being replaced (each part is then the old or the
    new one, acknowledged ones new, none lost) and right after an Abort was
    sent (the upload is whole or gone).
Each test runs its own server (volume_size = 4G, one volume) and restarts
it on the same data dir. Free space is rebuilt from the index at startup,
so after a restart free == total - space of objects - space of parts.
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
import mp_util as mp  # noqa: E402
from harness import check, client_error, eq, same_bytes  # noqa: E402

MIB = mp.MIB
CONFIG = "volume_size = 4G\nmax_volumes = 1\n"


def compare_object(s3, b, k, want, what):
    """Streams the object and compares it with 'want' chunk by chunk."""
    g = s3.get_object(Bucket=b, Key=k)
    eq(g["ContentLength"], len(want), what + ": Content-Length")
    body = g["Body"]
    off = 0
    chunk = 8 * MIB
    while True:
        got = body.read(chunk)
        if not got:
            break
        if got != want[off:off + len(got)]:
            same_bytes(got, want[off:off + len(got)], "%s (chunk at offset %d)" % (what, off))
        off += len(got)
    eq(off, len(want), what + ": bytes read")
    return g["ETag"]


def expect_space(srv, used, what):
    """free == total - used, with nothing pending."""
    m = mp.settled(srv)
    mp.expect_free(srv, m[mp.TOTAL] - used, what)


# --------------------------------------------------------------------------
# (a) kill -9 during parallel part uploads


def kill_during_parts(srv, b, key, kill_after, seed, base_used):
    """Returns the space the completed object uses. 'base_used': space of
    what the store holds already."""
    n_parts, part_len = 16, 8 * MIB
    datas = [harness.random_bytes(part_len, seed=seed + i) for i in range(n_parts)]
    s3 = srv.client()
    uid = s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
    clients = [srv.client(read_timeout=20, connect_timeout=5) for _ in range(n_parts)]
    acked = {}
    errors = {}
    lock = threading.Lock()
    go = threading.Event()

    def one(i):
        go.wait(10)
        try:
            r = clients[i].upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i + 1, Body=datas[i])
        except Exception as e:  # the server dies under some of them
            with lock:
                errors[i + 1] = repr(e)[:200]
            return
        with lock:
            acked[i + 1] = r["ETag"]

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n_parts)]
    for t in threads:
        t.start()
    go.set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with lock:
            n = len(acked) + len(errors)
            if len(acked) >= kill_after or n == n_parts:
                break
        time.sleep(0.0005)
    with lock:
        at_kill = len(acked)
    srv.kill()
    for t in threads:
        t.join(60)
        check(not t.is_alive(), "an UploadPart thread is still running 60 s after kill -9")
    print("     %d parts acknowledged when killed, %d in the end, %d failed" % (at_kill, len(acked), len(errors)), flush=True)
    check(at_kill >= 1, "no part was acknowledged before the kill (errors: %s)" % errors)
    for n, etag in acked.items():
        eq(etag, mp.part_etag(datas[n - 1]), "acknowledged ETag of part %d" % n)

    srv.start()
    s3 = srv.client()
    check((key, uid) in mp.upload_ids(s3, b), "upload %s not listed after kill -9 during its part uploads" % uid)
    parts = mp.all_parts(s3, b, key, uid)
    listed = {p["PartNumber"]: p for p in parts}
    for n, etag in sorted(acked.items()):
        check(n in listed, "acknowledged part %d is missing after kill -9 (listed: %s)" % (n, sorted(listed)))
        eq(listed[n]["ETag"], etag, "ETag of acknowledged part %d after restart" % n)
    for n, p in listed.items():
        check(1 <= n <= n_parts, "part %d listed, never uploaded" % n)
        eq((p["Size"], p["ETag"]), (part_len, mp.part_etag(datas[n - 1])), "size and ETag of listed part %d (acknowledged: %s)" % (n, n in acked))
    print("     %d parts listed after restart" % len(listed), flush=True)
    expect_space(srv, base_used + mp.space_of(p["Size"] for p in parts), "free bytes after restart with %d parts listed (and %d bytes of earlier objects)" % (len(parts), base_used))

    # Upload what is missing and complete.
    missing = [n for n in range(1, n_parts + 1) if n not in listed]
    for n in missing:
        s3.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=n, Body=datas[n - 1])
    done = [{"PartNumber": n, "ETag": mp.part_etag(datas[n - 1])} for n in range(1, n_parts + 1)]
    r = s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={"Parts": done})
    eq(r["ETag"], mp.mp_etag(datas), "ETag of the completed upload")
    etag = compare_object(s3, b, key, b"".join(datas), "object completed after kill -9")
    eq(etag, mp.mp_etag(datas), "GET ETag")
    return mp.space_of([part_len] * n_parts)


def test_kill_during_parallel_parts():
    with harness.Server(config=CONFIG, tag="mpcrash-a") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="mpcrash")
        total = srv.metric(mp.TOTAL)
        expect_space(srv, 0, "free bytes of an empty store")
        used = 0
        for rnd, kill_after in enumerate([8, 3, 12]):
            used += kill_during_parts(srv, "mpcrash", "big-%d" % rnd, kill_after, 1000 * (rnd + 1), used)
            expect_space(srv, used, "round %d: free bytes after completing" % rnd)
        # A restart (clean) changes nothing.
        srv.restart()
        eq(srv.metric(mp.TOTAL), total, "total bytes after restarts")
        expect_space(srv, used, "free bytes after a clean restart")


# --------------------------------------------------------------------------
# (b) kill -9 during CompleteMultipartUpload


def complete_xml(etags):
    parts = "".join("<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (i + 1, e) for i, e in enumerate(etags))
    return ('<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">%s</CompleteMultipartUpload>' % parts).encode()


def upload_all(srv, b, key, uid, datas):
    s3 = srv.client(max_pool_connections=8)

    def one(i):
        return s3.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i + 1, Body=datas[i])["ETag"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as ex:
        etags = list(ex.map(one, range(len(datas))))
    eq(etags, [mp.part_etag(d) for d in datas], "ETags of the uploaded parts")
    return etags


def make_upload_data(seed):
    datas = [harness.random_bytes(5 * MIB, seed=seed + i) for i in range(40)]
    datas.append(harness.random_bytes(1234567, seed=seed + 40))
    return datas


def test_kill_during_complete():
    with harness.Server(config=CONFIG, tag="mpcrash-b") as srv:
        s3 = srv.client()
        b, key = "mpcomplete", "target"
        s3.create_bucket(Bucket=b)
        old = harness.random_bytes(3 * MIB + 5, seed=2000)
        s3.put_object(Bucket=b, Key=key, Body=old)
        # A bystander object that no round touches.
        s3.put_object(Bucket=b, Key="bystander", Body=b"keep me")
        cur = old  # what the key holds
        cur_etag = mp.part_etag(old)
        cur_space = mp.align_up(len(old))
        bystander_space = mp.align_up(7)
        expect_space(srv, cur_space + bystander_space, "free bytes with the old object")
        uid, datas = None, None
        outcomes = []
        for rnd, delay in enumerate([0.0, 0.001, 0.003, 0.006, 0.01, 0.02]):
            if uid is None:
                datas = make_upload_data(3000 + 100 * rnd)
                uid = s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
                upload_all(srv, b, key, uid, datas)
            new = None  # built lazily: 200 MiB
            parts_space = mp.space_of(len(d) for d in datas)
            expect_space(srv, cur_space + bystander_space + parts_space, "round %d: free bytes before Complete" % rnd)
            body = complete_xml([mp.part_etag(d) for d in datas])
            path = "/%s/%s" % (b, key)
            query = "uploadId=%s" % uid
            h = srv.sign("POST", path, query, {"Content-Type": "application/xml"}, body)
            conn = srv.connect(timeout=30)
            conn.putrequest("POST", path + "?" + query, skip_host=True, skip_accept_encoding=True)
            for k, v in h.items():
                conn.putheader(k, v)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            if delay:
                time.sleep(delay)
            srv.kill()
            conn.close()
            srv.start()
            s3 = srv.client()
            what = "round %d (kill %.0f ms after the Complete body)" % (rnd, delay * 1000)
            still_listed = (key, uid) in mp.upload_ids(s3, b)
            head = s3.head_object(Bucket=b, Key=key)
            new_etag = mp.mp_etag(datas)
            if head["ETag"] == new_etag:
                outcomes.append("committed")
                check(not still_listed, what + ": the object was completed but the upload is still listed (a mix)")
                with client_error("NoSuchUpload", 404):
                    s3.list_parts(Bucket=b, Key=key, UploadId=uid)
                new = b"".join(datas)
                compare_object(s3, b, key, new, what + ": completed object")
                cur, cur_etag = new, new_etag
                cur_space = parts_space
                expect_space(srv, cur_space + bystander_space, what + ": free bytes with the completed object")
                uid = None
            else:
                outcomes.append("not committed")
                eq(head["ETag"], cur_etag, what + ": the key holds neither the old nor the new object's ETag")
                check(still_listed, what + ": the Complete did not happen and the upload is gone too (parts lost)")
                compare_object(s3, b, key, cur, what + ": the previous object")
                ps = mp.all_parts(s3, b, key, uid)
                eq([(p["PartNumber"], p["Size"], p["ETag"]) for p in ps], [(i + 1, len(d), mp.part_etag(d)) for i, d in enumerate(datas)], what + ": parts of the upload that was not completed")
                expect_space(srv, cur_space + bystander_space + parts_space, what + ": free bytes with the old object and the upload")
            eq(s3.get_object(Bucket=b, Key="bystander")["Body"].read(), b"keep me", what + ": bystander")
            print("     %s: %s" % (what, outcomes[-1]), flush=True)
        # Finish: the last upload (if any) completes normally now.
        if uid is not None:
            r = s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": mp.part_etag(d)} for i, d in enumerate(datas)]})
            eq(r["ETag"], mp.mp_etag(datas), "ETag of the final Complete")
            compare_object(s3, b, key, b"".join(datas), "object of the final Complete")
            cur_space = mp.space_of(len(d) for d in datas)
        expect_space(srv, cur_space + bystander_space, "free bytes at the end")
        print("     outcomes: %s" % outcomes, flush=True)


# --------------------------------------------------------------------------
# (c) acknowledged multipart operations survive kill -9


def test_acknowledged_operations_durable():
    with harness.Server(config=CONFIG, tag="mpcrash-c") as srv:
        s3 = srv.client()
        b = "mpdurable"
        s3.create_bucket(Bucket=b)
        p1 = harness.random_bytes(5 * MIB + 11, seed=4000)
        p2 = harness.random_bytes(22222, seed=4001)
        # Completed upload.
        ua = s3.create_multipart_upload(Bucket=b, Key="completed")["UploadId"]
        done = mp.upload_parts(s3, b, "completed", ua, [p1, p2])
        s3.complete_multipart_upload(Bucket=b, Key="completed", UploadId=ua, MultipartUpload={"Parts": done})
        # Aborted upload.
        ub = s3.create_multipart_upload(Bucket=b, Key="aborted")["UploadId"]
        mp.upload_parts(s3, b, "aborted", ub, [p1, p2])
        s3.abort_multipart_upload(Bucket=b, Key="aborted", UploadId=ub)
        # Upload in progress, with a replaced part and a part of an unused number.
        uc = s3.create_multipart_upload(Bucket=b, Key="pending")["UploadId"]
        mp.upload_parts(s3, b, "pending", uc, [p2, p1])
        mp.upload_parts(s3, b, "pending", uc, [p1])  # part 1 replaced
        # Completed with part 3 unused.
        ud = s3.create_multipart_upload(Bucket=b, Key="partial")["UploadId"]
        done_d = mp.upload_parts(s3, b, "partial", ud, [p1, p2, p1])
        s3.complete_multipart_upload(Bucket=b, Key="partial", UploadId=ud, MultipartUpload={"Parts": done_d[:2]})
        # An empty upload just created.
        ue = s3.create_multipart_upload(Bucket=b, Key="empty")["UploadId"]
        srv.kill()
        srv.start()
        s3 = srv.client()
        eq(sorted(mp.upload_ids(s3, b)), sorted([("pending", uc), ("empty", ue)]), "uploads listed after kill -9")
        compare_object(s3, b, "completed", p1 + p2, "completed object after kill -9")
        eq(s3.head_object(Bucket=b, Key="completed")["ETag"], mp.mp_etag([p1, p2]), "ETag of the completed object after kill -9")
        compare_object(s3, b, "partial", p1 + p2, "object completed with 2 of 3 parts after kill -9")
        with client_error("NoSuchKey", 404):
            s3.get_object(Bucket=b, Key="aborted")
        with client_error("NoSuchUpload", 404):
            s3.list_parts(Bucket=b, Key="aborted", UploadId=ub)
        ps = mp.all_parts(s3, b, "pending", uc)
        eq([(p["PartNumber"], p["Size"], p["ETag"]) for p in ps], [(1, len(p1), mp.part_etag(p1)), (2, len(p1), mp.part_etag(p1))], "parts of the pending upload after kill -9")
        eq(mp.all_parts(s3, b, "empty", ue), [], "parts of the empty upload")
        used = 2 * mp.space_of([len(p1), len(p2)]) + mp.space_of([len(p1), len(p1)])
        expect_space(srv, used, "free bytes after kill -9 (2 objects of p1+p2, 2 pending parts of p1)")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", [])]
        eq(keys, ["completed", "partial"], "objects after kill -9")
        # Everything still works.
        s3.abort_multipart_upload(Bucket=b, Key="empty", UploadId=ue)
        s3.complete_multipart_upload(Bucket=b, Key="pending", UploadId=uc, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": mp.part_etag(p1)}, {"PartNumber": 2, "ETag": mp.part_etag(p1)}]})
        compare_object(s3, b, "pending", p1 + p1, "object completed after the restart")
        expect_space(srv, used, "free bytes after completing the pending upload")


# --------------------------------------------------------------------------
# (d) kill -9 during part replacements and during Abort


def test_kill_during_replace_and_abort():
    with harness.Server(config=CONFIG, tag="mpcrash-d") as srv:
        s3 = srv.client()
        b, key = "mpreplace", "r"
        s3.create_bucket(Bucket=b)
        n_parts = 8
        old = [harness.random_bytes(6 * MIB + 100 * i, seed=5000 + i) for i in range(n_parts)]
        new = [harness.random_bytes(5 * MIB + 7 * i, seed=5100 + i) for i in range(n_parts)]
        uid = s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
        upload_all(srv, b, key, uid, old)
        clients = [srv.client(read_timeout=20, connect_timeout=5) for _ in range(n_parts)]
        acked = {}
        lock = threading.Lock()
        go = threading.Event()

        def one(i):
            go.wait(10)
            try:
                r = clients[i].upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i + 1, Body=new[i])
            except Exception:
                return
            with lock:
                acked[i + 1] = r["ETag"]

        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n_parts)]
        for t in threads:
            t.start()
        go.set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with lock:
                if len(acked) >= n_parts // 2:
                    break
            time.sleep(0.0005)
        srv.kill()
        for t in threads:
            t.join(60)
        srv.start()
        s3 = srv.client()
        ps = {p["PartNumber"]: p for p in mp.all_parts(s3, b, key, uid)}
        eq(sorted(ps), list(range(1, n_parts + 1)), "parts listed after kill -9 during their replacement (none may vanish)")
        chosen = []
        n_new = 0
        for n in range(1, n_parts + 1):
            p = ps[n]
            got = (p["Size"], p["ETag"])
            o = (len(old[n - 1]), mp.part_etag(old[n - 1]))
            w = (len(new[n - 1]), mp.part_etag(new[n - 1]))
            if n in acked:
                eq(got, w, "part %d (replacement acknowledged) after kill -9" % n)
            check(got in (o, w), "part %d after kill -9 is neither the old nor the new part: %s" % (n, got))
            chosen.append(old[n - 1] if got == o else new[n - 1])
            n_new += got == w
        print("     %d replacements acknowledged, %d parts new after restart" % (len(acked), n_new), flush=True)
        expect_space(srv, mp.space_of(len(c) for c in chosen), "free bytes after kill -9 during part replacements")
        r = s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={"Parts": [{"PartNumber": n + 1, "ETag": mp.part_etag(c)} for n, c in enumerate(chosen)]})
        eq(r["ETag"], mp.mp_etag(chosen), "ETag of the upload completed after replacements")
        compare_object(s3, b, key, b"".join(chosen), "object completed from old and new parts")
        obj_space = mp.space_of(len(c) for c in chosen)
        expect_space(srv, obj_space, "free bytes with the completed object")

        # kill -9 right after an Abort request was sent.
        outcomes = []
        uid = None
        for rnd, delay in enumerate([0.0, 0.001, 0.003, 0.01]):
            if uid is None:
                uid = s3.create_multipart_upload(Bucket=b, Key="ab")["UploadId"]
                upload_all(srv, b, "ab", uid, old[:4])
            parts_space = mp.space_of(len(d) for d in old[:4])
            path, query = "/%s/ab" % b, "uploadId=%s" % uid
            h = srv.sign("DELETE", path, query, {}, b"")
            conn = srv.connect(timeout=30)
            conn.putrequest("DELETE", path + "?" + query, skip_host=True, skip_accept_encoding=True)
            for k, v in h.items():
                conn.putheader(k, v)
            conn.endheaders()
            if delay:
                time.sleep(delay)
            srv.kill()
            conn.close()
            srv.start()
            s3 = srv.client()
            what = "abort round %d (kill %.0f ms after the request)" % (rnd, delay * 1000)
            if ("ab", uid) in mp.upload_ids(s3, b):
                outcomes.append("not aborted")
                eq([(p["PartNumber"], p["Size"]) for p in mp.all_parts(s3, b, "ab", uid)], [(i + 1, len(d)) for i, d in enumerate(old[:4])], what + ": parts of the upload still listed")
                expect_space(srv, obj_space + parts_space, what + ": free bytes with the upload still there")
            else:
                outcomes.append("aborted")
                with client_error("NoSuchUpload", 404):
                    s3.list_parts(Bucket=b, Key="ab", UploadId=uid)
                expect_space(srv, obj_space, what + ": free bytes after the abort took effect")
                uid = None
        print("     abort outcomes: %s" % outcomes, flush=True)


TESTS = [
    test_kill_during_parallel_parts,
    test_kill_during_complete,
    test_acknowledged_operations_durable,
    test_kill_during_replace_and_abort,
]

if __name__ == "__main__":
    harness.main(TESTS, shared_server=False)
