#!/usr/bin/env bash
# bench/ml.sh: ML reads from tar shards, in one sitting (issue 14).
#
# Usage: bench/ml.sh     (about 3-6 minutes; needs ~2.5 GiB free under BENCH_DATA's filesystem,
#                        ~22 GiB at the issue's scale, ~11 GiB with BENCH_KIB=10 or 100)
#
# Scaled down from the issue's 20 shards of 256 MiB so that it stays bounded on a
# shared 2-core machine: BENCH_SHARDS shards of BENCH_SHARD_MB MiB per sample size
# (10 KiB and 100 KiB samples; each sample is NAME.jpg of that size plus NAME.cls).
# Figures (medians of BENCH_RUNS runs, all runs listed, variants alternated in one run):
#   epoch       samples/s of one pass over the shards with a torch DataLoader of 2 workers
#               (batch_size 32): shardstore.torch.ShardDataset (libshard's
#               parallel range reader) vs the same tars read from local disk with Python's
#               tarfile vs the same loader on boto3 get_object streams (tarfile "r|").
#               Ratios: shardstore/local (goal >= 0.8), shardstore/boto3 (goal >= 3). ShardDataset
#               parses tars with libshard's tar member reader (shard_tar_*, via shardstore.samples);
#               local_same_parser reads the local files with that reader too (iter_members), to
#               show the storage path's cost alone. With BENCH_NULL=1 a "null" loader runs too:
#               the same samples (names, one fresh 10/100 KiB bytes object each, sliced out of
#               one random blob: the one copy every loader makes) made in the worker with no
#               I/O and no tar, through the same transform, batching, collate and DataLoader.
#               Its rate is what DataLoader's own per-sample work (collate into shared
#               memory, pickling, the batch's hand-over to the main process) allows on this
#               machine at that moment, so null/boto3 bounds every loader's ratio to boto3
#               in the sitting (null_vs_boto3 in the RESULT line; nan without it).
#               How a batch reaches the main process is BENCH_EPOCH_COLLATE, the same for
#               every loader: "tensor" (the default) turns each sample's .jpg bytes into a
#               uint8 tensor in the worker (torch.frombuffer, no copy) and uses DataLoader's
#               default collate, so the 32 images of a batch are stacked in the worker into
#               one tensor that travels by shared memory, as a PyTorch user's decoded samples
#               do; "list" (the earlier figures) hands the list of sample dicts over as is,
#               pickled through the worker's pipe. Why tensor is the default: with "list"
#               every loader is bound by that pickling (measured with 2 workers on 1-2 shards:
#               dropping the samples in the worker instead ran ShardDataset at 3.1x its "list"
#               rate at 10 KiB and 3.4x at 100 KiB, the tarfile loaders at 1.3-3.7x), so the
#               ratios showed DataLoader's IPC more than the loaders.
#               Where the batch of 32 is made is BENCH_EPOCH_BATCH, again the same for every
#               loader: "worker" (the default) batches inside the dataset, in the worker, with
#               shardstore.torch.batched() and the collate above (ShardDataset(batch_size=32,
#               collate_fn=, transform=), the local and boto3 loaders wrapped in Batched(),
#               which calls the same batched()), and DataLoader(batch_size=None) only passes
#               each batch on, as WebDataset's .batched(n) does; "loader" (the earlier
#               figures) gives DataLoader the samples one by one (batch_size=32), and its
#               fetcher makes the batch. Each RUN line also gives the CPU microseconds per sample
#               of the main process, of the two workers (RUSAGE_CHILDREN once they exit) and of
#               the server: with other work on the 2 cores the rates follow the CPU each loader
#               costs, and these show where it goes.
#   random      samples/s of rounds of 64 random 10 KiB samples (the .jpg members; the variants
#               take turns round by round): one batch
#               GET vs 64 member GETs (libshard, one keep-alive connection) vs 64 boto3
#               ranged get_object calls, and 64 plain GETs of separate 10 KiB objects
#               (libshard, keep-alive). Goals: batch >= 5x member GETs; member GETs within 10% of plain.
#               The random picks are mostly not in the page cache (the plain objects are), so
#               hot_* repeat batch and member GETs on 64 fixed members read beforehand. Each
#               uncached variant draws its own 64 picks (the same picks would be read from
#               disk by whichever variant goes first and from the page cache by the others),
#               and the server's volume files are dropped from the page cache before the
#               phase (BENCH_COLD=1), so that a kept BENCH_DATA read by an earlier sitting
#               (the same seeded picks) or an epoch is cold again.
#   put         MiB/s of PUTs (libshard, one request each; 2 x BENCH_RUNS of each, alternating)
#               of a 100 KiB-sample shard under a key ending in .tar (member index built as it
#               streams in) vs the same bytes under .bin; overhead = 1 - tar/bin (goal <= 5%),
#               and the server's CPU seconds per PUT, which a busy machine disturbs less.
#   batch_rss   the server's RSS before and at its peak during a 10,000-entry batch GET of
#               10 KiB members (sampled every 10 ms), and the batch's MiB/s.
# torch is Debian's python3-torch (for /usr/bin/python3); boto3 comes from the python3 on
# PATH and is added to that interpreter's path for the boto3 loader only.
#
# Env knobs (defaults): BENCH_RUNS=5 BENCH_SHARDS=4 BENCH_SHARD_MB=64 BENCH_ROUNDS=20
#   BENCH_SKIP="" (words among: epoch random put rss)
#   BENCH_EPOCH_RUNS=$BENCH_RUNS BENCH_EPOCH_KIB=$BENCH_KIB (which sample sizes the epoch runs)
#   BENCH_SAME_PARSER=1 (0 leaves out the local_same_parser loader, a diagnostic)
#   BENCH_NULL=0 (1 adds the null loader, a diagnostic: see epoch above)
#   BENCH_EPOCH_COLLATE=tensor (or list: see epoch above)
#   BENCH_EPOCH_BATCH=worker (or loader: see epoch above)
#   BENCH_KIB="10 100" (the sample sizes whose shards are made; the random and rss phases need
#   10, put 100, and a phase whose shards are missing is skipped with a message; one size at a
#   time halves the disk, e.g. BENCH_KIB=10 for the random phase and the 10 KiB epoch)
#   BENCH_COLD=1 (0 keeps the page cache as it is before the random phase)
#   BENCH_DATA=/tmp/shardstore-ml-bench (removed at the end unless BENCH_KEEP=1; a kept
#   BENCH_DATA that holds the shards is reused as is, so that the issue's scale, 20 shards of
#   256 MiB per size, can be measured in phases: BENCH_KEEP=1 BENCH_SKIP="epoch random put rss"
#   once to make it, then one phase per run)
#   SHARDSTORE_BIN (default: build/dev/shardstore of this tree); SHARDSTORE_LIBSHARD (default:
#   build/dev/client/.libs/libshard.so)
# Output: "RESULT ..." lines on stdout (and a "RUN epoch ..." line per epoch as it ends);
# progress on stderr.
set -euo pipefail

BENCH_TAG=ml
. "$(dirname "$0")/lib.sh"
RUNS=${BENCH_RUNS:-5}
SHARDS=${BENCH_SHARDS:-4}
SHARD_MB=${BENCH_SHARD_MB:-64}
ROUNDS=${BENCH_ROUNDS:-20}
DATA=${BENCH_DATA:-/tmp/shardstore-ml-bench}
SKIP=${BENCH_SKIP:-}
AK=benchkey SK=benchsecret BUCKET=mlbench
need_tools python3
find_bin "$SRC/build/dev/shardstore" ./shardstore
export SHARDSTORE_LIBSHARD=${SHARDSTORE_LIBSHARD:-$(dirname "$BIN")/client/.libs/libshard.so}
[ -e "$SHARDSTORE_LIBSHARD" ] || die "libshard.so not found: build it or set SHARDSTORE_LIBSHARD"
TORCH_PY=""
for p in python3 /usr/bin/python3; do
  "$p" -c 'import torch' 2>/dev/null && { TORCH_PY=$p; break; }
done
BOTO_PATH=$(python3 -c 'import boto3, os; print(os.path.dirname(os.path.dirname(boto3.__file__)))')

W=$(mktemp -d /tmp/ml-bench.XXXXXX)
cleanup() {
  set +e
  [ -n "$SS_PID" ] && ss_stop
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$DATA"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$DATA/local"

# Volumes of 2 GiB are added as the shards come in; the cold tier, unused
# here, would otherwise preallocate a volume_size of its own.
printf 'volume_size = 2G\ncold_volume_size = 64M\nlog_level = warn\nconnection_limit_per_ip = 0\n' > "$DATA/ss.conf"
ss_launch "$DATA/ss" "$DATA/ss.conf"
export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_ENDPOINT_URL=$SS_EP AWS_DEFAULT_REGION=us-east-1
export PYTHONPATH=$SRC/python${PYTHONPATH:+:$PYTHONPATH}
export BENCH_BUCKET=$BUCKET BENCH_LOCAL=$DATA/local BENCH_SHARDS=$SHARDS BENCH_SHARD_MB=$SHARD_MB
export BENCH_RUNS=$RUNS BENCH_ROUNDS=$ROUNDS BENCH_SS_PID=$SS_PID BENCH_SKIP=$SKIP BOTO_PATH
export BENCH_EPOCH_RUNS=${BENCH_EPOCH_RUNS:-$RUNS} BENCH_EPOCH_KIB=${BENCH_EPOCH_KIB:-$BENCH_KIB}
export BENCH_KIB=${BENCH_KIB:-10 100}
export BENCH_READY=$DATA/ready BENCH_SAME_PARSER=${BENCH_SAME_PARSER:-1} BENCH_NULL=${BENCH_NULL:-0}
export BENCH_EPOCH_COLLATE=${BENCH_EPOCH_COLLATE:-tensor} BENCH_EPOCH_BATCH=${BENCH_EPOCH_BATCH:-worker}
export BENCH_COLD=${BENCH_COLD:-1} BENCH_VOLUMES=$DATA/ss/volumes

# ---------------- data, PUT overhead, random access, batch RSS (python3 on PATH) ----------------
log "$SHARDS shards of $SHARD_MB MiB for samples of KiB: $BENCH_KIB (reused when $DATA has them)"
quiet setup
python3 - <<'PY'
import io, os, random, statistics, sys, tarfile, threading, time
import boto3
import shardstore

B = os.environ["BENCH_BUCKET"]
LOCAL = os.environ["BENCH_LOCAL"]
NSH, MB = int(os.environ["BENCH_SHARDS"]), int(os.environ["BENCH_SHARD_MB"])
RUNS, ROUNDS = int(os.environ["BENCH_RUNS"]), int(os.environ["BENCH_ROUNDS"])
SKIP = os.environ.get("BENCH_SKIP", "").split()
PID = int(os.environ["BENCH_SS_PID"])
c = shardstore.Client()
s3 = boto3.client("s3")
rng = random.Random(1)
blob = os.urandom(200 * 1024)
KIBS = [int(k) for k in os.environ["BENCH_KIB"].split()]
READY = os.environ["BENCH_READY"]
if not os.path.exists(READY + "bucket"):
    s3.create_bucket(Bucket=B)
    open(READY + "bucket", "w").close()


def make_shard(path, kib, shard):
    n = MB * 1024 * 1024 // (kib * 1024 + 2048)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for i in range(n):
            key = "%02d%07d" % (shard, i)
            off = rng.randrange(len(blob) - kib * 1024)
            for ext, data in (("jpg", blob[off:off + kib * 1024]), ("cls", b"%d" % (i % 1000))):
                ti = tarfile.TarInfo("%s.%s" % (key, ext))
                ti.size, ti.mtime = len(data), 1700000000
                tf.addfile(ti, io.BytesIO(data))
    return n


counts = {}
for kib in [k for k in KIBS if not os.path.exists(READY + str(k))]:
    for s in range(NSH):
        name = "s%d/shard-%06d.tar" % (kib, s)
        path = os.path.join(LOCAL, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        counts[kib] = counts.get(kib, 0) + make_shard(path, kib, s)
        with open(path, "rb") as f:
            c.put(B, name, f.read())
    if kib == 10:
        for i in range(64):
            c.put(B, "plain10k/%03d" % i, blob[i * 100:i * 100 + 10240])
    open(READY + str(kib), "w").close()
    print("counts", counts, file=sys.stderr)
for phase, kib in (("put", 100), ("random", 10), ("rss", 10)):
    if phase not in SKIP and not os.path.exists(READY + str(kib)):
        print("%s skipped: no %d KiB shards (BENCH_KIB)" % (phase, kib), file=sys.stderr)
        SKIP.append(phase)


def med(xs):
    return statistics.median(xs)


def runs(xs):
    return ",".join("%.1f" % x for x in xs)


if "put" not in SKIP:
    with open(os.path.join(LOCAL, "s100/shard-000000.tar"), "rb") as f:
        data = f.read()
    def server_cpu_s():
        with open("/proc/%d/stat" % PID) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    tar, plain, tar_cpu, plain_cpu = [], [], [], []
    for r in range(RUNS * 2):
        for kind in (("bin", "tar") if r % 2 == 0 else ("tar", "bin")):
            t, c0 = time.monotonic(), server_cpu_s()
            c.put(B, "put-bench/x.%s" % kind, data)
            mibs = len(data) / 1048576 / (time.monotonic() - t)
            (tar if kind == "tar" else plain).append(mibs)
            (tar_cpu if kind == "tar" else plain_cpu).append(server_cpu_s() - c0)
    members = sum(1 for _ in c.list_members(B, "put-bench/x.tar"))
    print("RESULT put size_MiB=%d members=%d puts_each=%d indexed_MiB_s=%.1f plain_MiB_s=%.1f "
          "overhead_pct=%.1f server_cpu_s_indexed=%.3f server_cpu_s_plain=%.3f "
          "cpu_overhead_pct=%.1f runs_indexed=%s runs_plain=%s cpu_runs_indexed=%s "
          "cpu_runs_plain=%s" % (
              len(data) >> 20, members, len(tar), med(tar), med(plain),
              (1 - med(tar) / med(plain)) * 100, med(tar_cpu), med(plain_cpu),
              (med(tar_cpu) / med(plain_cpu) - 1) * 100, runs(tar), runs(plain),
              ",".join("%.2f" % x for x in tar_cpu), ",".join("%.2f" % x for x in plain_cpu)))
    sys.stdout.flush()

if "random" not in SKIP:
    if os.environ["BENCH_COLD"] == "1":
        # Clean pages only: nothing is written, the next read comes from disk.
        vols = os.environ["BENCH_VOLUMES"]
        for name in sorted(os.listdir(vols)):
            fd = os.open(os.path.join(vols, name), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
    # The .jpg members of the 10 KiB shards, from the member index.
    jpgs = []
    for s in range(NSH):
        key = "s10/shard-%06d.tar" % s
        jpgs += [(key, m) for m in c.list_members(B, key) if m.name.endswith(".jpg")]
    # hot: 64 fixed members read once beforehand, in the page cache like the
    # 64 plain objects (the random picks are mostly not: the shards are far
    # larger than what the rounds touch), so that member vs plain and batch
    # vs member compare the request paths alone.
    hot = rng.sample(jpgs, 64)
    c.batch_get(B, [(k, m.name) for k, m in hot], True)
    # The variants take turns round by round (the order rotating), so that
    # the load other processes put on the machine hits them alike.
    kinds = ["batch", "member", "boto3", "plain", "batch_hot", "member_hot"]
    res = {k: [] for k in kinds}
    for r in range(RUNS):
        spent = {k: 0.0 for k in kinds}
        for rnd in range(ROUNDS):
            for kind in kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)]:
                pick = rng.sample(jpgs, 64)
                t = time.monotonic()
                if kind in ("batch", "batch_hot"):
                    got = c.batch_get(B, [(k, m.name) for k, m in
                                          (pick if kind == "batch" else rng.sample(hot, 64))], True)
                    assert all(isinstance(d, bytes) for _, d in got)
                elif kind in ("member", "member_hot"):
                    for k, m in pick if kind == "member" else rng.sample(hot, 64):
                        c.get_member(B, k, m.name, size=m.size)
                elif kind == "boto3":
                    for k, m in pick:
                        s3.get_object(Bucket=B, Key=k, Range="bytes=%d-%d" % (
                            m.offset, m.offset + m.size - 1))["Body"].read()
                else:
                    for i in rng.sample(range(64), 64):
                        c.get(B, "plain10k/%03d" % i)
                spent[kind] += time.monotonic() - t
        for k in kinds:
            res[k].append(64 * ROUNDS / spent[k])
    m = {k: med(v) for k, v in res.items()}
    print("RESULT random sample_KiB=10 per_round=64 rounds=%d batch_samples_s=%.0f member_samples_s=%.0f "
          "boto3_samples_s=%.0f plain_get_samples_s=%.0f batch_vs_member=%.2f member_vs_plain=%.2f "
          "batch_vs_boto3=%.2f hot_batch_samples_s=%.0f hot_member_samples_s=%.0f "
          "hot_batch_vs_member=%.2f hot_member_vs_plain=%.2f runs_batch=%s runs_member=%s "
          "runs_boto3=%s runs_plain=%s runs_batch_hot=%s runs_member_hot=%s" % (
              ROUNDS, m["batch"], m["member"], m["boto3"], m["plain"], m["batch"] / m["member"],
              m["member"] / m["plain"], m["batch"] / m["boto3"], m["batch_hot"], m["member_hot"],
              m["batch_hot"] / m["member_hot"], m["member_hot"] / m["plain"], runs(res["batch"]),
              runs(res["member"]), runs(res["boto3"]), runs(res["plain"]), runs(res["batch_hot"]),
              runs(res["member_hot"])))
    sys.stdout.flush()

if "rss" not in SKIP:
    def rss_mib():
        with open("/proc/%d/status" % PID) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    key = "s10/shard-000000.tar"
    names = [m.name for m in c.list_members(B, key) if m.name.endswith(".jpg")]
    entries = [(key, names[i % len(names)]) for i in range(10000)]
    before = rss_mib()
    peak = [before]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mib())
            time.sleep(0.01)

    th = threading.Thread(target=sample)
    th.start()
    total = [0]
    t = time.monotonic()
    c.batch_stream(B, entries, True, lambda b: total.__setitem__(0, total[0] + len(b)))
    dt = time.monotonic() - t
    stop.set()
    th.join()
    print("RESULT batch_rss entries=10000 bytes=%d MiB_s=%.1f server_rss_before_MiB=%.1f "
          "server_rss_peak_MiB=%.1f" % (total[0], total[0] / 1048576 / dt, before, peak[0]))
    sys.stdout.flush()
PY

# ---------------- streaming epochs (the Python that has torch) ----------------
if ! skip epoch; then
  if [ -z "$TORCH_PY" ]; then
    log "no Python with torch (scripts/setup.sh --test installs python3-torch): epoch skipped"
  else
    quiet epoch
    "$TORCH_PY" - <<'PY'
import os, resource, statistics, sys, tarfile, time, warnings
import torch
from torch.utils.data import DataLoader, IterableDataset, default_collate, get_worker_info
from shardstore.samples import iter_members, split_key
from shardstore.torch import ShardDataset, batched

B = os.environ["BENCH_BUCKET"]
LOCAL = os.environ["BENCH_LOCAL"]
NSH, RUNS = int(os.environ["BENCH_SHARDS"]), int(os.environ["BENCH_EPOCH_RUNS"])
COLLATE = os.environ["BENCH_EPOCH_COLLATE"]
assert COLLATE in ("tensor", "list"), COLLATE
IN_WORKER = os.environ["BENCH_EPOCH_BATCH"] == "worker"
assert os.environ["BENCH_EPOCH_BATCH"] in ("worker", "loader")
BATCH = 32


def group(members, url):
    cur = None
    for name, data in members:
        k, field = split_key(name)
        if k is None:
            continue
        if cur is not None and cur["__key__"] != k:
            yield cur
            cur = None
        if cur is None:
            cur = {"__key__": k, "__url__": url}
        cur[field] = data
    if cur is not None:
        yield cur


def tar_members(f):
    with tarfile.open(fileobj=f, mode="r|") as tf:
        for m in tf:
            if m.isreg():
                yield m.name, tf.extractfile(m).read()


class LocalTars(IterableDataset):
    def __init__(self, paths):
        self.paths = paths

    def __iter__(self):
        wi = get_worker_info()
        mine = self.paths[wi.id::wi.num_workers] if wi else self.paths
        for p in mine:
            with open(p, "rb") as f:
                yield from group(tar_members(f), p)


class LocalSameParser(IterableDataset):
    """The local files through ShardDataset's own tar parser: what the
    storage path costs, the parser aside."""

    def __init__(self, paths):
        self.paths = paths

    def __iter__(self):
        wi = get_worker_info()
        mine = self.paths[wi.id::wi.num_workers] if wi else self.paths
        for p in mine:
            with open(p, "rb") as f:
                yield from group(((n, d) for _, n, d in iter_members(f, p)), p)


class NullTars(IterableDataset):
    """The samples of the shards 'keys' (as many, named alike) made with no
    I/O: each .jpg a fresh bytes object sliced out of one random blob (one
    copy, as every loader makes), each .cls a few bytes."""

    def __init__(self, keys, kib, per_shard):
        self.keys, self.kib, self.per_shard = keys, kib, per_shard

    def __iter__(self):
        wi = get_worker_info()
        mine = self.keys[wi.id::wi.num_workers] if wi else self.keys
        blob = os.urandom(1 << 20)
        size = self.kib * 1024
        top = len(blob) - size
        for k in mine:
            shard = int(k.rsplit("-", 1)[1].split(".")[0])
            for i in range(self.per_shard):
                off = (i * 4099) % top
                yield {"__key__": "%02d%07d" % (shard, i), "__url__": k,
                       "jpg": blob[off:off + size], "cls": b"%d" % (i % 1000)}


class Boto3Tars(IterableDataset):
    def __init__(self, keys):
        self.keys = keys

    def __iter__(self):
        sys.path.append(os.environ["BOTO_PATH"])
        import boto3
        s3 = boto3.client("s3")
        wi = get_worker_info()
        mine = self.keys[wi.id::wi.num_workers] if wi else self.keys
        for k in mine:
            body = s3.get_object(Bucket=B, Key=k)["Body"]
            yield from group(tar_members(body), k)


def to_tensor(s):
    """The sample with its .jpg bytes as a uint8 tensor sharing the bytes'
    memory (the default collate then stacks a batch into one tensor in
    shared memory)."""
    s["jpg"] = torch.frombuffer(s["jpg"], dtype=torch.uint8)
    return s


def as_list(b):
    return b


class Batched(IterableDataset):
    """The batches of the loader 'inner', made in the worker by the same
    code and collate as ShardDataset(batch_size=, collate_fn=,
    transform=) (shardstore.torch.batched)."""

    def __init__(self, inner, transform, collate_fn):
        self.inner, self.transform, self.collate_fn = inner, transform, collate_fn

    def __iter__(self):
        it = iter(self.inner)
        if self.transform:
            it = map(self.transform, it)
        return batched(it, BATCH, self.collate_fn)


class Mapped(IterableDataset):
    def __init__(self, inner, transform):
        self.inner, self.transform = inner, transform

    def __iter__(self):
        return map(self.transform, self.inner)


def loader(name, ds):
    """The DataLoader of every loader: 2 workers, batches of 32 either made
    in the worker (the same batched() for all) or by DataLoader."""
    warnings.filterwarnings("ignore", "The given buffer is not writable")
    transform = to_tensor if COLLATE == "tensor" else None
    collate = None if COLLATE == "tensor" else as_list  # None: DataLoader's default collate
    if not IN_WORKER:
        # Sample by sample through DataLoader's fetcher, which makes the batch.
        return DataLoader(Mapped(ds, transform) if transform else ds, batch_size=BATCH,
                          num_workers=2, collate_fn=collate)
    wcollate = default_collate if COLLATE == "tensor" else None
    if name == "shardstore":
        ds = ShardDataset(ds.urls, transform=transform, batch_size=BATCH, collate_fn=wcollate)
    else:
        ds = Batched(ds, transform, wcollate)
    return DataLoader(ds, batch_size=None, num_workers=2, collate_fn=as_list)


SS_PID = int(os.environ["BENCH_SS_PID"])


def cpu_s():
    """CPU seconds of this process, of its waited-for children (the
    DataLoader workers, once an epoch ends) and of the server."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open("/proc/%d/stat" % SS_PID) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime,
            (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))


def epoch(name, ds):
    c0 = cpu_s()
    t = time.monotonic()
    n = 0
    for batch in loader(name, ds):
        n += len(batch["__key__"]) if isinstance(batch, dict) else len(batch)
    dt = time.monotonic() - t
    cpu = [(b - a) / n * 1e6 for a, b in zip(c0, cpu_s())]
    return n, n / dt, cpu


for kib in [int(k) for k in os.environ["BENCH_EPOCH_KIB"].split()]:
    keys = ["s%d/shard-%06d.tar" % (kib, s) for s in range(NSH)]
    loaders = {
        "shardstore": ShardDataset(["s3://%s/%s" % (B, k) for k in keys]),
        "local": LocalTars([os.path.join(LOCAL, k) for k in keys]),
        "local_same_parser": LocalSameParser([os.path.join(LOCAL, k) for k in keys]),
        "boto3": Boto3Tars(keys),
        "null": NullTars(keys, kib, int(os.environ["BENCH_SHARD_MB"]) * 1024 * 1024 // (kib * 1024 + 2048)),
    }
    if os.environ["BENCH_NULL"] != "1":
        del loaders["null"]
    if os.environ["BENCH_SAME_PARSER"] == "0":
        del loaders["local_same_parser"]
    res = {k: [] for k in loaders}
    counts = {}
    for r in range(RUNS):
        order = list(loaders) if r % 2 == 0 else list(reversed(list(loaders)))
        for name in order:
            n, sps, cpu = epoch(name, loaders[name])
            counts[name] = n
            res[name].append(sps)
            # Each run as it ends: a sitting cut short by its time limit keeps them.
            print("RUN epoch sample_KiB=%d collate=%s batch=%s run=%d loader=%s samples=%d "
                  "samples_s=%.0f cpu_us_per_sample_main=%.1f workers=%.1f server=%.1f" % (
                      kib, COLLATE, os.environ["BENCH_EPOCH_BATCH"], r + 1, name, n, sps, *cpu),
                  flush=True)
    assert len(set(counts.values())) == 1, counts
    m = {k: statistics.median(v) for k, v in res.items()}
    r = {k: ",".join("%.0f" % x for x in v) for k, v in res.items()}
    m.setdefault("local_same_parser", float("nan"))
    r.setdefault("local_same_parser", "-")
    m.setdefault("null", float("nan"))
    r.setdefault("null", "-")
    print("RESULT epoch sample_KiB=%d shards=%d samples=%d workers=2 collate=%s batch=%s "
          "shardstore_samples_s=%.0f "
          "local_tarfile_samples_s=%.0f boto3_samples_s=%.0f local_same_parser_samples_s=%.0f "
          "shardstore_vs_local=%.2f shardstore_vs_boto3=%.2f shardstore_vs_local_same_parser=%.2f "
          "runs_shardstore=%s runs_local=%s runs_boto3=%s runs_local_same_parser=%s "
          "null_samples_s=%.0f null_vs_boto3=%.2f runs_null=%s" % (
              kib, NSH, counts["local"], COLLATE, os.environ["BENCH_EPOCH_BATCH"], m["shardstore"], m["local"], m["boto3"],
              m["local_same_parser"], m["shardstore"] / m["local"], m["shardstore"] / m["boto3"],
              m["shardstore"] / m["local_same_parser"], r["shardstore"], r["local"], r["boto3"],
              r["local_same_parser"], m["null"], m["null"] / m["boto3"], r["null"]))
    sys.stdout.flush()
PY
  fi
fi
echo "RESULT load cores_used_by_others_before:$NOISE loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
