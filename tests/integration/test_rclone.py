"""test_rclone.py: rclone's S3 backend (provider Other) against shardstore.

The remote "ss" is configured entirely through RCLONE_CONFIG_SS_* variables;
RCLONE_CONFIG points at an empty file. Skips (77) when rclone is missing.
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

TREE = {
    "a.txt": b"alpha\n",
    "empty": b"",
    "sub/b.bin": None,  # random, filled below
    "sub/deeper/c.bin": None,
    "sp ace/ünï cödé+%.txt": b"awkward name\n",
}


def rclone(srv, *args, check_rc=True, timeout=180):
    env = dict(os.environ)
    for k in list(env):
        # AWS_* (e.g. AWS_CA_BUNDLE) would reach rclone's AWS SDK.
        if k.startswith(("RCLONE_", "AWS_")):
            del env[k]
    empty = os.path.join(TMP, "rclone.conf")
    if not os.path.exists(empty):
        open(empty, "w").close()
    env.update(
        RCLONE_CONFIG=empty,
        RCLONE_CONFIG_SS_TYPE="s3",
        RCLONE_CONFIG_SS_PROVIDER="Other",
        RCLONE_CONFIG_SS_ENV_AUTH="false",
        RCLONE_CONFIG_SS_ACCESS_KEY_ID=srv.access_key,
        RCLONE_CONFIG_SS_SECRET_ACCESS_KEY=srv.secret_key,
        RCLONE_CONFIG_SS_REGION=harness.REGION,
        RCLONE_CONFIG_SS_ENDPOINT=srv.endpoint,
        RCLONE_CONFIG_SS_FORCE_PATH_STYLE="true",
    )
    argv = [harness.require_tool("rclone"), "--retries", "1", "--low-level-retries", "1", "--contimeout", "10s", "--timeout", "60s"] + list(args)
    return harness.run_cmd(argv, timeout=timeout, env=env, check_rc=check_rc)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def make_tree(root):
    tree = {}
    for i, (rel, data) in enumerate(sorted(TREE.items())):
        if data is None:
            data = harness.random_bytes(300000 + i * 1000, seed=400 + i)
        write(os.path.join(root, rel), data)
        tree[rel] = data
    return tree


def test_roundtrip(srv):
    src = os.path.join(TMP, "src")
    tree = make_tree(src)
    rclone(srv, "mkdir", "ss:rclone-bucket")
    check("rclone-bucket" in [b["Name"] for b in srv.client().list_buckets()["Buckets"]], "rclone mkdir did not create the bucket")
    rclone(srv, "copy", src, "ss:rclone-bucket/dir")
    out = rclone(srv, "lsf", "-R", "--files-only", "ss:rclone-bucket").stdout.decode("utf-8")
    eq(sorted(out.splitlines()), sorted("dir/" + rel for rel in tree), "rclone lsf -R")
    out = rclone(srv, "lsf", "ss:rclone-bucket/dir").stdout.decode("utf-8")
    eq(sorted(out.splitlines()), sorted(["a.txt", "empty", "sp ace/", "sub/"]), "rclone lsf of dir")
    for rel, data in tree.items():
        out = rclone(srv, "cat", "ss:rclone-bucket/dir/" + rel).stdout
        same_bytes(out, data, "rclone cat " + rel)
    out = rclone(srv, "cat", "--offset", "10", "--count", "20", "ss:rclone-bucket/dir/sub/b.bin").stdout
    same_bytes(out, tree["sub/b.bin"][10:30], "rclone cat --offset --count")
    # md5sum from the server (ETags) matches the local files.
    out = rclone(srv, "md5sum", "ss:rclone-bucket/dir").stdout.decode("utf-8")
    sums = {}
    for line in out.splitlines():
        h, _, name = line.partition("  ")
        sums[name] = h
    eq(sums, {rel: harness.md5_hex(d) for rel, d in tree.items()}, "rclone md5sum")
    back = os.path.join(TMP, "back")
    rclone(srv, "copy", "ss:rclone-bucket/dir", back)
    for rel, data in tree.items():
        same_bytes(read(os.path.join(back, rel)), data, "copied back " + rel)
    rclone(srv, "check", src, "ss:rclone-bucket/dir")
    # A changed file is seen by check and fixed by sync.
    write(os.path.join(src, "a.txt"), b"changed\n")
    p = rclone(srv, "check", src, "ss:rclone-bucket/dir", check_rc=False)
    check(p.returncode != 0, "rclone check missed a changed file")
    rclone(srv, "sync", src, "ss:rclone-bucket/dir")
    rclone(srv, "check", src, "ss:rclone-bucket/dir")
    out = rclone(srv, "cat", "ss:rclone-bucket/dir/a.txt").stdout
    eq(out, b"changed\n", "a.txt after sync")
    # Server-side copy and move.
    rclone(srv, "copyto", "ss:rclone-bucket/dir/a.txt", "ss:rclone-bucket/copy.txt")
    rclone(srv, "moveto", "ss:rclone-bucket/copy.txt", "ss:rclone-bucket/moved.txt")
    eq(rclone(srv, "cat", "ss:rclone-bucket/moved.txt").stdout, b"changed\n", "moved file")
    out = rclone(srv, "lsf", "ss:rclone-bucket").stdout.decode()
    check("copy.txt" not in out.splitlines(), "moveto left its source")
    # rmdir of a non-empty bucket fails; delete + rmdir empties and removes it.
    p = rclone(srv, "rmdir", "ss:rclone-bucket", check_rc=False)
    check(p.returncode != 0, "rclone rmdir of a non-empty bucket succeeded")
    rclone(srv, "delete", "ss:rclone-bucket")
    out = rclone(srv, "lsf", "-R", "ss:rclone-bucket").stdout.decode()
    eq(out.strip(), "", "listing after rclone delete")
    rclone(srv, "rmdir", "ss:rclone-bucket")
    check("rclone-bucket" not in [b["Name"] for b in srv.client().list_buckets()["Buckets"]], "rclone rmdir left the bucket")


def test_size_and_purge(srv):
    src = os.path.join(TMP, "src2")
    tree = make_tree(src)
    rclone(srv, "mkdir", "ss:rclone-purge")
    rclone(srv, "copy", src, "ss:rclone-purge")
    out = rclone(srv, "size", "--json", "ss:rclone-purge").stdout.decode()
    import json

    info = json.loads(out)
    eq(info.get("count"), len(tree), "rclone size count")
    eq(info.get("bytes"), sum(len(d) for d in tree.values()), "rclone size bytes")
    rclone(srv, "purge", "ss:rclone-purge")
    check("rclone-purge" not in [b["Name"] for b in srv.client().list_buckets()["Buckets"]], "rclone purge left the bucket")


TESTS = [test_roundtrip, test_size_and_purge]

if __name__ == "__main__":
    try:
        harness.require_tool("rclone")
    except harness.Skip as e:
        print("SKIP: %s" % e)
        sys.exit(harness.SKIP)
    TMP = tempfile.mkdtemp(prefix="shard-rclone-")
    try:
        harness.main(TESTS)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
