"""test_python_shardstore.py: the Python package python/shardstore (ctypes
on libshard.so) against a real server: shardstore.open of an object, a
range and a member; list_members paged; batch_get with missing entries;
WebDataset-style samples (shardstore.samples) split over ranks and
workers with every sample exactly once, seeded shuffles, malformed shards,
long and UTF-8 names, and resumption through a proxy that cuts the
connection mid-shard. Then the PyTorch datasets (shardstore.torch) in one
child process of the Python that has torch (Debian's python3-torch is for
/usr/bin/python3; see torch_checks.py): DataLoader with 0 and 2 workers,
two simulated ranks, seeded shuffles, the proxy again, SampleDataset and
its one-batch-GET loader with missing entries.
"""
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import threading

SRCDIR = os.environ.get("SHARD_SRCDIR", ".")


def sanitizer_env():
    """LD_PRELOAD and ASAN_OPTIONS a Python needs to load this build's
    libshard.so when it was built with --enable-sanitizers ({} otherwise):
    the ASan runtime must come first in the process."""
    lib = os.path.join(os.environ.get("SHARD_BUILDDIR", ""), "client", ".libs", "libshard.so")
    if not os.path.exists(lib):
        return {}
    clean = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    out = subprocess.run(["ldd", lib], capture_output=True, text=True, env=clean).stdout
    pre = [ln.split("=>")[1].split()[0] for ln in out.splitlines()
           if ("libasan" in ln or "libubsan" in ln) and "=>" in ln]
    if not pre:
        return {}
    # Python itself leaks by design: leak reports would only be noise.
    return {"LD_PRELOAD": ":".join(pre),
            # Last, so it wins over a detect_leaks=1 the suite sets: the
            # interpreter's own allocations are not this project's leaks.
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"}


SANITIZER_ENV = sanitizer_env()
if SANITIZER_ENV and not os.environ.get("SHARD_PY_SANITIZED"):
    # Start again with the runtime preloaded; the server and other children
    # get the environment as it was (restored below).
    env = dict(os.environ, SHARD_PY_SANITIZED="1", **SANITIZER_ENV)
    env["SHARD_PY_ORIG_ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "-")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)
if os.environ.pop("SHARD_PY_SANITIZED", None):
    os.environ.pop("LD_PRELOAD", None)
    orig = os.environ.pop("SHARD_PY_ORIG_ASAN_OPTIONS", "-")
    if orig == "-":
        os.environ.pop("ASAN_OPTIONS", None)
    else:
        os.environ["ASAN_OPTIONS"] = orig
sys.path.insert(0, os.path.join(SRCDIR, "tests", "integration"))
sys.path.insert(0, os.path.join(SRCDIR, "python"))
import harness as h  # noqa: E402

B = "mldata"
N_SHARDS = 4
PER_SHARD = 25
LONG = "x" * 130


def sample_members(shard, i):
    key = "%02d%05d" % (shard, i)
    if i == 3:
        key = "dir/" + LONG + "-%d" % shard  # a pax path
    if i == 4:
        key = "échantillon-%d-日本" % shard
    img = h.random_bytes(1000 + (i * 37) % 3000, seed=shard * 1000 + i)
    return [(key + ".jpg", img), (key + ".cls", b"%d" % (i % 10)),
            (key + ".json", json.dumps({"shard": shard, "i": i}).encode())]


def make_tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


SHARDS = {}  # key -> (tar bytes, [(name, data)])


class CutProxy:
    """Relays to the server. Once 'cut_at' bytes went downstream in total,
    it cuts that connection and refuses (closes at once) the next 'refuse'
    ones: libshard's retries give up (max_retries=1) and the loader must
    reopen the shard itself."""

    def __init__(self, target):
        self.target = target
        self.cut_at = None
        self.refuse_after_cut = 3
        self.refuse = 0
        self.total = 0
        self.cuts = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def arm(self, cut_at, refuse=3):
        with self.lock:
            self.total, self.cut_at, self.refuse_after_cut, self.cuts = 0, cut_at, refuse, 0

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        with self.lock:
            if self.refuse > 0:
                self.refuse -= 1
                c.close()
                return
        try:
            u = socket.create_connection(("127.0.0.1", self.target), timeout=5)
        except OSError:
            c.close()
            return
        u.settimeout(None)

        def up():
            try:
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    u.sendall(b)
            except OSError:
                pass

        threading.Thread(target=up, daemon=True).start()
        try:
            while True:
                b = u.recv(65536)
                if not b:
                    break
                with self.lock:
                    cut = self.cut_at is not None and self.total + len(b) >= self.cut_at
                    if cut:
                        b = b[:max(0, self.cut_at - self.total)]
                        self.cut_at = None
                        self.refuse = self.refuse_after_cut
                        self.cuts += 1
                    self.total += len(b)
                c.sendall(b)
                if cut:
                    break
        except OSError:
            pass
        for s in (c, u):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def all_keys():
    out = []
    for s in range(N_SHARDS):
        for i in range(PER_SHARD):
            out.append(sample_members(s, i)[0][0].rsplit(".", 1)[0])
    return out


def env_for(srv, endpoint=None):
    env = dict(os.environ)
    env.update(AWS_ACCESS_KEY_ID=srv.access_key, AWS_SECRET_ACCESS_KEY=srv.secret_key,
               AWS_ENDPOINT_URL=endpoint or srv.endpoint, AWS_DEFAULT_REGION=h.REGION)
    return env


def set_env(srv):
    os.environ.update(env_for(srv))


def test_setup(srv):
    set_env(srv)
    s3 = srv.client()
    s3.create_bucket(Bucket=B)
    for s in range(N_SHARDS):
        members = []
        for i in range(PER_SHARD):
            members += sample_members(s, i)
        raw = make_tar(members)
        SHARDS["train/shard-%06d.tar" % s] = (raw, members)
        s3.put_object(Bucket=B, Key="train/shard-%06d.tar" % s, Body=raw)
    good = make_tar([("a.cls", b"1"), ("b.cls", b"2"), ("c.cls", b"3"), ("d.cls", b"4")])
    bad = bytearray(good)
    bad[2048 + 148] ^= 0x11  # the third header's checksum
    s3.put_object(Bucket=B, Key="bad/broken.tar", Body=bytes(bad))
    s3.put_object(Bucket=B, Key="bad/truncated.tar", Body=good[:1024 + 300])


def test_open_and_members(srv):
    import shardstore
    raw, members = SHARDS["train/shard-000000.tar"]
    with shardstore.open("s3://%s/train/shard-000000.tar" % B) as f:
        h.same_bytes(f.read(), raw, "whole object")
    with shardstore.open("s3://%s/train/shard-000000.tar" % B, offset=1000, length=777) as f:
        h.same_bytes(f.read(), raw[1000:1777], "range")
    name, data = members[9]  # sample 3: the long name
    with shardstore.open("s3://%s/train/shard-000000.tar" % B, member=name) as f:
        h.same_bytes(f.read(), data, "member stream (pax name)")
    name, data = members[12]  # sample 4: UTF-8
    h.same_bytes(shardstore.get_member("s3://%s/train/shard-000000.tar" % B, name), data,
                 "get_member UTF-8")
    listed = list(shardstore.list_members("s3://%s/train/shard-000000.tar" % B))
    h.eq([m.name for m in listed], [n for n, _ in members], "listing")
    c = shardstore.default_client()
    paged = list(c.list_members(B, "train/shard-000000.tar", page=7))
    h.eq([m.name for m in paged], [n for n, _ in members], "listing in pages of 7")
    try:
        shardstore.get_member("s3://%s/train/shard-000000.tar" % B, "nope.jpg")
        raise h.Failure("missing member read")
    except shardstore.ShardError as e:
        h.eq((e.http_status, e.code), (404, "NoSuchMember"), "missing member error")
    # A reader without a key is the caller's error, not a crash (libshard used to
    # HEAD the bucket, which succeeded, then copy the NULL key).
    for key, member in ((None, None), ("", None), (None, "x.jpg")):
        try:
            c.open(B, key, member=member)
            raise h.Failure("a reader opened with key %r" % (key,))
        except shardstore.ShardError as e:
            h.eq((e.kind, e.code), ("ARG", "InvalidArgument"), "reader without a key")


def test_batch_get(srv):
    import shardstore
    _, m0 = SHARDS["train/shard-000000.tar"]
    _, m1 = SHARDS["train/shard-000001.tar"]
    entries = [("train/shard-000001.tar", m1[0][0]), ("train/shard-000000.tar", "gone.jpg"),
               ("train/shard-000000.tar", m0[12][0]), ("nosuchkey",),
               ("train/shard-000000.tar", m0[0][0], "bytes=0-9")]
    got = shardstore.batch_get(B, entries)
    h.eq(len(got), 5, "five answers")
    h.eq(got[0], ("train/shard-000001.tar/" + m1[0][0], m1[0][1]), "first")
    h.check(isinstance(got[1][1], shardstore.ShardError) and got[1][1].code == "NoSuchMember",
            "missing member: %r" % (got[1],))
    h.eq(got[2], ("train/shard-000000.tar/" + m0[12][0], m0[12][1]), "UTF-8 member")
    h.check(isinstance(got[3][1], shardstore.ShardError) and got[3][1].code == "NoSuchKey",
            "missing key: %r" % (got[3],))
    h.eq(got[4][1], m0[0][1][:10], "range entry")
    try:
        shardstore.batch_get(B, entries, continue_on_error=False)
        raise h.Failure("a cut batch passed")
    except shardstore.ShardError as e:
        h.eq(e.code, "BatchCut", "cut batch error")


def test_samples_split_and_shuffle(srv):
    from shardstore import samples
    urls = "s3://%s/train/shard-{000000..%06d}.tar" % (B, N_SHARDS - 1)
    seen = []
    for rank in range(2):
        for worker in range(2):
            for s in samples.samples(urls, rank, 2, worker, 2):
                seen.append(s["__key__"])
                h.eq(sorted(k for k in s if not k.startswith("__")), ["cls", "jpg", "json"],
                     "fields of %s" % s["__key__"])
    h.eq(sorted(seen), sorted(all_keys()), "every sample exactly once over 2 ranks x 2 workers")
    one = [s["__key__"] for s in samples.samples(urls, shuffle=True, seed=7, epoch=1,
                                                 shuffle_buffer=10)]
    two = [s["__key__"] for s in samples.samples(urls, shuffle=True, seed=7, epoch=1,
                                                 shuffle_buffer=10)]
    other = [s["__key__"] for s in samples.samples(urls, shuffle=True, seed=7, epoch=2,
                                                   shuffle_buffer=10)]
    h.eq(one, two, "same seed and epoch, same order")
    h.check(one != other, "another epoch, another order")
    h.eq(sorted(one), sorted(all_keys()), "shuffled: still each once")
    s = next(iter(samples.shard_samples("s3://%s/train/shard-000002.tar" % B)))
    h.eq(json.loads(s["json"]), {"shard": 2, "i": 0}, "field bytes")


def test_malformed_shards(srv):
    import warnings
    from shardstore import samples
    for key in ("bad/broken.tar", "bad/truncated.tar"):
        url = "s3://%s/%s" % (B, key)
        try:
            list(samples.shard_samples(url))
            raise h.Failure("%s read without error" % key)
        except samples.MalformedShard:
            pass
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = [s["__key__"] for s in samples.shard_samples(url, handler="warn")]
        h.check(len(w) == 1 and "malformed" in str(w[0].message), "one warning for %s" % key)
        h.eq(got, ["a"] if key == "bad/broken.tar" else [], "samples before the damage")


class Trickle:
    """A file object whose read(n) returns short pieces (sizes from a seeded
    cycle, as a network reader may), so members, headers and padding run
    across the parser's reads at every kind of boundary."""

    def __init__(self, data, sizes):
        self.data, self.pos, self.sizes, self.k = data, 0, sizes, 0

    def read(self, n=-1):
        m = self.sizes[self.k % len(self.sizes)]
        self.k += 1
        out = self.data[self.pos:self.pos + min(n, m)]
        self.pos += len(out)
        return out


def parser_archives():
    """(label, tar bytes) covering the header kinds the parser reads."""
    members = [("a/000001.jpg", h.random_bytes(1536, seed=1)),  # a whole number of blocks
               ("a/000001.cls", b""),  # empty
               ("dir/" + LONG + ".jpg", h.random_bytes(700, seed=2)),  # long name
               ("échantillon-日本.json", b'{"k": 1}'),  # UTF-8 name
               ("p" * 90 + "/" + "q" * 60 + ".txt", b"prefix"),  # ustar prefix/name split
               ("big.bin", h.random_bytes(70000, seed=3)),  # over several reads
               ("z.cls", b"9")]
    out = []
    for label, fmt in (("pax", tarfile.PAX_FORMAT), ("gnu", tarfile.GNU_FORMAT),
                       ("ustar", tarfile.USTAR_FORMAT)):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
            d = tarfile.TarInfo("a")
            d.type = tarfile.DIRTYPE
            tf.addfile(d)
            for name, data in members:
                if fmt == tarfile.USTAR_FORMAT and (LONG in name or not name.isascii()):
                    continue  # ustar alone has no long or UTF-8 names
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
            ln = tarfile.TarInfo("a/link")
            ln.type, ln.linkname = tarfile.SYMTYPE, "000001.jpg"
            tf.addfile(ln)
        out.append((label, buf.getvalue()))
    return out


def test_parser_pieces(srv):
    """samples.iter_members against tarfile on the same archives, read in
    pieces of many sizes (headers, data and padding cut at every kind of
    place), and on every truncation of one archive."""
    from shardstore import samples
    for label, raw in parser_archives():
        with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
            want = [(m.offset, m.name, tf.extractfile(m).read()) for m in tf if m.isreg()]
        h.check(any(LONG in n for _, n, _ in want) or label == "ustar", "long name in " + label)
        for read_size in (1, 100, 511, 512, 513, 1000, 4096, 65536, 1 << 20):
            got = list(samples.iter_members(io.BytesIO(raw), label, read_size=read_size))
            h.eq(got, want, "%s read in pieces of %d" % (label, read_size))
        for sizes in ((1, 511, 3), (700, 13, 2000), (512,), (4095, 1)):
            got = list(samples.iter_members(Trickle(raw, sizes), label, read_size=1024))
            h.eq(got, want, "%s read as pieces of %r" % (label, sizes))
        # Resuming at any member's header offset gives the rest of them.
        for k, (off, _, _) in enumerate(want):
            got = list(samples.iter_members(io.BytesIO(raw[off:]), label, off, read_size=600))
            h.eq(got, want[k:], "%s resumed at byte %d" % (label, off))
    _, raw = parser_archives()[0]
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        want = [(m.offset, m.name, tf.extractfile(m).read()) for m in tf if m.isreg()]
    end = want[-1][0] + 1024  # the last member's header and data block
    for cut in range(1, end, 37):
        got = []
        try:
            for m in samples.iter_members(io.BytesIO(raw[:cut]), "cut", read_size=700):
                got.append(m)
            ok = cut % 512 == 0 and got == [w for w in want if w[0] < cut]
        except samples.MalformedShard:
            ok = got == want[:len(got)]
        h.check(ok, "archive cut at byte %d: %d members then %s" % (
            cut, len(got), "an error" if not ok else "the end"))
    # A pax name holding a NUL: libshard's names come NUL-separated, so
    # samples.py must not split them at it (the names after it stay whole).
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name in ("a.cls", "b.cls"):
            ti = tarfile.TarInfo(name)
            ti.size = 1
            if name == "a.cls":
                ti.pax_headers = {"path": "a\0z.cls"}
            tf.addfile(ti, io.BytesIO(b"1"))
    got = [n for _, n, _ in samples.iter_members(io.BytesIO(buf.getvalue()), "nul")]
    h.eq(got, ["a\0z.cls", "b.cls"], "a pax name with a NUL")
    bad = bytearray(raw)
    bad[want[2][0] + 5] ^= 0x11  # a name byte of the third member's first header
    try:
        list(samples.iter_members(io.BytesIO(bytes(bad)), "bad", read_size=1000))
        raise h.Failure("a damaged header was parsed")
    except samples.MalformedShard as e:
        h.check("checksum" in e.why and e.offset == want[2][0], "damaged header: %s" % e)


def test_resume_through_proxy(srv):
    import shardstore
    from shardstore import samples
    proxy = CutProxy(srv.port)
    try:
        # One connection at a time: with two, the other stream's new
        # connections could take the proxy's refusals, and libshard's own
        # retry then absorbed the cut (the loader never had to resume).
        c = shardstore.Client(endpoint_url=proxy.endpoint, max_retries=1, retry_base_ms=1,
                              parallel=1, chunk_size=32768)
        urls = "s3://%s/train/shard-{000000..%06d}.tar" % (B, N_SHARDS - 1)
        stats = {}
        proxy.arm(cut_at=150000, refuse=3)
        got = [s["__key__"] for s in samples.samples(urls, client=c, stats=stats, max_resumes=20)]
        h.check(proxy.cuts == 1, "the proxy cut once (%d)" % proxy.cuts)
        h.check(stats.get("resumes", 0) >= 1, "the loader reopened the shard: %r" % stats)
        h.eq(got, all_keys(), "no sample lost or repeated across the cut")
        c.close()
    finally:
        proxy.close()


def torch_python():
    """The interpreter that has torch: this one, else Debian's
    /usr/bin/python3 (python3-torch, installed by scripts/setup.sh --test)."""
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run([py, "-c", probe],
                                                 capture_output=True).returncode == 0:
            return py
    return None


def test_torch_datasets(srv):
    py = torch_python()
    if py is None:
        raise h.Skip("no Python with torch (scripts/setup.sh --test installs python3-torch)")
    proxy = CutProxy(srv.port)
    try:
        env = env_for(srv)
        env.update(SANITIZER_ENV)
        env["PYTHONPATH"] = os.path.join(os.path.abspath(SRCDIR), "python")
        env["SHARD_TEST_PROXY"] = proxy.endpoint
        env["SHARD_TEST_BUCKET"] = B
        env["SHARD_TEST_SHARDS"] = str(N_SHARDS)
        env["SHARD_TEST_KEYS"] = json.dumps(all_keys())
        proxy.arm(cut_at=200000, refuse=3)
        script = os.path.join(SRCDIR, "tests", "integration", "torch_checks.py")
        p = subprocess.run([py, script], env=env, capture_output=True, timeout=240)
        out = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
        print(out.strip())
        h.check(p.returncode == 0, "torch checks failed (exit %d)" % p.returncode)
        h.check(proxy.cuts == 1, "the proxy cut the loader once (%d)" % proxy.cuts)
    finally:
        proxy.close()


TESTS = [
    test_setup,
    test_open_and_members,
    test_batch_get,
    test_samples_split_and_shuffle,
    test_malformed_shards,
    test_parser_pieces,
    test_resume_through_proxy,
    test_torch_datasets,
]

if __name__ == "__main__":
    h.main(TESTS)
