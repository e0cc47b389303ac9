"""test_list_clients.py: listing pagination through real clients.

A few thousand keys (awkward but printable names: aws s3 ls prints one key
per line) are listed by `aws s3 ls --recursive`, by `aws s3api
list-objects-v2 --max-items N --page-size M` resumed with --starting-token,
and by boto3's paginators for list_objects_v2 and list_objects (with a
Delimiter); every result is compared with the model of test_list_model.py.
"""

import json
import os
import random
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq  # noqa: E402
from test_list_model import Model, body_for  # noqa: E402

SEED = int(os.environ.get("SHARD_SEED", "7"))
BUCKET = "clients"
# Printable awkward pieces (no newline or tab: aws s3 ls prints a key per line).
PIECES = ["a", "b", "/", "//", " ", "+", "%", "%2F", "&", "<", ">", '"', "'", "é", "日本", "😀", "~", ".", "-", "0", "x y", "=", "?", "#"]
DIRS = ["", "d/", "d/e/", "sp ace/", "x+y/", "日/", "%/", "a/b/c/"]


def keys_for(rnd, n):
    out = set()
    while len(out) < n:
        k = rnd.choice(DIRS) + "".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 6)))
        if k.strip() != k:
            k = "k" + k + "k"  # aws s3 ls strips nothing, but keep lines unambiguous
        out.add(k)
    long_head = "long/" + "é" * 240
    for i in range(10):
        out.add(long_head + "/%03d" % i + "z" * (i * 50))
    return sorted(out)


STATE = {}


def setup(srv):
    if "model" in STATE:
        return STATE["model"]
    rnd = random.Random(SEED)
    s3 = srv.client(max_pool_connections=16)
    s3.create_bucket(Bucket=BUCKET)
    model = Model()
    keys = keys_for(rnd, 3000)
    bodies = {k: body_for(k, 0) for k in keys}
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=BUCKET, Key=k, Body=bodies[k]), keys))
    for k in keys:
        model.put(k, bodies[k])
    STATE["model"] = model
    return model


class Cli:
    def __init__(self, srv):
        self.srv = srv
        self.aws = harness.require_tool("aws")
        self.tmp = tempfile.mkdtemp(prefix="shard-listcli-")
        self.config = os.path.join(self.tmp, "config")
        with open(self.config, "w") as f:
            f.write("[default]\n")
        self.creds = os.path.join(self.tmp, "credentials")
        open(self.creds, "w").close()

    def run(self, *args):
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            AWS_ACCESS_KEY_ID=self.srv.access_key,
            AWS_SECRET_ACCESS_KEY=self.srv.secret_key,
            AWS_DEFAULT_REGION=harness.REGION,
            AWS_CONFIG_FILE=self.config,
            AWS_SHARED_CREDENTIALS_FILE=self.creds,
            AWS_EC2_METADATA_DISABLED="true",
            AWS_PAGER="",
            PYTHONIOENCODING="utf-8",
        )
        argv = [self.aws] + list(args) + ["--endpoint-url", self.srv.endpoint]
        return harness.run_cmd(argv, timeout=240, env=env)

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def model_all(model, prefix=b"", delim=None):
    out, after = [], b""
    while True:
        page, truncated = model.page(prefix, delim, after, 1000)
        out += page
        if not truncated:
            return out
        after = page[-1][1]


def test_aws_s3_ls_recursive(srv):
    model = setup(srv)
    cli = Cli(srv)
    try:
        p = cli.run("s3", "ls", "--recursive", "s3://%s/" % BUCKET)
        lines = p.stdout.decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        got = []
        for line in lines:
            # "YYYY-MM-DD HH:MM:SS" + " " + size (10 wide) + " " + key
            size = int(line[19:30])
            key = line[31:]
            got.append(key.encode())
            eq(size, model.objs[key.encode()][0], "size of %r in aws s3 ls" % key)
        want = [k for t, k in model_all(model) if t == "K"]
        eq(len(got), len(want), "aws s3 ls --recursive line count")
        eq(got, want, "aws s3 ls --recursive keys")
        # Non-recursive: one level, PRE lines for the common prefixes.
        p = cli.run("s3", "ls", "s3://%s/d/" % BUCKET)
        pre = sorted(line.strip()[4:].encode() for line in p.stdout.decode("utf-8").split("\n") if line.strip().startswith("PRE "))
        want_pre = sorted(k[2:] for t, k in model_all(model, b"d/", b"/") if t == "P")
        eq(pre, want_pre, "aws s3 ls PRE lines under d/")
    finally:
        cli.close()


def test_aws_s3api_max_items(srv):
    model = setup(srv)
    want = [k for t, k in model_all(model) if t == "K"]
    cli = Cli(srv)
    try:
        for max_items, page_size in [(700, 250), (1000, 1000), (333, 7)]:
            got, token, calls = [], None, 0
            while True:
                args = ["s3api", "list-objects-v2", "--bucket", BUCKET, "--max-items", str(max_items), "--page-size", str(page_size), "--output", "json"]
                if token:
                    args += ["--starting-token", token]
                out = json.loads(cli.run(*args).stdout.decode("utf-8") or "{}")
                batch = [o["Key"].encode() for o in out.get("Contents", [])]
                check(len(batch) <= max_items, "--max-items %d returned %d keys" % (max_items, len(batch)))
                got += batch
                calls += 1
                token = out.get("NextToken")
                if not token:
                    break
                eq(len(batch), max_items, "a resumable aws s3api page holds --max-items keys")
                check(calls < 40, "aws s3api paging does not end")
                if page_size == 7 and calls >= 2:
                    # Small pages: two resumed calls prove the token works;
                    # finish from there with large pages.
                    rest = [o["Key"].encode() for o in json.loads(cli.run("s3api", "list-objects-v2", "--bucket", BUCKET, "--starting-token", token, "--max-items", "100000", "--output", "json").stdout.decode("utf-8"))["Contents"]]
                    got += rest
                    break
            eq(len(got), len(want), "aws s3api --max-items %d --page-size %d count" % (max_items, page_size))
            eq(got, want, "aws s3api --max-items %d --page-size %d keys" % (max_items, page_size))
        # A prefix and a delimiter through the CLI.
        out = json.loads(cli.run("s3api", "list-objects-v2", "--bucket", BUCKET, "--prefix", "a/b/", "--delimiter", "/", "--output", "json").stdout.decode("utf-8") or "{}")
        m = model_all(model, b"a/b/", b"/")
        eq([o["Key"].encode() for o in out.get("Contents", [])], [k for t, k in m if t == "K"], "aws s3api prefix+delimiter keys")
        eq([p["Prefix"].encode() for p in out.get("CommonPrefixes", [])], [k for t, k in m if t == "P"], "aws s3api prefix+delimiter prefixes")
    finally:
        cli.close()


def test_boto3_paginators(srv):
    model = setup(srv)
    s3 = srv.client()
    for page_size in (1000, 333, 50):
        got, pages = [], 0
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, PaginationConfig={"PageSize": page_size}):
            pages += 1
            keys = [o["Key"].encode() for o in page.get("Contents", [])]
            check(len(keys) <= page_size, "paginator page of %d > %d" % (len(keys), page_size))
            got += keys
        want = [k for t, k in model_all(model) if t == "K"]
        eq(got, want, "list_objects_v2 paginator PageSize=%d" % page_size)
        eq(pages, -(-len(want) // page_size), "list_objects_v2 paginator pages for PageSize=%d" % page_size)
    for prefix, delim, page_size in [("", "/", 3), ("d/", "/", 2), ("", "é", 5), ("a/", "b/", 1), ("", "//", 4)]:
        keys, prefixes = [], []
        for page in s3.get_paginator("list_objects").paginate(Bucket=BUCKET, Prefix=prefix, Delimiter=delim, PaginationConfig={"PageSize": page_size}):
            keys += [o["Key"].encode() for o in page.get("Contents", [])]
            prefixes += [p["Prefix"].encode() for p in page.get("CommonPrefixes", [])]
        m = model_all(model, prefix.encode(), delim.encode())
        ctx = "list_objects paginator prefix=%r delimiter=%r PageSize=%d" % (prefix, delim, page_size)
        eq(keys, [k for t, k in m if t == "K"], ctx + ": keys")
        eq(prefixes, [k for t, k in m if t == "P"], ctx + ": prefixes")
        # And v2 with the same delimiter, through its paginator.
        keys2, prefixes2 = [], []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix, Delimiter=delim, PaginationConfig={"PageSize": page_size}):
            keys2 += [o["Key"].encode() for o in page.get("Contents", [])]
            prefixes2 += [p["Prefix"].encode() for p in page.get("CommonPrefixes", [])]
        eq((keys2, prefixes2), (keys, prefixes), ctx + ": v2 paginator")


if __name__ == "__main__":
    harness.main([test_aws_s3_ls_recursive, test_aws_s3api_max_items, test_boto3_paginators])
