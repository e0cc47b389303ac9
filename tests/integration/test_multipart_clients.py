"""test_multipart_clients.py: multipart uploads by real S3 clients.

- `aws s3 cp` (awscli 1.x, its defaults: 8 MiB parts, 10 threads) of a
  1 GiB file up and down;
- `rclone copy` of a 100 MiB file with 16 MiB parts, then `rclone check`
  and a copy back;
- `s3cmd put` of a 40 MiB file with 5 MiB parts and `s3cmd get`.
Each compares the bytes (cmp / streamed md5) and the multipart ETag the
server computed. Each test skips when its tool is missing (the script exits
77 when all do). Files are random (os.urandom), in a temp dir removed at
the end.
"""

import hashlib
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
import mp_util as mp  # noqa: E402
from harness import check, eq  # noqa: E402

MIB = mp.MIB
CONFIG = "volume_size = 2G\nmax_volumes = 1\n"
TMP = None


def make_file(name, size, chunk, dirname=None):
    """Random file of 'size' bytes; returns (path, md5 hex, multipart ETag
    for parts of 'chunk' bytes)."""
    path = os.path.join(dirname or TMP, name)
    whole = hashlib.md5()
    part_md5s = []
    with open(path, "wb") as f:
        left = size
        while left:
            b = os.urandom(min(chunk, left))
            f.write(b)
            whole.update(b)
            part_md5s.append(hashlib.md5(b).digest())
            left -= len(b)
    return path, whole.hexdigest(), mp.mp_etag_from_md5s(part_md5s)


def same_files(a, b, what):
    if shutil.which("cmp"):
        p = harness.run_cmd(["cmp", a, b], check_rc=False, timeout=120)
        if p.returncode != 0:
            raise harness.Failure("%s: cmp %s %s: %s" % (what, a, b, (p.stdout + p.stderr).decode("utf-8", "replace")[:500]))
    else:
        eq(mp.file_md5(b), mp.file_md5(a), what + ": md5")


def remove(*paths):
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def clean_env():
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("AWS_", "RCLONE_")):
            del env[k]
    return env


def check_no_uploads(srv, b):
    eq(mp.upload_ids(srv.client(), b), [], "multipart uploads left in %s" % b)


# --------------------------------------------------------------------------
# aws s3 cp


def test_awscli_cp_1g(srv):
    aws = harness.require_tool("aws")
    s3 = srv.client()
    s3.create_bucket(Bucket="mp-awscli")
    cfg = os.path.join(TMP, "aws-config")
    with open(cfg, "w") as f:
        f.write("[default]\n")
    creds = os.path.join(TMP, "aws-credentials")
    open(creds, "w").close()
    env = clean_env()
    env.update(
        AWS_ACCESS_KEY_ID=srv.access_key,
        AWS_SECRET_ACCESS_KEY=srv.secret_key,
        AWS_DEFAULT_REGION=harness.REGION,
        AWS_CONFIG_FILE=cfg,
        AWS_SHARED_CREDENTIALS_FILE=creds,
        AWS_EC2_METADATA_DISABLED="true",
        AWS_PAGER="",
    )
    src, md5, etag = make_file("aws-1g.bin", 1 << 30, 8 * MIB)  # awscli's default part size
    dst = os.path.join(TMP, "aws-1g.down")
    try:
        harness.run_cmd([aws, "s3", "cp", "--only-show-errors", src, "s3://mp-awscli/dir/big.bin", "--endpoint-url", srv.endpoint], env=env, timeout=300)
        h = s3.head_object(Bucket="mp-awscli", Key="dir/big.bin")
        eq(h["ContentLength"], 1 << 30, "size of the 1 GiB object")
        eq(h["ETag"], etag, "ETag of the 1 GiB object uploaded in 8 MiB parts")
        check_no_uploads(srv, "mp-awscli")
        harness.run_cmd([aws, "s3", "cp", "--only-show-errors", "s3://mp-awscli/dir/big.bin", dst, "--endpoint-url", srv.endpoint], env=env, timeout=300)
        eq(os.path.getsize(dst), 1 << 30, "size of the downloaded 1 GiB file")
        same_files(src, dst, "aws s3 cp of 1 GiB up and down")
    finally:
        remove(src, dst)
    s3.delete_object(Bucket="mp-awscli", Key="dir/big.bin")


# --------------------------------------------------------------------------
# rclone


def rclone(srv, *args, timeout=180):
    env = clean_env()  # AWS_CA_BUNDLE makes Debian's rclone refuse plain http
    conf = os.path.join(TMP, "rclone.conf")
    open(conf, "a").close()
    env.update(
        RCLONE_CONFIG=conf,
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
    return harness.run_cmd(argv, timeout=timeout, env=env)


def test_rclone_multipart(srv):
    harness.require_tool("rclone")
    s3 = srv.client()
    s3.create_bucket(Bucket="mp-rclone")
    updir = os.path.join(TMP, "rclone-up")
    downdir = os.path.join(TMP, "rclone-down")
    os.makedirs(updir)
    src, md5, etag = make_file("r100.bin", 100 * MIB, 16 * MIB, updir)
    try:
        rclone(srv, "copy", "--s3-upload-cutoff", "16M", "--s3-chunk-size", "16M", "--s3-upload-concurrency", "4", updir, "ss:mp-rclone/up")
        h = s3.head_object(Bucket="mp-rclone", Key="up/r100.bin")
        eq(h["ContentLength"], 100 * MIB, "size of rclone's object")
        eq(h["ETag"], etag, "ETag of rclone's upload in 16 MiB parts (multipart expected)")
        check_no_uploads(srv, "mp-rclone")
        rclone(srv, "check", "--one-way", updir, "ss:mp-rclone/up")
        rclone(srv, "check", "--download", updir, "ss:mp-rclone/up")
        rclone(srv, "copy", "ss:mp-rclone/up", downdir)
        same_files(src, os.path.join(downdir, "r100.bin"), "rclone copy of 100 MiB up and down")
    finally:
        shutil.rmtree(updir, ignore_errors=True)
        shutil.rmtree(downdir, ignore_errors=True)


# --------------------------------------------------------------------------
# s3cmd


def test_s3cmd_multipart(srv):
    bin_ = harness.require_tool("s3cmd")
    s3 = srv.client()
    s3.create_bucket(Bucket="mp-s3cmd")
    hp = "127.0.0.1:%d" % srv.port
    cfg = os.path.join(TMP, "s3cfg")
    with open(cfg, "w") as f:
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
    env = dict(os.environ)
    env["HOME"] = TMP

    def run(*args):
        return harness.run_cmd([bin_, "-c", cfg, "--no-progress"] + list(args), env=env, timeout=180)

    src, md5, etag = make_file("s40.bin", 40 * MIB, 5 * MIB)
    dst = os.path.join(TMP, "s40.down")
    try:
        run("put", "--multipart-chunk-size-mb=5", src, "s3://mp-s3cmd/s40.bin")
        h = s3.head_object(Bucket="mp-s3cmd", Key="s40.bin")
        eq(h["ContentLength"], 40 * MIB, "size of s3cmd's object")
        eq(h["ETag"], etag, "ETag of s3cmd's upload in 5 MiB parts (multipart expected)")
        check_no_uploads(srv, "mp-s3cmd")
        run("get", "--force", "s3://mp-s3cmd/s40.bin", dst)
        same_files(src, dst, "s3cmd put/get of 40 MiB")
    finally:
        remove(src, dst)


TESTS = [
    test_awscli_cp_1g,
    test_rclone_multipart,
    test_s3cmd_multipart,
]

if __name__ == "__main__":
    TMP = tempfile.mkdtemp(prefix="mp-clients-")
    try:
        harness.main(TESTS, config=CONFIG)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
