"""test_tiers.py: storage classes and the local cold tier.

- x-amz-storage-class on PUT, CreateMultipartUpload and CopyObject (COLD,
  STANDARD_IA and GLACIER_IR go to the cold tier; an unknown class is
  InvalidStorageClass); StorageClass in HEAD (absent for STANDARD), GET,
  ListObjects v1/v2, ListObjectVersions and ListParts.
- Every read kind of a cold object byte for byte: GET, Range across and
  inside the compressed blocks, partNumber, checksums, metadata and tags,
  the same ETag; copy and overwrite; delete gives the cold space back.
- Lifecycle Transition (Days, lifecycle_day_seconds = 1) to COLD and back
  to nothing else; tier counters on /_/metrics.
- kill -9 at three points of a move (test-only test_tier_crash_at: half
  of the tier copy written, copy durable but not published, published but
  old extents not yet reused): after a restart every object reads back
  byte for byte and, once all are deleted, neither tier holds a byte.
- Where features meet: an encrypted object moves to COLD, a batch GET
  refuses a cold entry.
- Versioned buckets: Transition moves the current version and
  NoncurrentVersionTransition the noncurrent ones (beyond
  NewerNoncurrentVersions); each reads back by versionId byte for byte,
  ListObjectVersions names each version's class, a delete by versionId
  gives the cold space back.
- A full cold tier: moves fail cleanly (nothing visible changes), and
  succeed on a later pass once there is room.
- Remote reads never wait on the event thread: with the remote stopped
  (SIGSTOP) a GET of a remote object stalls alone while a hot GET on the
  same single event thread answers; it completes byte for byte once the
  remote runs again, and ends in error (never a short body claimed
  complete) when the remote dies meanwhile.
"""
import base64
import hashlib
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

MIB = 1 << 20
NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
BASE = "volume_size = 64M\nmax_volumes = 2\nlifecycle_day_seconds = 1\nlifecycle_interval_s = 0\n"


def text_like(n, seed=0):
    """Compressible bytes: words from a small vocabulary."""
    words = [b"tensor", b"layer", b"weight", b"bias", b"epoch", b"step", b"loss", b"shard",
             b"grad", b"norm", b"checkpoint", b"%d" % seed]
    out = bytearray()
    i = seed
    while len(out) < n:
        out += words[(i * 7 + len(out)) % len(words)] + b" "
        i += 1
    return bytes(out[:n])


def mixed(n, seed=0):
    """Half random (incompressible blocks stored raw), half text-like."""
    half = n // 2
    return h.random_bytes(half, seed=seed) + text_like(n - half, seed)


def run_pass(srv, bucket=None):
    r = srv.request("POST", "/_/lifecycle/run", query="bucket=" + bucket if bucket else "",
                    timeout=120)
    h.eq(r.status, 200, "lifecycle run (%r)" % r.body[:300])
    return json.loads(r.body)


def admin(srv, *args, json_out=True):
    """`shardstore admin ...` against 'srv' as root."""
    env = dict(os.environ, SHARDSTORE_ACCESS_KEY=srv.access_key,
               SHARDSTORE_SECRET_KEY=srv.secret_key)
    argv = [srv.binary, "admin", "--endpoint", srv.endpoint] + (["--json"] if json_out else [])
    return h.run_cmd(argv + list(args), timeout=120, env=env).stdout.decode()


def labelled(srv, name, label):
    r = srv.request("GET", "/_/metrics")
    for line in r.body.decode().splitlines():
        if line.startswith(name + "{") and label in line:
            return float(line.split()[-1])
    raise h.Failure("/_/metrics has no %s{%s}" % (name, label))


def cold_used(srv):
    return labelled(srv, "shardstore_tier_used_bytes", 'tier="COLD"')


def settles(fn, want, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = fn()
        if got == want:
            return
        time.sleep(0.1)
    raise h.Failure("%s: %s, expected %s" % (what, got, want))


def put_lifecycle(srv, bucket, rules_xml):
    body = ("<LifecycleConfiguration %s>%s</LifecycleConfiguration>" % (NS, rules_xml)).encode()
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = srv.request("PUT", "/" + bucket, query="lifecycle", headers={"Content-MD5": md5}, body=body)
    h.eq(r.status, 200, "put lifecycle (%r)" % r.body[:300])


TRANSITION_ALL = ("<Rule><ID>t</ID><Status>Enabled</Status><Filter></Filter><Transition>"
                  "<Days>1</Days><StorageClass>COLD</StorageClass></Transition></Rule>")


def check_reads(s3, bucket, key, body, cls, what, etag=None):
    """Every read kind of one object against 'body' (and 'etag', by
    default the MD5 of a single PUT)."""
    hd = s3.head_object(Bucket=bucket, Key=key)
    h.eq(hd.get("StorageClass"), cls if cls != "STANDARD" else None, "%s: HEAD storage class" % what)
    h.eq(hd["ETag"], etag or '"%s"' % h.md5_hex(body), "%s: ETag" % what)
    got = s3.get_object(Bucket=bucket, Key=key)
    h.same_bytes(got["Body"].read(), body, "%s: GET" % what)
    n = len(body)
    ranges = [(0, 0), (0, 65535), (n // 3, n // 3 + 65535), (262143, 262144 + 10),
              (n - 1, n - 1), (max(0, n - 70000), n - 1)]
    for a, b in ranges:
        if n == 0 or a >= n:
            continue
        b = min(b, n - 1)
        g = s3.get_object(Bucket=bucket, Key=key, Range="bytes=%d-%d" % (a, b))
        h.same_bytes(g["Body"].read(), body[a:b + 1], "%s: Range %d-%d" % (what, a, b))


def test_storage_class_put_head_list(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="sc-b")
    bodies = {
        "cold/empty": (b"", "COLD"),
        "cold/small": (b"hello cold", "COLD"),
        "cold/text": (text_like(700 * 1024), "COLD"),
        "cold/mixed": (mixed(3 * MIB + 12345, 3), "COLD"),
        "ia/obj": (mixed(600 * 1024, 4), "STANDARD_IA"),
        "gir/obj": (text_like(1000, 5), "GLACIER_IR"),
        "std/obj": (b"standard bytes", "STANDARD"),
    }
    for k, (body, cls) in bodies.items():
        r = s3.put_object(Bucket="sc-b", Key=k, Body=body, StorageClass=cls,
                          Metadata={"owner": "me"}, Tagging="t=1&u=2",
                          ChecksumAlgorithm="CRC32")
        if cls != "STANDARD":
            h.eq(r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-storage-class"), cls,
                 "PUT answers the class of %s" % k)
    for k, (body, cls) in bodies.items():
        check_reads(s3, "sc-b", k, body, cls, k)
        hd = s3.head_object(Bucket="sc-b", Key=k, ChecksumMode="ENABLED")
        h.eq(hd["Metadata"], {"owner": "me"}, "%s: metadata" % k)
        h.eq(hd["ChecksumCRC32"], h.checksum_b64("crc32", body), "%s: checksum" % k)
        tags = s3.get_object_tagging(Bucket="sc-b", Key=k)["TagSet"]
        h.eq(sorted((t["Key"], t["Value"]) for t in tags), [("t", "1"), ("u", "2")], "%s tags" % k)
    with h.client_error("InvalidStorageClass", 400):
        s3.put_object(Bucket="sc-b", Key="bad", Body=b"x", StorageClass="NOPE")
    with h.client_error("NoSuchKey", 404):
        s3.get_object(Bucket="sc-b", Key="bad")
    want = {k: cls for k, (_, cls) in bodies.items()}
    got = {o["Key"]: o["StorageClass"] for o in s3.list_objects_v2(Bucket="sc-b")["Contents"]}
    h.eq(got, want, "ListObjectsV2 storage classes")
    got = {o["Key"]: o["StorageClass"] for o in s3.list_objects(Bucket="sc-b")["Contents"]}
    h.eq(got, want, "ListObjects storage classes")
    got = {o["Key"]: o["StorageClass"] for o in s3.list_object_versions(Bucket="sc-b")["Versions"]}
    h.eq(got, want, "ListObjectVersions storage classes")
    used = cold_used(srv)
    h.check(used > 0, "the cold tier holds the cold objects (%s bytes)" % used)


def test_multipart_and_copy(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="mp-b")
    up = s3.create_multipart_upload(Bucket="mp-b", Key="big", StorageClass="COLD")
    parts_body = [mixed(5 * MIB, 10), text_like(3 * MIB + 7, 11)]
    parts = []
    for i, pb in enumerate(parts_body, 1):
        r = s3.upload_part(Bucket="mp-b", Key="big", UploadId=up["UploadId"], PartNumber=i, Body=pb)
        parts.append({"PartNumber": i, "ETag": r["ETag"]})
    lp = s3.list_parts(Bucket="mp-b", Key="big", UploadId=up["UploadId"])
    h.eq(lp["StorageClass"], "COLD", "ListParts storage class")
    done = s3.complete_multipart_upload(Bucket="mp-b", Key="big", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": parts})
    body = b"".join(parts_body)
    hd = s3.head_object(Bucket="mp-b", Key="big")
    h.eq(hd.get("StorageClass"), "COLD", "completed upload is cold")
    h.eq(hd["ETag"], done["ETag"], "multipart ETag kept")
    h.same_bytes(s3.get_object(Bucket="mp-b", Key="big")["Body"].read(), body, "multipart GET")
    for n, pb in enumerate(parts_body, 1):
        g = s3.get_object(Bucket="mp-b", Key="big", PartNumber=n)
        h.same_bytes(g["Body"].read(), pb, "partNumber=%d" % n)
    # Copies: S3 makes a STANDARD copy unless asked otherwise.
    s3.copy_object(Bucket="mp-b", Key="copy-std", CopySource={"Bucket": "mp-b", "Key": "big"})
    check_reads(s3, "mp-b", "copy-std", body, "STANDARD", "copy to STANDARD", done["ETag"])
    s3.copy_object(Bucket="mp-b", Key="copy-cold", CopySource={"Bucket": "mp-b", "Key": "big"},
                   StorageClass="GLACIER_IR")
    check_reads(s3, "mp-b", "copy-cold", body, "GLACIER_IR", "copy to GLACIER_IR", done["ETag"])
    # A copy onto itself changing only the class is allowed, as in S3.
    s3.copy_object(Bucket="mp-b", Key="copy-std", CopySource={"Bucket": "mp-b", "Key": "copy-std"},
                   StorageClass="COLD")
    check_reads(s3, "mp-b", "copy-std", body, "COLD", "copy onto itself to COLD", done["ETag"])
    # UploadPartCopy from a cold source.
    up2 = s3.create_multipart_upload(Bucket="mp-b", Key="pc")
    r = s3.upload_part_copy(Bucket="mp-b", Key="pc", UploadId=up2["UploadId"], PartNumber=1,
                            CopySource={"Bucket": "mp-b", "Key": "big"},
                            CopySourceRange="bytes=1000-2000999")
    s3.complete_multipart_upload(Bucket="mp-b", Key="pc", UploadId=up2["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1,
                                                             "ETag": r["CopyPartResult"]["ETag"]}]})
    h.same_bytes(s3.get_object(Bucket="mp-b", Key="pc")["Body"].read(), body[1000:2001000],
                 "UploadPartCopy from a cold source")
    # Overwrite and delete give the cold space back.
    for k in ("big", "copy-std", "copy-cold", "pc"):
        s3.delete_object(Bucket="mp-b", Key=k)


def test_lifecycle_transition_and_space(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="lt-b")
    # The other tests' objects are gone or stay; measure from here.
    base_cold = cold_used(srv)
    free0 = srv.metric("shardstore_storage_free_bytes")
    bodies = {"k%d" % i: mixed(300 * 1024 * (i + 1), 20 + i) for i in range(4)}
    bodies["tiny"] = b"t"
    for k, b in bodies.items():
        s3.put_object(Bucket="lt-b", Key=k, Body=b)
    put_lifecycle(srv, "lt-b", TRANSITION_ALL)
    moved0 = srv.metric("shardstore_tier_objects_moved_total")
    time.sleep(2.1)  # Days 1 = one second here, rounded up to a day boundary
    st = json.loads(admin(srv, "lifecycle", "run", "lt-b"))
    h.eq(st["objects_transitioned"], len(bodies), "objects transitioned (%r)" % st)
    h.eq(st["bytes_transitioned"], sum(len(b) for b in bodies.values()), "bytes transitioned")
    h.eq(srv.metric("shardstore_tier_objects_moved_total") - moved0, len(bodies), "tier metric")
    h.check(srv.metric("shardstore_lifecycle_objects_transitioned_total") >= len(bodies),
            "lifecycle transition metric")
    for k, b in bodies.items():
        check_reads(s3, "lt-b", k, b, "COLD", "transitioned " + k)
    text = admin(srv, "lifecycle", "status", json_out=False)
    status = dict(line.split("=", 1) for line in text.splitlines())
    h.check(int(status["objects_transitioned"]) >= len(bodies), "admin status: %r" % status)
    h.check(int(status["tier_bytes_moved"]) >= st["bytes_transitioned"], "admin status tier bytes")
    h.check(int(status["cold_used_bytes"]) > base_cold, "admin status cold bytes")
    # Hot space came back; a second pass moves nothing more.
    settles(lambda: srv.metric("shardstore_storage_free_bytes"), free0, "hot free after moves")
    st = run_pass(srv, "lt-b")
    h.eq(st["objects_transitioned"], 0, "second pass moves nothing")
    # Overwrite one: the new version is STANDARD, its cold blob is freed.
    s3.put_object(Bucket="lt-b", Key="k0", Body=b"new")
    check_reads(s3, "lt-b", "k0", b"new", "STANDARD", "overwritten")
    for k in bodies:
        s3.delete_object(Bucket="lt-b", Key=k)
    settles(lambda: cold_used(srv), base_cold, "cold bytes after deleting every moved object")
    s3.delete_bucket_lifecycle(Bucket="lt-b")


def test_kill9_during_moves(_shared):
    for point in (1, 2, 3):
        cfg = BASE + "cold_volume_size = 64M\ncold_max_volumes = 1\n"
        srv = h.Server(config=cfg + "test_tier_crash_at = %d\n" % point, tag="tier-kill%d" % point)
        try:
            srv.start()
            s3 = srv.client()
            s3.create_bucket(Bucket="kill")
            free0 = srv.metric("shardstore_storage_free_bytes")
            cold0 = cold_used(srv)
            bodies = {"a": mixed(2 * MIB + 5, 30), "b": text_like(900 * 1024, 31)}
            for k, b in bodies.items():
                s3.put_object(Bucket="kill", Key=k, Body=b)
            put_lifecycle(srv, "kill", TRANSITION_ALL)
            time.sleep(2.1)
            try:
                srv.request("POST", "/_/lifecycle/run", query="bucket=kill", timeout=60)
            except (OSError, h.http.client.HTTPException):
                pass
            settles(lambda: srv.proc.poll() is not None, True, "the crash point %d fired" % point)
            srv.kill()
            with open(srv.config_path, "w") as f:
                f.write(cfg)
            srv.start()
            s3 = srv.client()
            for k, b in bodies.items():
                got = s3.get_object(Bucket="kill", Key=k)["Body"].read()
                h.same_bytes(got, b, "point %d: %s after restart" % (point, k))
            # The next pass finishes the job.
            run_pass(srv, "kill")
            for k, b in bodies.items():
                check_reads(s3, "kill", k, b, "COLD", "point %d: %s after the next pass" % (point, k))
            for k in bodies:
                s3.delete_object(Bucket="kill", Key=k)
            settles(lambda: srv.metric("shardstore_storage_free_bytes"), free0,
                    "point %d: hot free bytes (nothing leaked)" % point)
            settles(lambda: cold_used(srv), cold0, "point %d: cold bytes (nothing leaked)" % point)
            problems = srv.stop()
            if problems:
                raise h.Failure("\n".join(problems))
        finally:
            srv.kill()
            srv.cleanup()


def test_full_cold_tier(_shared):
    cfg = BASE + "cold_volume_size = 8M\ncold_max_volumes = 1\n"
    srv = h.Server(config=cfg, tag="tier-full")
    try:
        srv.start()
        # The cold volume is sparse: an unused tier takes no disk (the hot
        # volume is allocated up front).
        cold = os.stat(os.path.join(srv.data_dir, "cold", "vol-0000.dat"))
        hot = os.stat(os.path.join(srv.data_dir, "volumes", "vol-0000.dat"))
        h.eq(cold.st_size, 8 * MIB, "cold volume size")
        h.check(cold.st_blocks * 512 < MIB, "unused cold volume allocated %d bytes" % (cold.st_blocks * 512))
        h.check(hot.st_blocks * 512 >= 64 * MIB, "hot volume preallocated")
        s3 = srv.client()
        s3.create_bucket(Bucket="full")
        # Random bytes do not compress: 3 x 3 MiB cannot fit in 8 MiB.
        bodies = {"r%d" % i: h.random_bytes(3 * MIB, seed=40 + i) for i in range(3)}
        for k, b in bodies.items():
            s3.put_object(Bucket="full", Key=k, Body=b)
        put_lifecycle(srv, "full", TRANSITION_ALL)
        time.sleep(2.1)
        st = run_pass(srv, "full")
        h.eq(st["objects_transitioned"], 2, "two fit (%r)" % st)
        h.eq(st["transition_errors"], 1, "the third fails cleanly")
        classes = {o["Key"]: o["StorageClass"] for o in s3.list_objects_v2(Bucket="full")["Contents"]}
        h.eq(sorted(classes.values()), ["COLD", "COLD", "STANDARD"], "classes after a full tier")
        for k, b in bodies.items():
            check_reads(s3, "full", k, b, classes[k], "full tier: " + k)
        # Room again: the next pass moves the last one.
        s3.delete_object(Bucket="full", Key=[k for k, c in classes.items() if c == "COLD"][0])
        time.sleep(0.2)
        st = run_pass(srv, "full")
        h.eq(st["objects_transitioned"], 1, "retried once there is room (%r)" % st)
        problems = srv.stop()
        if problems:
            raise h.Failure("\n".join(problems))
    finally:
        srv.kill()
        srv.cleanup()


def test_cold_corruption_detected(_shared):
    """A flipped byte in a cold blob: scrub reports it (storage's sums of
    the stored bytes), a Range over its block fails, other blocks read."""
    srv = h.Server(config=BASE, tag="tier-scrub",
                   allowed_errors=[r"corruption detected .*block checksum mismatch",
                                   r"cold tier: block \d+ fails its checksum"])
    try:
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="scrub-b")
        data = h.random_bytes(3 * MIB + 17, seed=60)  # raw blocks: the flip lands in one
        s3.put_object(Bucket="scrub-b", Key="victim", Body=data, StorageClass="COLD")
        r = srv.request("POST", "/_/scrub")
        rep = json.loads(r.body)
        h.eq((rep["objects"], rep["bad_blocks"]), (1, 0), "clean cold object scrubs clean")
        vol = os.path.join(srv.data_dir, "cold", "vol-0000.dat")
        off = MIB + 12345
        with open(vol, "r+b") as f:
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ 0x5A]))
            f.flush()
            os.fsync(f.fileno())
        rep = json.loads(srv.request("POST", "/_/scrub").body)
        h.eq(rep["bad_blocks"], 1, "scrub finds the flipped byte in the cold tier")
        h.eq([o["key"] for o in rep["bad_objects"]], ["victim"], "bad objects")
        g = s3.get_object(Bucket="scrub-b", Key="victim", Range="bytes=0-65535")
        h.same_bytes(g["Body"].read(), data[:65536], "a block before the flip reads")
        try:
            r = srv.request("GET", "/scrub-b/victim",
                            headers={"Range": "bytes=%d-%d" % (off - 10, off + 10)})
            h.check(r.status != 206 or r.body != data[off - 10:off + 11],
                    "the damaged block is never served as good data")
        except (OSError, h.http.client.HTTPException):
            pass  # the damaged block may end the response early: the point
    finally:
        problems = srv.stop()
        srv.cleanup()
    h.check(not problems, "teardown: %s" % problems)


def remote_config(remote, extra=""):
    return (BASE + "remote_tier_class = WARM\nremote_tier_endpoint = %s\n"
            "remote_tier_bucket = tier-remote\nremote_tier_prefix = t/\n"
            "remote_tier_access_key = %s\nremote_tier_secret_key = %s\n%s"
            % (remote.endpoint, remote.access_key, remote.secret_key, extra))


def remote_keys(remote):
    out = remote.client().list_objects_v2(Bucket="tier-remote", Prefix="t/")
    return sorted(o["Key"] for o in out.get("Contents", []))


TO_WARM = ("<Rule><ID>w</ID><Status>Enabled</Status><Filter><Prefix>w/</Prefix></Filter>"
           "<Transition><Days>1</Days><StorageClass>WARM</StorageClass></Transition></Rule>")


def test_remote_tier(_shared):
    """A second shardstore is the remote tier: transitions, every read,
    delete frees the remote object, a crash between the remote copy and
    the commit leaves an orphan the next pass deletes, a remote killed
    during a pass loses nothing and the moves succeed once it is back."""
    remote = h.Server(tag="tier-remote")
    srv = None
    try:
        remote.start()
        remote.client().create_bucket(Bucket="tier-remote")
        srv = h.Server(config=remote_config(remote), tag="tier-main")
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="rt-b")
        bodies = {"w/a": mixed(3 * MIB + 3, 50), "w/b": text_like(400 * 1024, 51), "w/empty": b"",
                  "keep": b"stays hot"}
        for k, b in bodies.items():
            s3.put_object(Bucket="rt-b", Key=k, Body=b, Metadata={"m": k})
        put_lifecycle(srv, "rt-b", TO_WARM)
        time.sleep(2.1)
        st = run_pass(srv, "rt-b")
        h.eq(st["objects_transitioned"], 3, "moved to the remote tier (%r)" % st)
        for k, b in bodies.items():
            check_reads(s3, "rt-b", k, b, "WARM" if k.startswith("w/") else "STANDARD", "remote " + k)
            h.eq(s3.head_object(Bucket="rt-b", Key=k)["Metadata"], {"m": k}, "metadata of " + k)
        h.eq(len(remote_keys(remote)), 3, "one remote object per moved object")
        # A PUT straight into the remote class, and a copy out of it.
        r = srv.request("PUT", "/rt-b/direct", headers={"x-amz-storage-class": "WARM"}, body=b"direct")
        h.eq(r.status, 200, "PUT with x-amz-storage-class WARM")
        check_reads(s3, "rt-b", "direct", b"direct", "WARM", "direct remote PUT")
        s3.copy_object(Bucket="rt-b", Key="w/copy", CopySource={"Bucket": "rt-b", "Key": "w/a"})
        check_reads(s3, "rt-b", "w/copy", bodies["w/a"], "STANDARD", "copy out of the remote tier")
        # Delete frees the remote object (in the background).
        s3.delete_object(Bucket="rt-b", Key="w/b")
        s3.delete_object(Bucket="rt-b", Key="direct")
        settles(lambda: len(remote_keys(remote)), 2, "remote objects after two deletes")

        # Crash after the remote copy, before the commit: an orphan.
        s3.put_object(Bucket="rt-b", Key="w/c", Body=text_like(100 * 1024, 52))
        srv.stop()
        with open(srv.config_path, "w") as f:
            f.write(remote_config(remote, "test_tier_crash_at = 2\n"))
        srv.start()
        time.sleep(2.1)
        try:
            srv.request("POST", "/_/lifecycle/run", query="bucket=rt-b", timeout=60)
        except (OSError, h.http.client.HTTPException):
            pass
        settles(lambda: srv.proc.poll() is not None, True, "the crash point fired")
        srv.kill()
        orphans = len(remote_keys(remote)) - 2
        h.check(orphans >= 1, "unpublished copies are on the remote (%d)" % orphans)
        with open(srv.config_path, "w") as f:
            f.write(remote_config(remote))
        srv.start()
        s3 = srv.client()
        check_reads(s3, "rt-b", "w/c", text_like(100 * 1024, 52), "STANDARD", "w/c after the crash")
        st = run_pass(srv, "rt-b")  # sweeps the orphan, then moves w/c for real
        h.eq(st["objects_transitioned"], 2, "w/c and w/copy moved after the crash (%r)" % st)
        check_reads(s3, "rt-b", "w/c", text_like(100 * 1024, 52), "WARM", "w/c moved")
        h.eq(len(remote_keys(remote)), 4, "no orphan left: w/a, w/empty, w/c, w/copy")

        # The remote goes away during a pass: nothing is lost.
        s3.put_object(Bucket="rt-b", Key="w/late", Body=mixed(8 * MIB, 53))
        time.sleep(2.1)
        remote.kill()
        st = run_pass(srv, "rt-b")
        h.check(st["transition_errors"] >= 1, "the move to a dead remote failed (%r)" % st)
        check_reads(s3, "rt-b", "w/late", mixed(8 * MIB, 53), "STANDARD", "w/late with the remote down")
        # Back on another port: the server follows the configuration.
        remote.start()
        srv.stop()
        with open(srv.config_path, "w") as f:
            f.write(remote_config(remote))
        srv.start()
        s3 = srv.client()
        for k in ("w/a", "w/empty"):
            check_reads(s3, "rt-b", k, bodies[k], "WARM", k + " after the remote came back")
        st = run_pass(srv, "rt-b")
        h.eq(st["objects_transitioned"], 1, "retried once the remote is back (%r)" % st)
        check_reads(s3, "rt-b", "w/late", mixed(8 * MIB, 53), "WARM", "w/late moved")
        problems = srv.stop()
        if problems:
            raise h.Failure("\n".join(problems))
    finally:
        if srv:
            srv.kill()
            srv.cleanup()
        remote.kill()
        remote.cleanup()


def get_in_thread(srv, path, out):
    """GET 'path' on a thread; 'out' gets the status and body, or the
    exception, and 'done' once it returned."""
    def run():
        try:
            r = srv.request("GET", path, timeout=60)
            out["status"], out["body"] = r.status, r.body
        except (OSError, h.http.client.HTTPException) as e:
            out["error"] = e
        out["done"] = time.monotonic()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_remote_stall_blocks_nothing(_shared):
    """Remote reads run on the workers: the remote stopped, a GET of a
    remote object waits alone while a hot GET on the same (single) event
    thread answers; it completes byte for byte once the remote runs again,
    and ends in error when the remote dies while it waits. Every read kind
    of a remote object (partNumber too) byte for byte."""
    remote = h.Server(tag="tier-remote-stall")
    srv = None
    try:
        remote.start()
        remote.client().create_bucket(Bucket="tier-remote")
        srv = h.Server(config=remote_config(remote, "http_threads = 1\n"), tag="tier-stall")
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="stall")
        far = mixed(3 * MIB + 5, 60)
        s3.put_object(Bucket="stall", Key="far", Body=far, StorageClass="WARM")
        hot = text_like(200 * 1024, 61)
        s3.put_object(Bucket="stall", Key="hot", Body=hot)
        check_reads(s3, "stall", "far", far, "WARM", "remote object")
        up = s3.create_multipart_upload(Bucket="stall", Key="mp", StorageClass="WARM")
        parts_body = [mixed(5 * MIB, 62), text_like(2 * MIB + 3, 63)]
        parts = []
        for i, pb in enumerate(parts_body, 1):
            r = s3.upload_part(Bucket="stall", Key="mp", UploadId=up["UploadId"], PartNumber=i, Body=pb)
            parts.append({"PartNumber": i, "ETag": r["ETag"]})
        done = s3.complete_multipart_upload(Bucket="stall", Key="mp", UploadId=up["UploadId"],
                                            MultipartUpload={"Parts": parts})
        check_reads(s3, "stall", "mp", b"".join(parts_body), "WARM", "remote multipart", done["ETag"])
        for n, pb in enumerate(parts_body, 1):
            g = s3.get_object(Bucket="stall", Key="mp", PartNumber=n)
            h.same_bytes(g["Body"].read(), pb, "remote partNumber=%d" % n)

        # The remote stops answering: its GET waits, the hot one does not.
        os.kill(remote.proc.pid, signal.SIGSTOP)
        stalled = {}
        try:
            t = get_in_thread(srv, "/stall/far", stalled)
            time.sleep(0.5)
            try:
                r = srv.request("GET", "/stall/hot", timeout=8)
                hot_answer = (r.status, r.body)
            except (OSError, h.http.client.HTTPException) as e:
                hot_answer = e
            answered_while_stalled = "done" not in stalled
        finally:
            os.kill(remote.proc.pid, signal.SIGCONT)
        t.join(60)
        h.check(isinstance(hot_answer, tuple), "hot GET during the remote stall: %r" % (hot_answer,))
        h.eq(hot_answer[0], 200, "hot GET status during the remote stall")
        h.same_bytes(hot_answer[1], hot, "hot GET during the remote stall")
        h.check(answered_while_stalled, "the hot GET answered while the remote GET waited")
        h.check("error" not in stalled, "stalled GET after the remote resumed: %r" % stalled.get("error"))
        h.eq(stalled.get("status"), 200, "stalled GET status")
        h.same_bytes(stalled.get("body"), far, "stalled GET once the remote runs again")

        # The remote dies while a GET waits on it: the GET ends in error.
        os.kill(remote.proc.pid, signal.SIGSTOP)
        died = {}
        t = get_in_thread(srv, "/stall/far", died)
        time.sleep(0.5)
        remote.kill()
        t.join(60)
        h.check("done" in died, "the GET from a dead remote ended")
        if "error" not in died:
            h.check(died["status"] >= 500, "a dead remote's GET: %r" % died["status"])
        r = srv.request("GET", "/stall/hot", timeout=8)
        h.same_bytes(r.body, hot, "hot GET after the remote died")
        problems = srv.stop()
        if problems:
            raise h.Failure("\n".join(problems))
    finally:
        if srv:
            srv.kill()
            srv.cleanup()
        remote.kill()
        remote.cleanup()


def test_where_features_meet(srv):
    """An encrypted object moves like any other (its packages as they
    are: test_sse_tiers.py has the rest); in a versioned bucket the latest
    version moves; a batch GET refuses a cold entry. Each stays readable
    byte for byte."""
    s3 = srv.client()
    s3.create_bucket(Bucket="meet")
    enc = text_like(300 * 1024, 7)
    s3.put_object(Bucket="meet", Key="enc", Body=enc, StorageClass="COLD",
                  ServerSideEncryption="AES256")
    check_reads(s3, "meet", "enc", enc, "COLD", "encrypted, asked COLD")
    s3.create_bucket(Bucket="meet-v")
    s3.put_bucket_versioning(Bucket="meet-v", VersioningConfiguration={"Status": "Enabled"})
    v1, v2 = mixed(200 * 1024, 8), mixed(250 * 1024, 9)
    r1 = s3.put_object(Bucket="meet-v", Key="k", Body=v1, StorageClass="COLD")
    s3.put_object(Bucket="meet-v", Key="k", Body=v2, StorageClass="COLD")
    check_reads(s3, "meet-v", "k", v2, "COLD", "versioned, asked COLD")
    old = s3.get_object(Bucket="meet-v", Key="k", VersionId=r1["VersionId"])
    h.eq(old.get("StorageClass"), "COLD", "the older version was moved when it was the latest")
    h.same_bytes(old["Body"].read(), v1, "the older version")
    cold = text_like(100 * 1024, 10)
    s3.put_object(Bucket="meet", Key="cold", Body=cold, StorageClass="COLD")
    body = (b"<Batch><ContinueOnError>true</ContinueOnError><Entry><Key>cold</Key></Entry>"
            b"<Entry><Key>enc</Key></Entry></Batch>")
    r = srv.request("POST", "/meet", "batch", body=body)
    h.eq(r.status, 200, "batch status")
    h.check(b"__error__/cold" in r.body and b"NotImplemented" in r.body,
            "a cold batch entry is a NotImplemented placeholder")
    h.check(cold[:4096] not in r.body, "no cold bytes in the batch")


NC_RULE = ("<Rule><ID>v</ID><Status>Enabled</Status><Filter><Prefix>k</Prefix></Filter>"
           "<Transition><Days>1</Days><StorageClass>COLD</StorageClass></Transition>"
           "<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays>"
           "<NewerNoncurrentVersions>1</NewerNoncurrentVersions>"
           "<StorageClass>GLACIER_IR</StorageClass></NoncurrentVersionTransition></Rule>")


def test_versioned_transitions(srv):
    """Transition and NoncurrentVersionTransition in a versioned bucket:
    the current version and the noncurrent ones beyond the newest
    NewerNoncurrentVersions move; every version reads back by versionId
    byte for byte in its class; a delete by versionId frees its cold
    bytes."""
    s3 = srv.client()
    s3.create_bucket(Bucket="vt-b")
    s3.put_bucket_versioning(Bucket="vt-b", VersioningConfiguration={"Status": "Enabled"})
    bodies = [mixed(300 * 1024 + i, 70 + i) for i in range(3)]
    vids = [s3.put_object(Bucket="vt-b", Key="k", Body=b)["VersionId"] for b in bodies]
    s3.put_object(Bucket="vt-b", Key="other", Body=b"out of the rule's prefix")
    base_cold = cold_used(srv)
    put_lifecycle(srv, "vt-b", NC_RULE)
    time.sleep(2.1)
    st = run_pass(srv, "vt-b")
    # The current version (COLD) and the oldest (one newer noncurrent
    # version kept): the middle one is the newest noncurrent, kept hot.
    h.eq(st["objects_transitioned"], 2, "versions moved (%r)" % st)
    want = {vids[0]: "GLACIER_IR", vids[1]: "STANDARD", vids[2]: "COLD"}
    for vid, b in zip(vids, bodies):
        hd = s3.head_object(Bucket="vt-b", Key="k", VersionId=vid)
        h.eq(hd.get("StorageClass"), None if want[vid] == "STANDARD" else want[vid],
             "HEAD class of version %s" % vid)
        h.eq(hd["ETag"], '"%s"' % h.md5_hex(b), "ETag of version %s" % vid)
        g = s3.get_object(Bucket="vt-b", Key="k", VersionId=vid)
        h.same_bytes(g["Body"].read(), b, "GET of version %s" % vid)
        g = s3.get_object(Bucket="vt-b", Key="k", VersionId=vid, Range="bytes=70000-200000")
        h.same_bytes(g["Body"].read(), b[70000:200001], "Range of version %s" % vid)
    check_reads(s3, "vt-b", "k", bodies[2], "COLD", "the current version")
    lv = s3.list_object_versions(Bucket="vt-b", Prefix="k")
    h.eq({v["VersionId"]: v["StorageClass"] for v in lv["Versions"]}, want,
         "ListObjectVersions classes")
    h.eq(s3.head_object(Bucket="vt-b", Key="other").get("StorageClass"), None, "other stays")
    h.check(cold_used(srv) > base_cold, "the versions are in the cold tier")
    h.eq(run_pass(srv, "vt-b")["objects_transitioned"], 0, "a second pass moves nothing")
    # A new current version makes the old current one noncurrent: kept
    # where it is (COLD) as the newest noncurrent.
    s3.put_object(Bucket="vt-b", Key="k", Body=b"newest")
    g = s3.get_object(Bucket="vt-b", Key="k", VersionId=vids[2])
    h.eq(g.get("StorageClass"), "COLD", "the old current version stays cold")
    h.same_bytes(g["Body"].read(), bodies[2], "the old current version")
    # Deletes by versionId give the cold space back.
    for vid in vids:
        s3.delete_object(Bucket="vt-b", Key="k", VersionId=vid)
    settles(lambda: cold_used(srv), base_cold, "cold bytes after the versions' deletes")


# The last three start servers of their own (the shared one is unused).
TESTS = [
    test_storage_class_put_head_list,
    test_multipart_and_copy,
    test_where_features_meet,
    test_versioned_transitions,
    test_lifecycle_transition_and_space,
    test_kill9_during_moves,
    test_full_cold_tier,
    test_cold_corruption_detected,
    test_remote_tier,
    test_remote_stall_blocks_nothing,
]

if __name__ == "__main__":
    h.main(TESTS, config=BASE)
