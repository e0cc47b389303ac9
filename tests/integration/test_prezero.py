"""test_prezero.py: the prezeroer (storage/prezero.c) against a real server.

kill -9 while the prezeroer writes zeros into free space and clients PUT
objects: after a restart every acknowledged object reads back whole, no
space leaked, and the prezeroer goes on where it stopped: what it writes in
both lives together never exceeds the volume's free space (written space is
not rezeroed). With prezero_window = off nothing is zeroed.

A large single PUT and a multipart upload on a fresh store, both far past the
written window, are each one span and sent zero-copy: the prezeroer's claims
keep clear of where a large writer grows next (issue 19: they used to land
right at its frontier, the object went on in another extent, and its GET was
streamed).
"""

import concurrent.futures
import fcntl
import os
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, same_bytes  # noqa: E402

MIB = 1 << 20
VOLUME = 512 * MIB
ZEROED = "shardstore_volume_prezeroed_bytes_total"
FREE = "shardstore_storage_free_bytes"
ZC = "shardstore_get_zero_copy_total"
STREAMED = "shardstore_get_streamed_total"


def unwritten_bytes(path):
    """Bytes of the file FIEMAP reports as unwritten extents."""
    total, pos, size = 0, 0, os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        while pos < size:
            n = 256
            buf = bytearray(struct.pack("=QQIIII", pos, size - pos, 0, 0, n, 0) + bytes(56 * n))
            fcntl.ioctl(fd, 0xC020660B, buf)  # FS_IOC_FIEMAP
            mapped = struct.unpack_from("=I", buf, 20)[0]
            if mapped == 0:
                break
            for i in range(mapped):
                logical, _phys, length = struct.unpack_from("=QQQ", buf, 32 + 56 * i)
                flags = struct.unpack_from("=I", buf, 32 + 56 * i + 40)[0]
                if flags & 0x800:  # FIEMAP_EXTENT_UNWRITTEN
                    total += min(logical + length, size) - max(logical, pos)
                pos = max(pos, logical + length)
                if flags & 0x1:  # FIEMAP_EXTENT_LAST
                    pos = size
    finally:
        os.close(fd)
    return total


def settle(srv, name, timeout=60.0):
    """Polls 'name' until it stops changing for a second; returns it."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        got = srv.metric(name)
        if got != last:
            last, since = got, time.monotonic()
        elif time.monotonic() - since >= 1.0:
            return got
        time.sleep(0.1)
    raise harness.Failure("%s still changing after %.0f s (%s)" % (name, timeout, last))


def test_kill_while_zeroing():
    config = "volume_size = 512M\nmax_volumes = 1\nprezero_window = 512M\n"
    with harness.Server(config=config, tag="prezero") as srv:
        s3 = srv.client(max_pool_connections=32)
        s3.create_bucket(Bucket="zero")
        acked = {}
        lock = threading.Lock()
        stop = threading.Event()

        def writer(t):
            i = 0
            while not stop.is_set():
                key = "t%d-%05d" % (t, i)
                body = harness.random_bytes(1 + (i * 7919 + t * 104729) % (256 * 1024), seed=t * 100000 + i)
                try:
                    s3.put_object(Bucket="zero", Key=key, Body=body)
                except Exception:
                    return  # the server was killed under this PUT: not acknowledged
                with lock:
                    acked[key] = body
                i += 1

        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
            futs = [ex.submit(writer, t) for t in range(8)]
            # Kill once the prezeroer is under way and far from done.
            deadline = time.monotonic() + 60
            zeroed = 0
            while time.monotonic() < deadline:
                zeroed = srv.metric(ZEROED)
                if zeroed >= 16 * MIB and len(acked) >= 20:
                    break
                time.sleep(0.01)
            srv.kill()
            stop.set()
            for f in futs:
                f.result()
        print("     killed with %d MiB zeroed and %d objects acknowledged" % (zeroed // MIB, len(acked)), flush=True)
        check(16 * MIB <= zeroed < VOLUME - 64 * MIB, "killed mid-zeroing: %d MiB zeroed" % (zeroed // MIB))
        check(len(acked) > 0, "no PUT was acknowledged")

        vol = os.path.join(srv.data_dir, "volumes", "vol-0000.dat")
        unwritten = unwritten_bytes(vol)
        check(0 < unwritten <= VOLUME - zeroed, "unwritten after the kill: %d MiB" % (unwritten // MIB))
        srv.start()
        s3 = srv.client(max_pool_connections=32)
        for k, v in sorted(acked.items()):
            same_bytes(s3.get_object(Bucket="zero", Key=k)["Body"].read(), v, "%s after kill -9 while zeroing" % k)
        used = sum((len(v) + 4095) // 4096 * 4096 for v in acked.values())
        free = srv.metric(FREE)
        check(free <= VOLUME - used, "free %d > volume - acknowledged objects %d" % (free, VOLUME - used))
        # Done when FIEMAP finds nothing unwritten (a stall of a loaded disk
        # must not end the wait early).
        deadline = time.monotonic() + 180
        while unwritten_bytes(vol) > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        after = settle(srv, ZEROED)
        # The second life zeroes exactly what was still unwritten (all of it
        # free: acknowledged objects are written), not the free space that
        # was written already.
        eq(after, unwritten, "bytes zeroed after the restart vs unwritten at the kill (free: %d)" % free)
        eq(unwritten_bytes(vol), 0, "unwritten bytes once the prezeroer is done")
        for k, v in sorted(acked.items())[:200]:
            same_bytes(s3.get_object(Bucket="zero", Key=k)["Body"].read(), v, "%s after the prezeroer finished" % k)
        # And the store still takes PUTs into the zeroed space.
        s3.put_object(Bucket="zero", Key="last", Body=b"x" * 5000)
        eq(s3.get_object(Bucket="zero", Key="last")["Body"].read(), b"x" * 5000, "PUT after zeroing")


def get_path(srv, path):
    """GETs 'path'; returns (body, 'zero_copy' | 'streamed')."""
    z0, s0 = srv.metric(ZC), srv.metric(STREAMED)
    r = srv.request("GET", path)
    eq(r.status, 200, "GET %s" % path)
    dz, ds = srv.metric(ZC) - z0, srv.metric(STREAMED) - s0
    eq(dz + ds, 1, "one GET counted once")
    return r.body, "zero_copy" if dz else "streamed"


def test_large_objects_one_span():
    config = "volume_size = 1G\nmax_volumes = 1\nprezero_window = 16M\nmin_part_size = 1\ninline_max = 0\n"
    with harness.Server(config=config, tag="prezero-span") as srv:
        # The window is written first, so both objects grow through unwritten
        # space while the prezeroer keeps claiming there.
        settle(srv, ZEROED)
        s3 = srv.client()
        s3.create_bucket(Bucket="span")
        big = harness.random_bytes(192 * MIB, seed=7)
        eq(srv.request("PUT", "/span/single", body=big).status, 200, "192 MiB single PUT")
        parts = [harness.random_bytes(16 * MIB, seed=20 + i) for i in range(8)]
        uid = s3.create_multipart_upload(Bucket="span", Key="mp")["UploadId"]
        etags = [s3.upload_part(Bucket="span", Key="mp", UploadId=uid, PartNumber=i + 1, Body=p)["ETag"]
                 for i, p in enumerate(parts)]
        s3.complete_multipart_upload(Bucket="span", Key="mp", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
        check(srv.metric(ZEROED) > 16 * MIB, "the prezeroer worked beside the writers")
        for key, data in (("single", big), ("mp", b"".join(parts))):
            body, path = get_path(srv, "/span/" + key)
            same_bytes(body, data, "%s read back" % key)
            eq(path, "zero_copy", "GET of the %d MiB object %s sent" % (len(data) // MIB, key))


def test_off():
    with harness.Server(config="volume_size = 256M\nmax_volumes = 1\nprezero_window = off\n", tag="prezero-off") as srv:
        s3 = srv.client()
        s3.create_bucket(Bucket="offb")
        s3.put_object(Bucket="offb", Key="k", Body=b"y" * 10000)
        time.sleep(0.5)
        eq(srv.metric(ZEROED), 0, "bytes zeroed with prezero_window = off")


TESTS = [test_kill_while_zeroing, test_large_objects_one_span, test_off]

if __name__ == "__main__":
    harness.main(TESTS, shared_server=False)
