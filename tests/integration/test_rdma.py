"""test_rdma.py: the RDMA fast path (x-amz-rdma-token) end to end, over the
shm provider and over tcp;ofi_rxm bound to 127.0.0.1: PUT, multipart
UploadPart and GET (whole, Range across extent boundaries, partNumber)
byte for byte through the shard tool and rdma_driver; 64 concurrent RDMA
readers; a 1 GiB object (shm); declines and refusals (RDMA off: 501 then
HTTP; garbage, truncated, oversized, other-version and other-provider
tokens; a token length that disagrees with the range; an unsigned token
header); a client killed mid-transfer (the server gets its buffers back and
keeps serving); the server killed mid-PUT (nothing visible, no space
leaked); libfabric loaded only by the processes that use RDMA, and a
libfabric.so.1 that cannot be loaded (501, HTTP fallback, a message naming
it). Skips with a clear message on a build without libfabric."""
import atexit
import base64
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402
import shard_util as su  # noqa: E402

MIB = 1 << 20
PART = 5 * MIB
PROVIDERS = {"shm": "", "tcp": "rdma_address = 127.0.0.1\n"}
# rdma_timeout: how long the killed-client test waits for the server to give up on its
# transfer, and long enough that 64 readers queued on the lanes of a loaded machine
# (ASan, other work at a higher priority) do not time out (2 s did, once: 61 of 256 declined).
BASE_CONF = "index_nosync = on\nmetrics_access = open\nvolume_size = 1536M\nrdma_timeout = 6\n"
SERVERS = {}
TMP = tempfile.mkdtemp(prefix="shard-rdma-")
DATA = {}


def libfabric_built():
    path = os.path.join(su.builddir(), "config.h")
    try:
        with open(path) as f:
            return "#define HAVE_LIBFABRIC 1" in f.read()
    except OSError:
        return False


def env_for(srv, provider):
    extra = {"AWS_RDMA_PROVIDER": provider, "FI_TCP_IFACE": "lo"}
    if provider == "tcp":
        extra["AWS_RDMA_ADDRESS"] = "127.0.0.1"
    return su.base_env(srv, **extra)


def start(name, conf):
    srv = h.Server(config=conf, env={"FI_TCP_IFACE": "lo"}, tag="rdma-" + name)
    srv.start()
    SERVERS[name] = srv
    return srv


def stop_all():
    for srv in SERVERS.values():
        srv.kill()
        srv.cleanup()
    shutil.rmtree(TMP, ignore_errors=True)


atexit.register(stop_all)


def shard(srv, provider, *args, rc=0, input=None):
    return su.run(srv, *args, env=env_for(srv, provider), rc=rc, input=input)


def driver(srv, provider, *args):
    path = os.path.join(su.builddir(), "tests", "integration", "rdma_driver")
    p = subprocess.run([path, "get"] + [str(a) for a in args], capture_output=True, timeout=60,
                       env=env_for(srv, provider), stdin=subprocess.DEVNULL)
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        raise h.Failure("rdma_driver %s: exit %d: %s" % (args, p.returncode, err))
    first = err.splitlines()[0] if err else ""
    fields = dict(kv.split("=") for kv in first.split() if "=" in kv)
    return int(fields.get("status", 0)), int(fields.get("reply", 0)), p.stdout, err


def metric(srv, name):
    return srv.metrics().get(name, 0.0)


def free_bytes(srv):
    r = srv.request("GET", "/_/metrics", sign=False)
    for line in r.body.decode().splitlines():
        if line.startswith('shardstore_volume_free_bytes{tier="hot"}'):
            return float(line.split()[1])
    raise h.Failure("no shardstore_volume_free_bytes in /_/metrics")


def write_file(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def token(provider=b"shm", addr=b"fi_shm://1", key=1, remote=4096, length=100, nonce=7, version=1,
          lanes=None):
    """A version 1 token (one address), or with 'lanes' a version 2 one listing that many."""
    raw = bytes([version, len(provider)]) + provider
    if lanes is not None:
        raw += bytes([lanes])
    raw += (bytes([len(addr)]) + addr) * (1 if lanes is None else max(lanes, 1))
    raw += struct.pack("<QQQQ", key, remote, length, nonce)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_setup():
    for prov, extra in PROVIDERS.items():
        srv = start(prov, BASE_CONF + "rdma = on\nrdma_provider = %s\n" % prov + extra)
        with open(srv.stderr_path) as f:
            log = f.read()
        if "cannot open" in log:
            raise h.Skip("libfabric provider %s is not usable here: %s" % (prov, log[-300:]))
        srv.client().create_bucket(Bucket="rdb")
        # Objects: small, one PUT of 3 MiB + 1, multipart 13 MiB + 5 in 5 MiB parts.
        for name, size in (("small", 4099), ("mid", 3 * MIB + 1), ("mp", 13 * MIB + 5)):
            body = h.random_bytes(size, seed=size)
            DATA[name] = body
            path = write_file(name, body)
            shard(srv, prov, "cp", path, "s3://rdb/" + name, "--transport", "rdma", "--part-size", "5M")
        # The off server: the harness default (RDMA off).
    off = start("off", "index_nosync = on\nmetrics_access = open\n")
    off.client().create_bucket(Bucket="rdb")
    off.client().put_object(Bucket="rdb", Key="mid", Body=DATA["mid"])


def test_put_get_byte_for_byte():
    for prov in PROVIDERS:
        srv = SERVERS[prov]
        gets = metric(srv, "shardstore_rdma_gets_total")
        h.check(metric(srv, "shardstore_rdma_puts_total") >= 5, "PUT and 3 parts over RDMA")
        for name, body in DATA.items():
            if name != "mid":  # read over RDMA by every later case
                got = shard(srv, prov, "cat", "s3://rdb/" + name, "--transport", "rdma").stdout
                h.check(got == body, "%s: %s read back over RDMA" % (prov, name))
            # The same bytes over plain HTTP: the RDMA PUT stored them.
            got = srv.client().get_object(Bucket="rdb", Key=name)["Body"].read()
            h.check(got == body, "%s: %s read back over HTTP" % (prov, name))
        h.check(metric(srv, "shardstore_rdma_gets_total") >= gets + len(DATA) - 1,
                      "every GET moved over RDMA")


def maps_libfabric(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libfabric" in f.read()


def test_libfabric_loaded_lazily():
    # libfabric is dlopen()ed when the transport is first used: loading it
    # runs its providers' constructors (PSM's libinfinipath sleeps ~0.2 s),
    # which a process that never uses RDMA must not pay.
    srv = SERVERS["shm"]
    env = dict(env_for(srv, "shm"), LD_DEBUG="libs")
    for args in (["ls", "s3://rdb"], ["cat", "s3://rdb/small", "--transport", "http"]):
        p = su.run(srv, *args, env=env)
        h.check(b"libfabric" not in p.stderr, "shard %s over HTTP loads no libfabric" % args[0])
    p = su.run(srv, "cat", "s3://rdb/small", "--transport", "rdma", env=env)
    h.check(p.stdout == DATA["small"] and b"libfabric.so.1" in p.stderr,
            "shard cat --transport rdma loads libfabric")
    h.check(not maps_libfabric(SERVERS["off"].proc.pid), "a server with RDMA off has no libfabric mapped")
    h.check(maps_libfabric(srv.proc.pid), "a server with RDMA on has libfabric mapped")


def test_libfabric_missing():
    # libfabric.so.1 that cannot be loaded (a file that is no library, found
    # first through LD_LIBRARY_PATH): the transport is unavailable, as when
    # the provider fails: the server declines (501), auto uses HTTP, and
    # --transport rdma fails naming the library.
    bad = os.path.join(TMP, "badlib")
    os.makedirs(bad, exist_ok=True)
    with open(os.path.join(bad, "libfabric.so.1"), "w") as f:
        f.write("not a library\n")
    srv = h.Server(config=BASE_CONF + "rdma = on\nrdma_provider = shm\n", env={"LD_LIBRARY_PATH": bad},
                   tag="rdma-nolib", allowed_errors=[r"rdma: provider shm cannot open"])
    srv.start()
    SERVERS["nolib"] = srv
    with open(srv.stderr_path) as f:
        log = f.read()
    h.check("cannot open" in log and "libfabric.so.1" in log, "the server names the library: %s" % log[-300:])
    srv.client().create_bucket(Bucket="rdb")
    srv.client().put_object(Bucket="rdb", Key="small", Body=DATA["small"])
    status, reply, _, _ = driver(srv, "shm", "rdb", "small")
    h.eq((status, reply), (501, 501), "no libfabric in the server: 501 with x-amz-rdma-reply: 501")
    env = dict(env_for(srv, "shm"), LD_LIBRARY_PATH=bad)
    p = su.run(srv, "cat", "s3://rdb/small", "--transport", "rdma", env=env, rc=1)
    h.check(b"libfabric.so.1" in p.stderr, "rdma fails naming the library: %r" % p.stderr[-300:])
    p = su.run(srv, "cat", "s3://rdb/small", "--transport", "auto", env=env)
    h.check(p.stdout == DATA["small"], "auto falls back to HTTP without libfabric")


def test_ranges_across_extents():
    body = DATA["mp"]
    # Parts are extents of their own: these cross 5 MiB and 10 MiB.
    for prov in PROVIDERS:
        srv = SERVERS[prov]
        for a, b in ((4 * MIB, 11 * MIB), (len(body) - 6, len(body) - 1)):
            got = shard(srv, prov, "cat", "s3://rdb/mp", "--range", "%d-%d" % (a, b),
                        "--transport", "rdma").stdout
            h.check(got == body[a:b + 1], "%s: range %d-%d" % (prov, a, b))
        for a, b in ((PART - 10, PART + 10), (2 * PART - 1, 2 * PART)):
            status, reply, out, _ = driver(srv, prov, "rdb", "mp", "--range", "%d-%d" % (a, b))
            h.eq(reply, 206, "%s: x-amz-rdma-reply of a range" % prov)
            h.check(out == body[a:b + 1], "%s: driver range %d-%d" % (prov, a, b))


def test_part_number():
    body = DATA["mp"]
    for prov in PROVIDERS:
        srv = SERVERS[prov]
        for n, (a, b) in ((2, (PART, 2 * PART)), (3, (2 * PART, len(body)))):
            status, reply, out, err = driver(srv, prov, "rdb", "mp", "--part", n, "--len", b - a)
            h.eq(status, 206, "%s: part %d status (%s)" % (prov, n, err))
            h.eq(reply, 206, "%s: part %d x-amz-rdma-reply" % (prov, n))
            h.check(out == body[a:b], "%s: part %d bytes" % (prov, n))


def test_concurrent_readers():
    for prov in PROVIDERS:
        srv = SERVERS[prov]
        p = shard(srv, prov, "bench", "range", "--bucket", "rdb", "--prefix", "conc", "--size", "4M",
                  "--objects", "4", "--range-size", "64K", "--concurrency", "64", "--count", "256",
                  "--transport", "rdma", "--verify")
        out = p.stdout.decode()
        h.check("errors=0" in out, "%s: 64 readers: %s %s" % (prov, out, p.stderr[-500:]))
        h.check("http_fallbacks=0" in out, "%s: no fallback: %s" % (prov, out))
        n = int(out.split("rdma_requests=")[1].split()[0])
        h.check(n >= 256 + 4, "%s: every read and the prepare PUTs over RDMA (%d)" % (prov, n))


def test_one_gib():
    srv = SERVERS["shm"]
    p = shard(srv, "shm", "bench", "get", "--bucket", "rdb", "--prefix", "gib", "--size", "1G",
              "--objects", "1", "--count", "1", "--concurrency", "1", "--transport", "rdma", "--verify")
    out = p.stdout.decode()
    h.check("errors=0" in out and "ops=1 " in out, "1 GiB over shm: %s %s" % (out, p.stderr[-500:]))
    h.check("http_fallbacks=0" in out, "1 GiB: no fallback: %s" % out)
    srv.client().delete_object(Bucket="rdb", Key="gib0000000000")


def test_declined_when_off():
    off = SERVERS["off"]
    p = shard(off, "shm", "cat", "s3://rdb/mid", "--transport", "rdma", rc=1)
    h.check(b"RdmaDeclined" in p.stderr and b"501" in p.stderr, "rdma refuses to fall back: %r" % p.stderr)
    got = shard(off, "shm", "cat", "s3://rdb/mid", "--transport", "auto").stdout
    h.check(got == DATA["mid"], "auto falls back to HTTP")
    status, reply, out, _ = driver(off, "shm", "rdb", "mid")
    h.eq((status, reply), (501, 501), "off: 501 with x-amz-rdma-reply: 501")
    path = write_file("up", DATA["small"])
    shard(off, "shm", "cp", path, "s3://rdb/up", "--transport", "rdma", rc=1)
    h.eq(off.request("HEAD", "/rdb/up").status, 404, "a declined PUT stores nothing")
    shard(off, "shm", "cp", path, "s3://rdb/up", "--transport", "auto")
    h.check(off.client().get_object(Bucket="rdb", Key="up")["Body"].read() == DATA["small"],
                  "auto PUT falls back to HTTP")


def test_bad_tokens():
    srv = SERVERS["shm"]
    cases = [
        ("garbage", "not a token!", 400),
        ("truncated", token()[:-7], 400),
        ("oversized", "A" * 300, 400),
        ("empty fields", token(length=0), 400),
        ("wrapping", token(remote=(1 << 64) - 5, length=100), 400),
        ("version 3", token(version=3), 501),
        ("no lane", token(version=2, lanes=0), 400),
        ("5 lanes", token(version=2, lanes=5), 400),
        ("other provider", token(provider=b"tcp;ofi_rxm"), 501),
    ]
    for what, tok, want in cases:
        hdrs = {"Range": "bytes=0-99", "x-amz-rdma-token": tok}
        r = srv.request("GET", "/rdb/small", headers=hdrs)
        h.eq(r.status, want, "%s token: %r" % (what, r.body[:300]))
        reply = r.headers.get("x-amz-rdma-reply")
        h.eq(reply, "501" if want == 501 else None, "%s token: x-amz-rdma-reply" % what)
    # The server still serves real tokens; a served token is not served twice.
    status, reply, out, err = driver(srv, "shm", "rdb", "small", "--range", "0-99", "--repeat", 1)
    h.eq((status, reply), (206, 206), "a good token after bad ones")
    h.check(out == DATA["small"][:100], "bytes after bad tokens")
    h.check("replay=400" in err, "the same token again is refused: %s" % err)


def test_length_mismatch():
    for prov in PROVIDERS:
        srv = SERVERS[prov]
        for length in (50, 101) if prov == "shm" else (99,):
            status, reply, out, err = driver(srv, prov, "rdb", "small", "--range", "0-99", "--len", length)
            h.eq(status, 400, "%s: token of %d bytes for 100: %s" % (prov, length, err))
            h.check("does not match" in err or "describes" in err, "message: %s" % err)


def test_unsigned_token_header():
    srv = SERVERS["shm"]
    hdrs = srv.sign("GET", "/rdb/small")
    hdrs["x-amz-rdma-token"] = token()
    r = srv.request("GET", "/rdb/small", headers=hdrs, sign=False)
    h.eq(r.status, 403, "an unsigned x-amz-rdma-token is refused")
    h.check(r.headers.get("x-amz-rdma-reply") is None, "no RDMA reply for it")
    r = srv.request("GET", "/rdb/small", headers={"x-amz-rdma-token": token()}, sign=False)
    h.check(r.status in (403,), "an anonymous token is refused (%d)" % r.status)


def wait_metric(srv, name, pred, timeout_s=20.0):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        v = metric(srv, name)
        if pred(v):
            return v
        time.sleep(0.02)
    raise h.Failure("%s never satisfied the condition (last %s)" % (name, metric(srv, name)))


def test_client_killed_mid_transfer():
    for prov in PROVIDERS:
        srv = SERVERS[prov]
        shard(srv, prov, "bench", "put", "--bucket", "rdb", "--prefix", "big", "--size", "128M",
              "--count", "1", "--objects", "1", "--concurrency", "1")
        argv = [su.shard_binary(), "cat", "s3://rdb/big0000000000", "--transport", "rdma"]
        p = subprocess.Popen(argv, env=env_for(srv, prov), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        try:
            wait_metric(srv, "shardstore_rdma_in_flight", lambda v: v >= 1)
            # Stopped, the client serves no part of the transfer: killed
            # in the middle for sure.
            p.send_signal(signal.SIGSTOP)
            time.sleep(0.1)
            p.kill()
        finally:
            p.kill()
            p.wait()
        wait_metric(srv, "shardstore_rdma_in_flight", lambda v: v == 0)
        h.eq(metric(srv, "shardstore_rdma_buffers_free"), metric(srv, "shardstore_rdma_buffers"),
                    "%s: every buffer back in the pool" % prov)
        got = shard(srv, prov, "cat", "s3://rdb/mid", "--transport", "rdma").stdout
        h.check(got == DATA["mid"], "%s: serves RDMA after a killed client" % prov)
        srv.client().delete_object(Bucket="rdb", Key="big0000000000")


def test_server_killed_mid_put():
    srv = SERVERS["shm"]
    free_before = free_bytes(srv)
    path = write_file("bigput", b"\1" * (128 * MIB))
    argv = [su.shard_binary(), "cp", path, "s3://rdb/killed", "--transport", "rdma", "--part-size", "1G"]
    p = subprocess.Popen(argv, env=env_for(srv, "shm"), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_metric(srv, "shardstore_rdma_in_flight", lambda v: v >= 1)
        p.send_signal(signal.SIGSTOP)  # the server's reads now wait on the client
        killed_pid = srv.proc.pid
        srv.kill()
    finally:
        p.kill()
        p.wait()
    srv.start()
    h.eq(srv.request("HEAD", "/rdb/killed").status, 404, "nothing of the killed PUT is visible")
    h.eq(free_bytes(srv), free_before, "no space leaked")
    # Nor the killed server's shm region: the new one swept it at start.
    left = [n for n in os.listdir("/dev/shm") if n.startswith("shard_%d_" % killed_pid)]
    h.eq(left, [], "shm regions of the killed server")
    got = shard(srv, "shm", "cat", "s3://rdb/mid", "--transport", "rdma").stdout
    h.check(got == DATA["mid"], "serves RDMA after the restart")


def test_zz_teardown():
    problems = []
    for name, srv in list(SERVERS.items()):
        problems += srv.stop()
    if problems:
        raise h.Failure("\n".join(problems))


if __name__ == "__main__":
    if not libfabric_built():
        print("SKIP: built without libfabric (install libfabric-dev and reconfigure): "
              "the RDMA tests need the transport")
        sys.exit(h.SKIP)
    h.main([test_setup, test_put_get_byte_for_byte, test_libfabric_loaded_lazily,
            test_libfabric_missing, test_ranges_across_extents, test_part_number, test_concurrent_readers, test_one_gib, test_declined_when_off, test_bad_tokens,
            test_length_mismatch, test_unsigned_token_header, test_client_killed_mid_transfer,
            test_server_killed_mid_put, test_zz_teardown], shared_server=False)
