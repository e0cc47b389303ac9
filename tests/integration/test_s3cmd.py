"""test_s3cmd.py: s3cmd (Debian's /usr/bin/s3cmd) against shardstore.

A generated config points s3cmd at the server in path style with SigV4.
Skips (77) when s3cmd is not installed.
"""

import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, same_bytes  # noqa: E402

TMP = None


class S3cmd:
    def __init__(self, srv):
        self.bin = harness.require_tool("s3cmd")
        self.srv = srv
        self.cfg = os.path.join(TMP, "s3cfg-%d" % srv.port)
        hp = "127.0.0.1:%d" % srv.port
        with open(self.cfg, "w") as f:
            f.write(
                "[default]\n"
                "access_key = %s\n"
                "secret_key = %s\n"
                "host_base = %s\n"
                "host_bucket = %s\n"
                "use_https = False\n"
                "signature_v2 = False\n"
                "bucket_location = us-east-1\n"
                "check_ssl_certificate = False\n"
                "progress_meter = False\n" % (srv.access_key, srv.secret_key, hp, hp)
            )

    def run(self, *args, check_rc=True, timeout=120):
        env = dict(os.environ)
        env["HOME"] = TMP  # keep ~/.s3cfg out of it
        return harness.run_cmd([self.bin, "-c", self.cfg, "--no-progress"] + list(args), timeout=timeout, env=env, check_rc=check_rc)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_mb_put_get_ls_del_rb(srv):
    c = S3cmd(srv)
    c.run("mb", "s3://s3cmd-basic")
    out = c.run("ls").stdout.decode()
    check("s3://s3cmd-basic" in out, "s3cmd ls lacks the bucket:\n" + out)
    files = {}
    for i, n in enumerate([0, 1, 4096, 1 << 20, 7 << 20]):
        name = "f%d.bin" % n
        data = harness.random_bytes(n, seed=200 + i)
        write(os.path.join(TMP, "up", name), data)
        files[name] = data
        c.run("put", os.path.join(TMP, "up", name), "s3://s3cmd-basic/dir/" + name)
    for name, data in files.items():
        dst = os.path.join(TMP, "down", name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        c.run("get", "--force", "s3://s3cmd-basic/dir/" + name, dst)
        same_bytes(read(dst), data, "s3cmd get " + name)
    out = c.run("ls", "s3://s3cmd-basic/").stdout.decode()
    check("DIR" in out and "s3://s3cmd-basic/dir/" in out, "s3cmd ls of the bucket:\n" + out)
    out = c.run("ls", "s3://s3cmd-basic/dir/").stdout.decode()
    listed = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    eq(listed, sorted("s3://s3cmd-basic/dir/" + n for n in files), "s3cmd ls of dir/")
    out = c.run("ls", "--recursive", "s3://s3cmd-basic").stdout.decode()
    sizes = {line.split()[-1]: int(line.split()[-2]) for line in out.splitlines() if line.strip()}
    eq(sizes, {"s3://s3cmd-basic/dir/" + n: len(d) for n, d in files.items()}, "s3cmd ls --recursive sizes")
    # Objects written by s3cmd have the right ETag.
    s3 = srv.client()
    for name, data in files.items():
        eq(s3.head_object(Bucket="s3cmd-basic", Key="dir/" + name)["ETag"], '"%s"' % harness.md5_hex(data), "ETag of " + name)
    p = c.run("rb", "s3://s3cmd-basic", check_rc=False)
    check(p.returncode != 0 and b"BucketNotEmpty" in p.stdout + p.stderr, "rb of a non-empty bucket: rc %d %r" % (p.returncode, (p.stdout + p.stderr)[-400:]))
    c.run("del", "s3://s3cmd-basic/dir/f0.bin")
    p = c.run("get", "--force", "s3://s3cmd-basic/dir/f0.bin", os.path.join(TMP, "gone"), check_rc=False)
    check(p.returncode != 0, "get of a deleted object succeeded")
    c.run("del", "--recursive", "--force", "s3://s3cmd-basic/dir/")
    out = c.run("ls", "--recursive", "s3://s3cmd-basic").stdout.decode()
    eq(out.strip(), "", "listing after del --recursive")
    c.run("rb", "s3://s3cmd-basic")
    out = c.run("ls").stdout.decode()
    check("s3://s3cmd-basic" not in out, "bucket still listed after rb:\n" + out)


def test_info(srv):
    c = S3cmd(srv)
    c.run("mb", "s3://s3cmd-info")
    data = harness.random_bytes(5555, seed=300)
    write(os.path.join(TMP, "info.txt"), data)
    c.run("put", "--mime-type=text/plain", "--add-header=x-amz-meta-owner:tests", os.path.join(TMP, "info.txt"), "s3://s3cmd-info/info.txt")
    out = c.run("info", "s3://s3cmd-info/info.txt").stdout.decode()
    fields = {}
    for line in out.splitlines():
        if ":" in line:
            k, _, v = line.strip().partition(":")
            fields[k.strip()] = v.strip()
    eq(fields.get("File size"), "5555", "s3cmd info File size")
    eq(fields.get("MIME type"), "text/plain", "s3cmd info MIME type")
    eq(fields.get("MD5 sum"), harness.md5_hex(data), "s3cmd info MD5 sum")
    eq(fields.get("x-amz-meta-owner"), "tests", "s3cmd info metadata")
    out = c.run("info", "s3://s3cmd-info").stdout.decode()
    check("s3://s3cmd-info/ (bucket)" in out, "s3cmd info of the bucket:\n" + out)
    check("Location:" in out, "s3cmd info of the bucket lacks Location:\n" + out)


def test_sync_and_recursive_put(srv):
    c = S3cmd(srv)
    c.run("mb", "s3://s3cmd-sync")
    tree = {"a.txt": b"a", "b/c.txt": b"cc", "b/d/e.bin": harness.random_bytes(70000, seed=301), "sp ace/f+g.txt": b"awkward"}
    for rel, data in tree.items():
        write(os.path.join(TMP, "tree", rel), data)
    c.run("sync", os.path.join(TMP, "tree") + "/", "s3://s3cmd-sync/t/")
    c.run("sync", "s3://s3cmd-sync/t/", os.path.join(TMP, "tree-back") + "/")
    for rel, data in tree.items():
        same_bytes(read(os.path.join(TMP, "tree-back", rel)), data, "synced back " + rel)
    c.run("del", "--recursive", "--force", "s3://s3cmd-sync/")
    c.run("rb", "s3://s3cmd-sync")


TESTS = [test_mb_put_get_ls_del_rb, test_info, test_sync_and_recursive_put]

if __name__ == "__main__":
    try:
        harness.require_tool("s3cmd")
    except harness.Skip as e:
        print("SKIP: %s" % e)
        sys.exit(harness.SKIP)
    TMP = tempfile.mkdtemp(prefix="shard-s3cmd-")
    try:
        harness.main(TESTS)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
