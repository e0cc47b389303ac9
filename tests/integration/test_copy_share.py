"""test_copy_share.py: CopyObject shares the source's extents.

A copy writes no object bytes: free space does not move when an 8 MiB
object is copied, the copies read back byte-exact, and deleting the copies
and the source in any order returns free space to exactly where it was —
also across restarts and a kill -9 (the startup scan must count each
shared extent once, or it would refuse the overlap or leak space).
"""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402
import mp_util as mu  # noqa: E402

MIB = 1024 * 1024
SHARED = "shardstore_index_shared_extents"


def copy(s3, b, src, dst, **kw):
    return s3.copy_object(Bucket=b, Key=dst, CopySource={"Bucket": b, "Key": src}, **kw)


def read(s3, b, k):
    return s3.get_object(Bucket=b, Key=k)["Body"].read()


def test_copy_moves_no_bytes_and_frees_exactly(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="cs-one")
    s3.create_bucket(Bucket="cs-two")
    start = mu.free_settled(srv)
    data = h.random_bytes(8 * MIB + 12345, seed=7)
    etag = s3.put_object(Bucket="cs-one", Key="src", Body=data)["ETag"]
    after_put = mu.free_settled(srv)
    h.check(after_put < start, "the PUT took space")
    r = copy(s3, "cs-one", "src", "c1")
    h.eq(r["CopyObjectResult"]["ETag"], etag, "copy ETag")
    s3.copy_object(Bucket="cs-two", Key="c2", CopySource={"Bucket": "cs-one", "Key": "src"},
                   MetadataDirective="REPLACE", ContentType="text/x-copy", Metadata={"a": "b"})
    copy(s3, "cs-one", "c1", "c3")
    h.eq(mu.free_settled(srv), after_put, "free bytes after three copies")
    h.check(srv.metric(SHARED) > 0, "shared extents reported")
    for bk, k in (("cs-one", "c1"), ("cs-two", "c2"), ("cs-one", "c3")):
        h.same_bytes(read(s3, bk, k), data, "%s/%s" % (bk, k))
    hd = s3.head_object(Bucket="cs-two", Key="c2")
    h.eq(hd["ContentType"], "text/x-copy", "REPLACE content type")
    h.eq(hd["Metadata"], {"a": "b"}, "REPLACE metadata")

    # The source goes first: the copies keep the bytes.
    s3.delete_object(Bucket="cs-one", Key="src")
    h.eq(mu.free_settled(srv), after_put, "free bytes after deleting the source")
    h.same_bytes(read(s3, "cs-one", "c3"), data, "c3 after the source is gone")

    # Restart: the startup scan counts each shared extent once.
    srv.restart()
    s3 = srv.client()
    h.eq(mu.free_settled(srv), after_put, "free bytes after restart")
    h.same_bytes(read(s3, "cs-two", "c2"), data, "c2 after restart")

    # Overwriting a copy drops only its hold.
    s3.put_object(Bucket="cs-one", Key="c1", Body=b"small")
    h.same_bytes(read(s3, "cs-one", "c3"), data, "c3 after c1 was overwritten")
    s3.delete_object(Bucket="cs-one", Key="c3")
    h.same_bytes(read(s3, "cs-two", "c2"), data, "c2, the last holder")
    h.eq(srv.metric(SHARED), 0, "no extent is shared by one holder")
    s3.delete_object(Bucket="cs-two", Key="c2")
    s3.delete_object(Bucket="cs-one", Key="c1")
    h.eq(mu.free_settled(srv), start, "free bytes back to the start")


def test_copy_onto_itself_with_replace(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="self")
    start = mu.free_settled(srv)
    data = h.random_bytes(3 * MIB, seed=8)
    s3.put_object(Bucket="self", Key="k", Body=data, ContentType="a/b")
    used = mu.free_settled(srv)
    for i in range(3):
        copy(s3, "self", "k", "k", MetadataDirective="REPLACE", ContentType="c/%d" % i)
    h.eq(mu.free_settled(srv), used, "free bytes after self-copies")
    h.eq(srv.metric(SHARED), 0, "a self-copy leaves nothing shared")
    h.same_bytes(read(s3, "self", "k"), data, "self-copied bytes")
    h.eq(s3.head_object(Bucket="self", Key="k")["ContentType"], "c/2", "content type")
    s3.delete_object(Bucket="self", Key="k")
    h.eq(mu.free_settled(srv), start, "free bytes back to the start")


def test_copy_of_multipart_keeps_parts(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="mpc")
    start = mu.free_settled(srv)
    parts = [h.random_bytes(5 * MIB, seed=20), h.random_bytes(5 * MIB, seed=21), b"tail" * 1000]
    uid = s3.create_multipart_upload(Bucket="mpc", Key="mp")["UploadId"]
    done = []
    for i, p in enumerate(parts):
        e = s3.upload_part(Bucket="mpc", Key="mp", UploadId=uid, PartNumber=i + 1, Body=p)["ETag"]
        done.append({"PartNumber": i + 1, "ETag": e})
    etag = s3.complete_multipart_upload(Bucket="mpc", Key="mp", UploadId=uid,
                                        MultipartUpload={"Parts": done})["ETag"]
    used = mu.free_settled(srv)
    r = copy(s3, "mpc", "mp", "mp-copy")
    h.eq(r["CopyObjectResult"]["ETag"], etag, "multipart copy keeps the -N ETag")
    h.eq(mu.free_settled(srv), used, "no bytes copied")
    g = s3.get_object(Bucket="mpc", Key="mp-copy", PartNumber=2)
    h.same_bytes(g["Body"].read(), parts[1], "part 2 of the copy")
    h.eq(g["PartsCount"], 3, "parts count of the copy")
    rng = s3.get_object(Bucket="mpc", Key="mp-copy", Range="bytes=%d-%d" % (5 * MIB - 10, 5 * MIB + 9))
    h.same_bytes(rng["Body"].read(), (parts[0] + parts[1])[5 * MIB - 10:5 * MIB + 10], "range across parts")
    s3.delete_object(Bucket="mpc", Key="mp")
    s3.delete_object(Bucket="mpc", Key="mp-copy")
    h.eq(mu.free_settled(srv), start, "free bytes back to the start")


def test_copy_races_overwrites_of_its_source(srv):
    """Copies of a key that another thread keeps overwriting: every copy is
    exactly one of the versions, and when all is deleted no space leaks."""
    s3 = srv.client()
    s3.create_bucket(Bucket="race")
    start = mu.free_settled(srv)
    versions = [h.random_bytes(1 * MIB + i, seed=100 + i) for i in range(4)]
    s3.put_object(Bucket="race", Key="src", Body=versions[0])
    stop = threading.Event()
    errors = []

    def writer():
        w = srv.client()
        i = 0
        while not stop.is_set():
            i += 1
            try:
                w.put_object(Bucket="race", Key="src", Body=versions[i % 4])
            except Exception as e:  # noqa: BLE001
                errors.append(e)
                return

    t = threading.Thread(target=writer)
    t.start()
    try:
        for n in range(40):
            copy(s3, "race", "src", "dst%d" % n)
    finally:
        stop.set()
        t.join()
    h.check(not errors, "writer errors: %r" % errors[:1])
    for n in range(40):
        got = read(s3, "race", "dst%d" % n)
        h.check(got in versions, "dst%d is one whole version (%d bytes)" % (n, len(got)))
        s3.delete_object(Bucket="race", Key="dst%d" % n)
    s3.delete_object(Bucket="race", Key="src")
    h.eq(srv.metric(SHARED), 0, "nothing shared at the end")
    h.eq(mu.free_settled(srv), start, "free bytes back to the start")


def test_kill_after_copies(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="kill-copy")
    start = mu.free_settled(srv)
    data = h.random_bytes(4 * MIB, seed=9)
    s3.put_object(Bucket="kill-copy", Key="src", Body=data)
    for i in range(5):
        copy(s3, "kill-copy", "src", "c%d" % i)
    srv.kill()
    srv.start()
    s3 = srv.client()
    for i in range(5):
        h.same_bytes(read(s3, "kill-copy", "c%d" % i), data, "c%d after kill -9" % i)
    for k in ["src"] + ["c%d" % i for i in range(5)]:
        s3.delete_object(Bucket="kill-copy", Key=k)
    h.eq(mu.free_settled(srv), start, "free bytes back to the start after kill -9")


TESTS = [
    test_copy_moves_no_bytes_and_frees_exactly,
    test_copy_onto_itself_with_replace,
    test_copy_of_multipart_keeps_parts,
    test_copy_races_overwrites_of_its_source,
    test_kill_after_copies,
]

if __name__ == "__main__":
    h.main(TESTS, config="volume_size = 1G\nmax_volumes = 1\n")
