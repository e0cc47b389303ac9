"""test_users_cli.py: `shardstore admin ...` against a running server, and
real clients with one profile per user.

- `shardstore admin` runs `shard admin` (client/cli_admin.c on libshard;
  the server links no libcurl): the same commands through `shard admin`,
  query values that need encoding, the program name in messages, and a
  clear error when no shard tool is found;

- user/key/grant/revoke/bucket public through the CLI, --json and text
  output, exit status 1 with a message on stderr for errors and for a
  non-admin caller;
- aws-cli with a profile per user (temp AWS_CONFIG_FILE and
  AWS_SHARED_CREDENTIALS_FILE): each profile sees its own buckets, a
  read-only profile cannot upload;
- rclone purge of a bucket with several keys, by its owner.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

TMP = None


def admin(srv, *args, json_out=True, check_rc=True, access_key=None, secret_key=None):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("AWS_", "SHARDSTORE_")):
            del env[k]
    env["SHARDSTORE_ACCESS_KEY"] = access_key or srv.access_key
    env["SHARDSTORE_SECRET_KEY"] = secret_key or srv.secret_key
    argv = [srv.binary, "admin", "--endpoint", srv.endpoint] + (["--json"] if json_out else []) + list(args)
    p = h.run_cmd(argv, timeout=60, env=env, check_rc=check_rc)
    if check_rc and json_out:
        return json.loads(p.stdout)
    return p


def admin_env(srv):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SHARDSTORE_"))}
    env["SHARDSTORE_ACCESS_KEY"] = srv.access_key
    env["SHARDSTORE_SECRET_KEY"] = srv.secret_key
    return env


def aws(srv, profile, *args, check_rc=True):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("AWS_"):
            del env[k]
    env.update(
        AWS_CONFIG_FILE=os.path.join(TMP, "aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=os.path.join(TMP, "aws-credentials"),
        AWS_PROFILE=profile,
        AWS_EC2_METADATA_DISABLED="true",
        AWS_PAGER="",
    )
    argv = [h.require_tool("aws")] + list(args) + ["--endpoint-url", srv.endpoint]
    return h.run_cmd(argv, timeout=120, env=env, check_rc=check_rc)


def test_cli_users_keys_grants(srv):
    u = admin(srv, "user", "add", "train")
    h.eq(u["name"], "train", "user add --json")
    admin(srv, "user", "add", "prep", "--admin")
    users = admin(srv, "user", "list")["users"]
    h.eq({x["name"]: x["admin"] for x in users}, {"prep": True, "train": False}, "user list")
    text = admin(srv, "user", "list", json_out=False).stdout.decode()
    h.check("name=prep" in text and "admin=true" in text and "name=train" in text, "text output: %r" % text)
    k = admin(srv, "key", "add", "prep")
    h.check(len(k["access_key"]) >= 16 and len(k["secret_key"]) >= 32, "key add prints the pair: %r" % k)
    ro = admin(srv, "key", "add", "train", "--read-only")
    h.eq(ro["read_only"], True, "read-only key")
    keys = admin(srv, "key", "list", "train")["keys"]
    h.eq([x["access_key"] for x in keys], [ro["access_key"]], "key list USER")
    h.eq(len(admin(srv, "key", "list")["keys"]), 2, "key list (all)")
    s3 = srv.client(access_key=k["access_key"], secret_key=k["secret_key"])
    s3.create_bucket(Bucket="shards")
    s3.put_object(Bucket="shards", Key="dataset/0.tar", Body=b"zero")
    s3.put_object(Bucket="shards", Key="private/x", Body=b"x")
    train = srv.client(access_key=ro["access_key"], secret_key=ro["secret_key"])
    with h.client_error("AccessDenied", 403):
        train.get_object(Bucket="shards", Key="dataset/0.tar")
    p = admin(srv, "grant", "train", "shards", "read", "--prefix", "dataset/", json_out=False)
    h.eq(p.returncode, 0, "grant exit status")
    h.eq(train.get_object(Bucket="shards", Key="dataset/0.tar")["Body"].read(), b"zero", "granted read")
    with h.client_error("AccessDenied", 403):
        train.get_object(Bucket="shards", Key="private/x")
    grants = admin(srv, "grant", "list", "train")["grants"]
    h.eq([(g["bucket"], g["level"], g["prefix"]) for g in grants], [("shards", "read", "dataset/")], "grant list")
    admin(srv, "revoke", "train", "shards", json_out=False)
    with h.client_error("AccessDenied", 403):
        train.get_object(Bucket="shards", Key="dataset/0.tar")
    # bucket public on|off
    h.eq(srv.request("GET", "/shards/dataset/0.tar", sign=False).status, 403, "private")
    admin(srv, "bucket", "public", "shards", "on", json_out=False)
    h.eq(srv.request("GET", "/shards/dataset/0.tar", sign=False).status, 200, "public on")
    admin(srv, "bucket", "public", "shards", "off", json_out=False)
    h.eq(srv.request("GET", "/shards/dataset/0.tar", sign=False).status, 403, "public off")
    # The prep user is an admin: its key drives the CLI too.
    out = admin(srv, "user", "list", access_key=k["access_key"], secret_key=k["secret_key"])
    h.check(len(out["users"]) == 2, "admin user runs the CLI")
    # Errors: exit 1 and a message on stderr.
    p = admin(srv, "user", "add", "train", check_rc=False)
    h.eq(p.returncode, 1, "duplicate user exit status")
    h.check(b"already exists" in p.stderr, "stderr: %r" % p.stderr)
    p = admin(srv, "user", "list", check_rc=False, access_key=ro["access_key"], secret_key=ro["secret_key"])
    h.eq(p.returncode, 1, "non-admin exit status")
    h.check(b"AccessDenied" in p.stderr, "stderr: %r" % p.stderr)
    p = admin(srv, "user", "frobnicate", check_rc=False)
    h.eq(p.returncode, 1, "bad usage exit status")
    p = admin(srv, "key", "remove", ro["access_key"], json_out=False)
    with h.client_error("InvalidAccessKeyId", 403):
        train.list_buckets()
    admin(srv, "user", "remove", "prep", json_out=False)
    with h.client_error("InvalidAccessKeyId", 403):
        s3.list_buckets()


def test_awscli_profiles(srv):
    creds = {}
    for name, ro in (("ann", False), ("ben", False), ("ann-ro", True)):
        user = name.split("-")[0]
        if not ro:
            admin(srv, "user", "add", user)
        k = admin(srv, "key", "add", user, *(["--read-only"] if ro else []))
        creds[name] = k
    with open(os.path.join(TMP, "aws-credentials"), "w") as f:
        for name, k in creds.items():
            f.write("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % (name, k["access_key"], k["secret_key"]))
    with open(os.path.join(TMP, "aws-config"), "w") as f:
        for name in creds:
            f.write("[profile %s]\nregion = %s\n\n" % (name, h.REGION))
    aws(srv, "ann", "s3", "mb", "s3://ann-bkt")
    aws(srv, "ben", "s3", "mb", "s3://ben-bkt")
    src = os.path.join(TMP, "f.txt")
    with open(src, "wb") as f:
        f.write(b"hello from ann\n")
    aws(srv, "ann", "s3", "cp", src, "s3://ann-bkt/f.txt")
    ls_ann = aws(srv, "ann", "s3", "ls").stdout.decode()
    ls_ben = aws(srv, "ben", "s3", "ls").stdout.decode()
    h.check("ann-bkt" in ls_ann and "ben-bkt" not in ls_ann, "ann's ls: %r" % ls_ann)
    h.check("ben-bkt" in ls_ben and "ann-bkt" not in ls_ben, "ben's ls: %r" % ls_ben)
    p = aws(srv, "ben", "s3", "cp", "s3://ann-bkt/f.txt", os.path.join(TMP, "g.txt"), check_rc=False)
    h.check(p.returncode != 0 and b"403" in p.stderr + p.stdout, "ben denied: %r" % p.stderr[-300:])
    dst = os.path.join(TMP, "back.txt")
    aws(srv, "ann-ro", "s3", "cp", "s3://ann-bkt/f.txt", dst)
    with open(dst, "rb") as f:
        h.eq(f.read(), b"hello from ann\n", "read-only profile reads")
    p = aws(srv, "ann-ro", "s3", "cp", src, "s3://ann-bkt/g.txt", check_rc=False)
    h.check(p.returncode != 0 and b"AccessDenied" in p.stderr + p.stdout, "read-only profile cannot upload: %r" % p.stderr[-300:])
    out = json.loads(aws(srv, "ann", "s3api", "list-buckets").stdout)
    h.eq(out["Owner"]["DisplayName"], "ann", "aws s3api list-buckets owner")


def test_rclone_purge_by_owner(srv):
    rclone_bin = h.require_tool("rclone")
    admin(srv, "user", "add", "rc")
    k = admin(srv, "key", "add", "rc")
    s3 = srv.client(access_key=k["access_key"], secret_key=k["secret_key"])
    s3.create_bucket(Bucket="rc-purge")
    for i in range(7):
        s3.put_object(Bucket="rc-purge", Key="dir%d/obj-%d" % (i % 3, i), Body=b"x" * i)
    env = dict(os.environ)
    for key in list(env):
        if key.startswith(("RCLONE_", "AWS_")):
            del env[key]
    empty = os.path.join(TMP, "rclone.conf")
    open(empty, "w").close()
    env.update(
        RCLONE_CONFIG=empty,
        RCLONE_CONFIG_SS_TYPE="s3",
        RCLONE_CONFIG_SS_PROVIDER="Other",
        RCLONE_CONFIG_SS_ENV_AUTH="false",
        RCLONE_CONFIG_SS_ACCESS_KEY_ID=k["access_key"],
        RCLONE_CONFIG_SS_SECRET_ACCESS_KEY=k["secret_key"],
        RCLONE_CONFIG_SS_REGION=h.REGION,
        RCLONE_CONFIG_SS_ENDPOINT=srv.endpoint,
        RCLONE_CONFIG_SS_FORCE_PATH_STYLE="true",
    )
    base = [rclone_bin, "--retries", "1", "--low-level-retries", "1"]
    h.run_cmd(base + ["purge", "ss:rc-purge"], env=env)
    with h.client_error(("NoSuchBucket", "404"), 404):  # HEAD: no body, no code
        srv.client().head_bucket(Bucket="rc-purge")
    # Another user's rclone cannot purge a bucket it was not granted.
    s3.create_bucket(Bucket="rc-keep")
    s3.put_object(Bucket="rc-keep", Key="k", Body=b"k")
    admin(srv, "user", "add", "rc2")
    k2 = admin(srv, "key", "add", "rc2")
    env["RCLONE_CONFIG_SS_ACCESS_KEY_ID"] = k2["access_key"]
    env["RCLONE_CONFIG_SS_SECRET_ACCESS_KEY"] = k2["secret_key"]
    p = h.run_cmd(base + ["purge", "ss:rc-keep"], env=env, check_rc=False)
    h.check(p.returncode != 0, "purge by a stranger fails")
    h.eq(s3.get_object(Bucket="rc-keep", Key="k")["Body"].read(), b"k", "object survives a stranger's purge")


def test_shard_admin(srv):
    """`shard admin` is the admin client; `shardstore admin` hands over to it."""
    shard = os.path.join(os.environ.get("SHARD_BUILDDIR") or os.path.dirname(srv.binary), "shard")
    if not os.access(shard, os.X_OK):
        raise h.Failure("shard tool not built next to the server: %s" % shard)
    env = admin_env(srv)
    p = h.run_cmd([shard, "--endpoint-url", srv.endpoint, "admin", "--json", "user", "add", "carol"], env=env)
    h.eq(json.loads(p.stdout)["name"], "carol", "shard admin user add (endpoint before admin)")
    srv.client().create_bucket(Bucket="enc-bkt")
    # Query values with characters that need encoding reach the server intact.
    odd = "data set/a+b%20c/\u00e9&x=y/"
    h.run_cmd([shard, "admin", "--endpoint", srv.endpoint, "grant", "carol", "enc-bkt", "read",
               "--prefix", odd], env=env)
    grants = admin(srv, "grant", "list", "carol")["grants"]
    h.eq([(g["bucket"], g["prefix"]) for g in grants], [("enc-bkt", odd)], "prefix round trip")
    text = h.run_cmd([shard, "admin", "--endpoint", srv.endpoint, "user", "list"], env=env).stdout
    h.check(b"name=carol" in text, "shard admin text output: %r" % text)
    # Messages name the command the user typed.
    p = h.run_cmd([shard, "admin", "--endpoint", srv.endpoint, "user", "add", "carol"], env=env, check_rc=False)
    h.eq(p.returncode, 1, "shard admin error exit status")
    h.check(p.stderr.startswith(b"shard admin: HTTP 400") and b"already exists" in p.stderr,
            "shard admin stderr: %r" % p.stderr)
    p = admin(srv, "user", "add", "carol", check_rc=False)
    h.check(p.stderr.startswith(b"shardstore admin: HTTP 400"), "shardstore admin stderr: %r" % p.stderr)
    p = h.run_cmd([shard, "admin", "user", "frobnicate"], env=env, check_rc=False)
    h.check(p.returncode == 1 and b"usage: shard admin" in p.stderr, "usage: %r" % p.stderr)
    p = h.run_cmd([shard, "admin", "--endpoint", "http://127.0.0.1:1", "user", "list"], env=env, check_rc=False)
    h.check(p.returncode == 1 and p.stderr.startswith(b"shard admin: http://127.0.0.1:1"),
            "unreachable endpoint: %r" % p.stderr)
    # A shardstore with no shard next to it and none on PATH says so.
    lone = os.path.join(TMP, "lone")
    os.makedirs(lone, exist_ok=True)
    shutil.copy(srv.binary, os.path.join(lone, "shardstore"))
    env["PATH"] = lone
    p = h.run_cmd([os.path.join(lone, "shardstore"), "admin", "user", "list"], env=env, check_rc=False)
    h.check(p.returncode == 1 and b"cannot run the shard tool" in p.stderr, "no shard: %r" % p.stderr)


if __name__ == "__main__":
    TMP = tempfile.mkdtemp(prefix="shard-users-cli-")
    try:
        h.main([test_cli_users_keys_grants, test_awscli_profiles, test_rclone_purge_by_owner,
                test_shard_admin],
               config="log_level = debug\n")
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
