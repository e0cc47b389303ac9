"""test_shard_bench.py: `shard bench` runs every op briefly against a real
server and prints parseable RESULT lines with errors=0 (and JSON); counts,
--count, --fanout and --no-prepare behave as documented; errors make the
exit status non-zero."""
import atexit
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402
import shard_util as su  # noqa: E402

def near(got, want, what):
    h.check(abs(got - want) <= 0.02 * want + 1e-9, "%s: %.4f, want %.4f" % (what, got, want))


RESULT = re.compile(r"^RESULT op=(\w+) ops=(\d+) secs=([\d.]+) ops_per_s=([\d.]+) MBps=([\d.]+) "
                    r"keys_per_s=([\d.]+) p50_ms=([\d.]+) p90_ms=([\d.]+) p99_ms=([\d.]+) errors=(\d+)$")


def results(p):
    out = {}
    for line in p.stdout.decode().splitlines():
        m = RESULT.match(line)
        h.check(m is not None, "unparseable line %r" % line)
        out[m.group(1)] = dict(ops=int(m.group(2)), secs=float(m.group(3)), ops_per_s=float(m.group(4)),
                               MBps=float(m.group(5)), keys_per_s=float(m.group(6)), p50=float(m.group(7)),
                               p90=float(m.group(8)), p99=float(m.group(9)), errors=int(m.group(10)))
    return out


def test_every_op(srv):
    tmp = tempfile.mkdtemp(prefix="shard-bench-")
    atexit.register(shutil.rmtree, tmp, True)
    for op in ("put", "get", "range", "head", "list", "mixed"):
        jpath = os.path.join(tmp, op + ".json")
        p = su.run(srv, "bench", op, "--bucket", "benchb", "--duration", "1", "--size", "256K",
                   "--objects", "24", "--concurrency", "4", "--range-size", "64K", "--json", jpath)
        r = results(p)
        want = {"mixed": {"get", "head", "put"}}.get(op, {op})
        h.eq(set(r), want, "%s: result lines" % op)
        for name, v in r.items():
            h.eq(v["errors"], 0, "%s/%s errors" % (op, name))
            h.check(v["ops"] > 0, "%s/%s ran no op" % (op, name))
            h.check(v["p50"] <= v["p90"] <= v["p99"], "%s percentiles ordered: %s" % (name, v))
        if op == "put":
            h.eq(r["put"]["ops"], 24, "put stops after --objects")
            near(r["put"]["MBps"] * r["put"]["secs"], 24 * 0.25, "put MiB moved")
        if op in ("get", "range"):
            per = 0.25 if op == "get" else 0.0625
            near(r[op]["MBps"] * r[op]["secs"] / r[op]["ops"], per, "%s MiB per op" % op)
        if op == "list":
            h.check(r["list"]["keys_per_s"] > 0, "list counts keys")
        with open(jpath) as f:
            doc = json.load(f)
        h.eq(sorted(x["op"] for x in doc["results"]), sorted(want), "%s JSON" % op)
    s3 = srv.client()
    h.eq(s3.list_objects_v2(Bucket="benchb", Prefix="bench/")["KeyCount"], 24, "prepared keys")


def test_count_fanout_list_pages(srv):
    p = su.run(srv, "bench", "put", "--bucket", "benchf", "--prefix", "f/", "--fanout", "10", "--size", "0",
               "--objects", "35", "--concurrency", "3", "--duration", "0")
    h.eq(results(p)["put"]["ops"], 35, "put count")
    s3 = srv.client()
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="benchf", Prefix="f/")["Contents"]]
    h.eq(keys, ["f/%08d/%08d" % (i // 10, i % 10) for i in range(35)], "fanout key layout")
    p = su.run(srv, "bench", "get", "--bucket", "benchf", "--prefix", "f/", "--fanout", "10", "--size", "0",
               "--objects", "35", "--no-prepare", "--count", "50", "--duration", "0", "--concurrency", "4")
    h.eq(results(p)["get"]["ops"], 50, "--count bounds the ops")
    # 35 keys in pages of 10: 4 pages per pass (10+10+10+5) = 35 keys per 4 ops.
    p = su.run(srv, "bench", "list", "--bucket", "benchf", "--prefix", "f/", "--max-keys", "10", "--no-prepare",
               "--count", "8", "--duration", "0", "--concurrency", "1")
    r = results(p)["list"]
    h.eq(r["ops"], 8, "list pages")
    near(r["keys_per_s"] * r["secs"], 70, "keys over two passes")
    p = su.run(srv, "bench", "list", "--bucket", "benchf", "--prefix", "f/", "--delimiter", "/", "--first-page",
               "--no-prepare", "--count", "5", "--duration", "0", "--concurrency", "2")
    r = results(p)["list"]
    near(r["keys_per_s"] * r["secs"], 5 * 4, "4 common prefixes per page")
    # Missing objects are errors: non-zero exit, still a RESULT line.
    p = su.run(srv, "bench", "get", "--bucket", "benchf", "--prefix", "nothing/", "--no-prepare",
               "--count", "5", "--duration", "0", rc=1)
    h.eq(results(p)["get"]["errors"], 5, "errors counted")
    p = su.run(srv, "bench", "nope", "--bucket", "x-bench", rc=2)
    p = su.run(srv, "bench", "get", rc=2)


if __name__ == "__main__":
    h.main([test_every_op, test_count_fanout_list_pages])
