"""shardstore.torch: PyTorch datasets on shardstore (the only module of the
package that imports torch; works with torch 1.13 and later).

ShardDataset: an IterableDataset streaming WebDataset-style tar shards
    (shardstore.samples): shards dealt to ranks (torch.distributed when
    initialized, else $RANK/$WORLD_SIZE, else rank 0 of 1) and then to
    DataLoader workers, shuffled per epoch with a seed (call set_epoch),
    samples shuffled in a bounded buffer, resumed after dropped connections;
    with batch_size it yields collated batches made in the worker
    (batched(), as WebDataset's .batched(n)) for DataLoader(batch_size=None).
SampleDataset: a map-style Dataset of samples by member (an index built
    from the shards' member listings); dataset[i] reads one sample, and
    dataset[[i, j, ...]] a whole batch with one batch GET per bucket, which
    batch_loader() uses: a DataLoader over a BatchSampler.
"""
import os
import random

import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler
from torch.utils.data import SequentialSampler, get_worker_info

from . import BATCH_MAX, Client, ShardError, default_client, expand_urls, parse_url
from . import samples as _samples

__all__ = ["ShardDataset", "SampleDataset", "batch_loader", "batched", "build_index",
           "rank_world"]

try:
    from torch.utils.data import default_collate
except ImportError:  # torch before 1.11 kept it private
    from torch.utils.data._utils.collate import default_collate


def rank_world():
    """(rank, world size): torch.distributed's when initialized, else
    $RANK and $WORLD_SIZE, else (0, 1)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def batched(samples, batch_size, collate_fn=default_collate, partial=True):
    """Yields collate_fn(list of 'batch_size' consecutive samples) for the
    iterable 'samples' (WebDataset's .batched(n)); the last, shorter batch
    too unless 'partial' is false. collate_fn=None yields the lists."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    batch = []
    for s in samples:
        batch.append(s)
        if len(batch) == batch_size:
            yield collate_fn(batch) if collate_fn else batch
            batch = []
    if batch and partial:
        yield collate_fn(batch) if collate_fn else batch


def _client(kwargs):
    return Client(**kwargs) if kwargs else default_client()


class ShardDataset(IterableDataset):
    """Samples of the tar shards 'urls' (a list, or one string, of s3://
    URLs with brace patterns: "s3://b/train/shard-{000000..000999}.tar").

    shuffle, seed: shard order shuffled per epoch (set_epoch) and samples
        through a buffer of 'shuffle_buffer'; the same seed and epoch give
        the same order.
    rank, world_size: override rank_world() (e.g. to simulate ranks).
    transform: applied to each sample dict before it is yielded.
    handler: "raise", "warn" or "ignore" for malformed shards.
    max_resumes: reopenings of one shard after network failures.
    client: keyword arguments of shardstore.Client (endpoint_url, keys,
        parallel, chunk_size, max_retries...); each worker makes its own.
    batch_size, collate_fn, partial: when batch_size is set, the dataset
        yields batches instead of samples: collate_fn (default: torch's
        default_collate; None: the list itself) of 'batch_size' samples,
        made in the worker from its own samples (the last one of each
        worker shorter unless partial=False drops it). Use it with
        DataLoader(ds, batch_size=None): DataLoader then fetches and sends
        one object per batch instead of handling every sample itself, as
        WebDataset's .batched(n) does.
    """

    def __init__(self, urls, shuffle=False, seed=0, shuffle_buffer=1000, rank=None,
                 world_size=None, transform=None, handler="raise", max_resumes=10, client=None,
                 parallel=None, chunk_size=None, batch_size=None, collate_fn=default_collate,
                 partial=True):
        super().__init__()
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size, self.collate_fn, self.partial = batch_size, collate_fn, partial
        self.urls = expand_urls(urls)
        self.shuffle, self.seed, self.shuffle_buffer = shuffle, seed, shuffle_buffer
        self.rank, self.world_size = rank, world_size
        self.transform, self.handler, self.max_resumes = transform, handler, max_resumes
        self.client_kwargs = dict(client or {})
        self.parallel, self.chunk_size = parallel, chunk_size
        self.epoch = 0
        self.stats = {}

    def set_epoch(self, epoch):
        """Selects the epoch whose shard and sample order __iter__ gives."""
        self.epoch = epoch

    def __iter__(self):
        wi = get_worker_info()
        worker, num_workers = (wi.id, wi.num_workers) if wi is not None else (0, 1)
        rank, world = rank_world()
        if self.rank is not None:
            rank = self.rank
        if self.world_size is not None:
            world = self.world_size
        it = _samples.samples(self.urls, rank, world, worker, num_workers, self.shuffle,
                              self.seed, self.epoch, self.shuffle_buffer,
                              client=_client(self.client_kwargs), stats=self.stats,
                              handler=self.handler, max_resumes=self.max_resumes,
                              parallel=self.parallel, chunk_size=self.chunk_size)
        if self.transform:
            it = map(self.transform, it)
        if self.batch_size is None:
            return it
        return batched(it, self.batch_size, self.collate_fn, self.partial)


def build_index(urls, client=None):
    """The samples of the tar shards 'urls', from their member listings (no
    data is read): a list of (url, key, {field: (member name, size)})."""
    client = client or default_client()
    index = []
    for url in expand_urls(urls):
        bucket, key = parse_url(url)
        cur = None
        for m in client.list_members(bucket, key):
            k, field = _samples.split_key(m.name)
            if k is None:
                continue
            if cur is None or cur[1] != k:
                cur = (url, k, {})
                index.append(cur)
            cur[2][field] = (m.name, m.size)
    return index


class SampleDataset(Dataset):
    """Map-style samples by member. 'index' is build_index()'s list (or
    the shard URLs, to build it here). dataset[i] reads sample i (one
    member GET per field); dataset[[i, j, ...]] reads them all with one
    batch GET per bucket and returns a list. on_missing: "raise"
    (ShardError) or "skip" (the sample is left out of a batch; a single
    read still raises)."""

    def __init__(self, index, transform=None, on_missing="raise", client=None):
        super().__init__()
        self.client_kwargs = dict(client or {})
        if index and isinstance(index[0], str) or isinstance(index, str):
            index = build_index(index, _client(self.client_kwargs))
        self.index = list(index)
        self.transform, self.on_missing = transform, on_missing
        self._client = None
        self._pid = None

    def __len__(self):
        return len(self.index)

    def client(self):
        if self._client is None or self._pid != os.getpid():
            self._client = _client(self.client_kwargs)
            self._pid = os.getpid()
        return self._client

    def _finish(self, s):
        return self.transform(s) if self.transform else s

    def __getitem__(self, i):
        if isinstance(i, (list, tuple)):
            return self.fetch_batch(i)
        url, key, fields = self.index[i]
        bucket, obj = parse_url(url)
        s = {"__key__": key, "__url__": url}
        for field, (member, size) in fields.items():
            s[field] = self.client().get_member(bucket, obj, member, size=size)
        return self._finish(s)

    def fetch_batch(self, indices):
        """The samples 'indices' (a list, in order), read with one batch GET
        per bucket."""
        by_bucket = {}
        for pos, i in enumerate(indices):
            url, key, fields = self.index[i]
            bucket, obj = parse_url(url)
            by_bucket.setdefault(bucket, []).append((pos, url, obj, key, fields))
        out = [None] * len(indices)
        for bucket, items in by_bucket.items():
            entries, owners = [], []
            for pos, url, obj, key, fields in items:
                out[pos] = {"__key__": key, "__url__": url}
                for field, (member, _) in fields.items():
                    entries.append((obj, member))
                    owners.append((pos, field))
            got = []
            for start in range(0, len(entries), BATCH_MAX):
                got.extend(self.client().batch_get(bucket, entries[start:start + BATCH_MAX], True))
            if len(got) != len(entries):
                raise ShardError("PROTO", 0, "BatchLength",
                                 "%d answers for %d entries" % (len(got), len(entries)))
            for (pos, field), (name, data) in zip(owners, got):
                if isinstance(data, ShardError):
                    if self.on_missing == "raise":
                        raise ShardError(data.kind, data.http_status, data.code,
                                         "%s: %s" % (name, data.message))
                    out[pos] = None
                elif out[pos] is not None:
                    out[pos][field] = data
        return [self._finish(s) for s in out if s is not None]


def _as_is(batch):
    return batch


def batch_loader(dataset, batch_size, shuffle=False, seed=0, drop_last=False, num_workers=0,
                 collate_fn=None, **kw):
    """A DataLoader over 'dataset' (a SampleDataset) whose every batch is one
    dataset[[indices]] call, so one batch GET; 'collate_fn' gets the list
    of samples (default: the list itself)."""
    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed)
        sampler = RandomSampler(dataset, generator=g)
    else:
        sampler = SequentialSampler(dataset)
    batches = BatchSampler(sampler, batch_size, drop_last)
    return DataLoader(dataset, sampler=batches, batch_size=None, num_workers=num_workers,
                      collate_fn=collate_fn or _as_is, **kw)


def seed_worker(worker_id):
    """A worker_init_fn that seeds Python's random from torch's worker seed."""
    random.seed(torch.initial_seed() % (1 << 32))
