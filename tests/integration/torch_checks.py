"""torch_checks.py: the shardstore.torch checks of test_python_shardstore.py,
run in one child process of the Python that has torch (Debian's
python3-torch is built for /usr/bin/python3, while the tests run under
the Python on PATH), so torch is imported once. The parent made the
shards and passes: SHARD_TEST_BUCKET, SHARD_TEST_SHARDS (their count),
SHARD_TEST_KEYS (every sample key, JSON), SHARD_TEST_PROXY (a proxy that
cuts one connection and refuses the next few), and the AWS_* variables.
Exits 0 when every check passes; prints one line per check.
"""
import collections
import json
import os
import sys
import time

T0 = time.monotonic()

import torch
from torch.utils.data import DataLoader

import shardstore
from shardstore.torch import SampleDataset, ShardDataset, batch_loader, build_index

B = os.environ["SHARD_TEST_BUCKET"]
N = int(os.environ["SHARD_TEST_SHARDS"])
KEYS = json.loads(os.environ["SHARD_TEST_KEYS"])
URLS = "s3://%s/train/shard-{000000..%06d}.tar" % (B, N - 1)
failures = []


def check(cond, what):
    print("%s %5.1fs %s" % ("ok  " if cond else "FAIL", time.monotonic() - T0, what), flush=True)
    if not cond:
        failures.append(what)


def keys_of(loader):
    out = []
    for batch in loader:
        out.extend(batch["__key__"] if isinstance(batch, dict) else [s["__key__"] for s in batch])
    return out


def as_list(batch):
    return batch


def with_label(s):
    s["label"] = int(s["cls"])
    return s


def main():
    major, minor = (int(x) for x in str(torch.__version__).split(".")[:2])
    check((major, minor) >= (1, 13), "torch %s" % torch.__version__)
    ds = ShardDataset(URLS)
    for workers in (0, 2):
        got = keys_of(DataLoader(ds, batch_size=8, num_workers=workers, collate_fn=as_list))
        check(sorted(got) == sorted(KEYS) and len(got) == len(KEYS),
              "num_workers=%d: every sample exactly once (%d)" % (workers, len(got)))
    s = next(iter(DataLoader(ds, batch_size=None, num_workers=0)))
    check(sorted(k for k in s if not k.startswith("__")) == ["cls", "jpg", "json"], "fields")
    # Batches made in the worker (batch_size=), DataLoader(batch_size=None).
    for workers in (0, 2):
        bd = ShardDataset(URLS, batch_size=8, transform=with_label)
        batches = list(DataLoader(bd, batch_size=None, num_workers=workers))
        got = keys_of(batches)
        sizes = [len(b["__key__"]) for b in batches]
        check(sorted(got) == sorted(KEYS) and len(got) == len(KEYS),
              "batch_size=8, num_workers=%d: every sample exactly once (%d)" % (workers, len(got)))
        check(max(sizes) == 8 and sum(1 for n in sizes if n < 8) <= max(workers, 1),
              "batch_size=8, num_workers=%d: full batches but one per worker (%r)"
              % (workers, sizes))
        b = batches[0]
        check(isinstance(b["label"], torch.Tensor) and b["label"].shape == (8,)
              and isinstance(b["jpg"], list) and isinstance(b["jpg"][0], bytes),
              "batch_size=8: torch's default collate (labels stacked, bytes listed)")
    cut = keys_of(DataLoader(ShardDataset(URLS, batch_size=8, partial=False), batch_size=None))
    check(len(cut) == len(KEYS) // 8 * 8, "partial=False drops the short batch (%d)" % len(cut))
    lists = list(ShardDataset(URLS, batch_size=5, collate_fn=None))
    check(all(isinstance(b, list) for b in lists) and [s["__key__"] for b in lists for s in b]
          == keys_of(DataLoader(ds, batch_size=8, collate_fn=as_list)),
          "collate_fn=None: lists of samples, in order")
    try:
        ShardDataset(URLS, batch_size=0)
        check(False, "batch_size=0 raises")
    except ValueError:
        check(True, "batch_size=0 raises")
    # Two simulated ranks (the first with two workers; worker processes are
    # slow to start, so the rest run in this process).
    seen = collections.Counter()
    for rank in range(2):
        r = ShardDataset(URLS, rank=rank, world_size=2, shuffle=True, seed=3)
        r.set_epoch(5)
        seen.update(keys_of(DataLoader(r, batch_size=4, num_workers=2 - 2 * rank,
                                       collate_fn=as_list)))
    check(sorted(seen) == sorted(KEYS) and max(seen.values()) == 1,
          "2 ranks (2 workers, 0 workers): every sample exactly once")
    # Seeded shuffles: same seed and epoch, same order; another epoch, another.
    orders = []
    for epoch in (1, 1, 2):
        d = ShardDataset(URLS, shuffle=True, seed=11, shuffle_buffer=16)
        d.set_epoch(epoch)
        orders.append(keys_of(DataLoader(d, batch_size=5, num_workers=0, collate_fn=as_list)))
    check(orders[0] == orders[1], "same seed and epoch: same order")
    check(orders[0] != orders[2] and sorted(orders[2]) == sorted(KEYS), "next epoch: new order")
    os.environ["RANK"], os.environ["WORLD_SIZE"] = "1", "2"
    half = keys_of(DataLoader(ShardDataset(URLS), batch_size=8, collate_fn=as_list))
    del os.environ["RANK"], os.environ["WORLD_SIZE"]
    check(0 < len(half) < len(KEYS), "RANK/WORLD_SIZE split the shards (%d)" % len(half))
    # Through the proxy: the connection is cut mid-shard and libshard gives
    # up (max_retries=1); the dataset reopens at the next sample.
    proxy = os.environ["SHARD_TEST_PROXY"]
    pd = ShardDataset(URLS, client={"endpoint_url": proxy, "max_retries": 1,
                                    "retry_base_ms": 1}, chunk_size=32768, parallel=2,
                      max_resumes=20)
    got = keys_of(DataLoader(pd, batch_size=8, num_workers=0, collate_fn=as_list))
    check(got == KEYS, "through the cutting proxy: each sample once, in order")
    check(pd.stats.get("resumes", 0) >= 1, "the dataset resumed (%r)" % pd.stats)
    # Malformed shards: raise by default, skipped with handler="warn".
    bad = ["s3://%s/bad/broken.tar" % B, "s3://%s/train/shard-000000.tar" % B]
    try:
        list(ShardDataset(bad))
        check(False, "a malformed shard raises")
    except ValueError:
        check(True, "a malformed shard raises")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = [s["__key__"] for s in ShardDataset(bad, handler="warn")]
    check(got[0] == "a" and len(got) == 1 + len(KEYS) // N, "handler=warn goes on (%d)" % len(got))
    # Map-style: one sample by member, then batches of one batch GET each.
    index = build_index(URLS)
    check(len(index) == len(KEYS), "index of %d samples" % len(index))
    sd = SampleDataset(index)
    one = sd[3]
    ref = shardstore.get_member(one["__url__"], index[3][2]["jpg"][0])
    check(one["jpg"] == ref and one["__key__"] == KEYS[3], "SampleDataset[i] (long name)")
    loader = batch_loader(sd, batch_size=16, shuffle=True, seed=1, num_workers=2)
    got, sizes = [], []
    for batch in loader:
        sizes.append(len(batch))
        got.extend(s["__key__"] for s in batch)
    check(sorted(got) == sorted(KEYS), "batch loader: every sample once")
    check(max(sizes) == 16, "batches of 16 (%r)" % sizes)
    again = [s["__key__"] for b in batch_loader(sd, 16, shuffle=True, seed=1) for s in b]
    check(again == got, "batch loader: seeded order")
    s = sd[[4, 0]]
    check([x["__key__"] for x in s] == [KEYS[4], KEYS[0]] and s[0]["jpg"] == sd[4]["jpg"],
          "one batch GET, UTF-8 key, request order")
    # Missing entries: an index naming a member that is not there.
    broken = list(index[:3]) + [(index[0][0], "ghost", {"jpg": ("ghost.jpg", 10)})]
    try:
        SampleDataset(broken)[[0, 3]]
        check(False, "a missing member raises")
    except shardstore.ShardError as e:
        check(e.code == "NoSuchMember", "a missing member raises NoSuchMember")
    got = SampleDataset(broken, on_missing="skip")[[0, 3, 1]]
    check([x["__key__"] for x in got] == [KEYS[0], KEYS[1]], "on_missing=skip drops it")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
