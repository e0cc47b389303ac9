"""samples.py: WebDataset-style samples streamed out of tar shards, with
no dependency on torch (shardstore.torch wraps this in its datasets).

A shard is read front to back with libshard's parallel range reader and
parsed in C by libshard's tar member reader (shard_tar_read: the parser of
the server's member indexes; ustar, pax path/size records, GNU long names;
other entry types skipped), which hands out up to 256 whole members per
call: a name, the data (one copy, out of the reader's window), and the
offset of the member's first header. Members are grouped into samples by
key, as WebDataset does: the key is the name up to the first dot of its
last path component (directory kept: "a/000123" for "a/000123.seg.png"),
the field is the rest in lower case ("seg.png"); consecutive members with
one key form a sample {"__key__": key, "__url__": url, field: bytes, ...}.
Names without a dot in their last component belong to no sample and are
skipped.

Resuming: a sample is handed out only once the header of the next one has
been read (or the archive ended), and the byte offset of that header is
kept. When the connection fails beyond libshard's own retries, the shard is
opened again at that offset, so no sample is repeated or lost.
"""
import ctypes
import random
import warnings

from . import Reader, ShardError, _lib, default_client, expand_urls, parse_url
from ._lib import lib

# Members per libshard call (each call is one ctypes crossing).
BATCH_MEMBERS = 256
_WORDS = _lib.TAR_MEMBER_WORDS
_FORMAT = -7  # SHARD_ERR_FORMAT
_string_at = ctypes.string_at
_INT_MAX = (1 << 31) - 1
# A read-only memoryview of C memory, made without a ctypes array type (one
# of a new length per call would be a new class each time, which ctypes
# caches for good).
_view = ctypes.pythonapi.PyMemoryView_FromMemory
_view.restype = ctypes.py_object
_view.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int]
_PYBUF_READ = 0x100


class MalformedShard(ValueError):
    """A shard is not a readable tar archive (from the byte 'offset' on)."""

    def __init__(self, url, offset, why):
        self.url, self.offset, self.why = url, offset, why
        super().__init__("%s: malformed tar at byte %d: %s" % (url, offset, why))


def split_key(name):
    """'dir/000123.seg.png' -> ('dir/000123', 'seg.png'); (None, None) when
    the last path component has no dot."""
    d, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    if not dot or not stem:
        return None, None
    return (d + "/" + stem if d else stem), ext.lower()


def _bytes_at(addr, size):
    # string_at takes a C int size; larger members are copied through a view.
    if size <= _INT_MAX:
        return _string_at(addr, size)
    return _view(addr, size, _PYBUF_READ).tobytes()


class _TarReader:
    """A libshard tar member reader (struct shard_tar) for the archive of
    'url' from byte 'base' on. members(...) turns one call's records into
    lists of header offsets, names and data bytes."""

    def __init__(self, url, base):
        self.url = url
        self.t = lib.shard_tar_create(base)
        self.recs = (ctypes.c_uint64 * (_WORDS * BATCH_MEMBERS))()
        self.words = memoryview(self.recs).cast("B").cast("Q")
        self.err = _lib.ShardErrorStruct()
        self.errp = ctypes.byref(self.err)

    def close(self):
        if self.t:
            lib.shard_tar_destroy(self.t)
            self.t = None

    def fail(self, rc):
        """The exception for a call that returned 'rc' < 0."""
        if rc == _FORMAT:
            off = ctypes.c_uint64()
            why = lib.shard_tar_error(self.t, ctypes.byref(off))
            return MalformedShard(self.url, off.value, (why or b"unreadable").decode())
        return ShardError.from_struct(self.err, rc)

    def members(self, n):
        """(header offsets, names, data) of the 'n' members the last call
        gave. The names lie in one run, each ended by a NUL: one copy and
        one decode for all of them, unless a (pax) name holds a NUL."""
        q = self.words[:_WORDS * n].tolist()
        first = q[0]
        last = _WORDS * (n - 1)
        blob = _string_at(first, q[last] + q[last + 1] - first)
        if blob.count(0) == n - 1:
            names = blob.decode("utf-8", "surrogateescape").split("\0")
        else:
            names = [blob[q[i] - first:q[i] - first + q[i + 1]].decode("utf-8", "surrogateescape")
                     for i in range(0, len(q), _WORDS)]
        # The data of all members but the first (and the empty ones) lie in
        # one input piece in order (shard.h): one view of that run, then a
        # slice per member. The first may be in libshard's buffer instead.
        ptrs, sizes = q[2::_WORDS], q[3::_WORDS]
        lo = hi = 0
        for i in range(1, n):
            if sizes[i]:
                lo = ptrs[i]
                break
        for i in range(n - 1, 0, -1):
            if sizes[i]:
                hi = ptrs[i] + sizes[i]
                break
        view = _view(lo, hi - lo, _PYBUF_READ) if hi else b""
        data = [view[p - lo:p - lo + z].tobytes() if lo <= p and p + z <= hi else _bytes_at(p, z)
                for p, z in zip(ptrs, sizes)]
        return q[4::_WORDS], names, data


def _reader_batches(r, url, base):
    """Yields (header offsets, names, data) per libshard call for the tar
    stream of the shard_reader 'r' (at archive byte 'base')."""
    t = _TarReader(url, base)
    try:
        while True:
            n = lib.shard_tar_read(t.t, r, t.recs, BATCH_MEMBERS, t.errp)
            if n <= 0:
                if n < 0:
                    raise t.fail(n)
                return
            yield t.members(n)
    finally:
        t.close()


def iter_members(f, url="", base=0, read_size=1 << 20):
    """Yields (header offset, name, data) for each regular file of the tar
    stream 'f' (a binary file object positioned at a header, 'base' bytes
    into the archive), parsed by libshard; header offset is where its first
    header (pax or GNU long name included) begins. Raises MalformedShard on
    a bad or truncated archive, and whatever 'f' raises as is. 'f' is read
    in pieces of 'read_size' bytes; a member's data is one copy out of the
    piece that holds it (or out of libshard's buffer, when it spans pieces)."""
    t = _TarReader(url, base)
    piece = b""  # None once the input ended
    try:
        while True:
            n = lib.shard_tar_next(t.t, t.recs, BATCH_MEMBERS, t.errp)
            if n < 0:
                raise t.fail(n)
            if n > 0:
                yield from zip(*t.members(n))
                continue
            if piece is None:
                return  # the input ended and the archive is whole
            piece = f.read(read_size)
            if not isinstance(piece, bytes):
                piece = bytes(piece)
            rc = lib.shard_tar_input(t.t, piece, len(piece), t.errp)
            if rc < 0:
                raise t.fail(rc)
            if not piece:
                piece = None
    finally:
        t.close()


def shard_samples(url, client=None, handler="raise", max_resumes=10, parallel=None,
                  chunk_size=None, stats=None):
    """Yields the samples of one tar shard in archive order, resuming after
    network failures (up to 'max_resumes' reopenings). 'handler' says what
    a malformed shard does: "raise" (MalformedShard), "warn" (a warning,
    then the shard's remaining samples are skipped) or "ignore". 'stats'
    (a dict) counts "resumes" and "malformed"."""
    client = client or default_client()
    bucket, key = parse_url(url)
    offset = 0  # where the next sample not yet handed out begins
    resumes = 0
    while True:
        try:
            f = Reader(client, bucket, key, None, offset, None, parallel, chunk_size)
        except ShardError as e:
            if e.kind == "NET" and resumes < max_resumes:
                resumes += 1
                if stats is not None:
                    stats["resumes"] = stats.get("resumes", 0) + 1
                continue
            raise
        try:
            cur = None
            cur_key = None
            for hoffs, names, datas in _reader_batches(f._r, url, offset):
                for hoff, name, data in zip(hoffs, names, datas):
                    # split_key inline (this loop runs once a member) but
                    # for a name with its only slash in front.
                    slash = name.rfind("/")
                    if slash:
                        dot = name.find(".", slash + 1)
                        if dot <= slash + 1:
                            continue
                        k, field = name[:dot], name[dot + 1:].lower()
                    else:
                        k, field = split_key(name)
                        if k is None:
                            continue
                    if k != cur_key:
                        if cur is not None:
                            yield cur
                            offset = hoff
                        cur = {"__key__": k, "__url__": url}
                        cur_key = k
                    cur[field] = data
            if cur is not None:
                yield cur
            return
        except ShardError as e:
            if e.kind != "NET" or resumes >= max_resumes:
                raise
            resumes += 1
            if stats is not None:
                stats["resumes"] = stats.get("resumes", 0) + 1
        except MalformedShard as e:
            if stats is not None:
                stats["malformed"] = stats.get("malformed", 0) + 1
            if handler == "raise":
                raise
            if handler == "warn":
                warnings.warn(str(e))
            return
        finally:
            f.close()


def split_shards(urls, rank=0, world_size=1, worker=0, num_workers=1, shuffle=False, seed=0,
                 epoch=0):
    """The shards of 'urls' (brace patterns expanded) that rank 'rank' of
    'world_size', worker 'worker' of 'num_workers', reads in 'epoch': the
    list, shuffled with (seed, epoch) when 'shuffle' (the same order on
    every rank and worker), is dealt to ranks, then to their workers, so
    each shard goes to exactly one."""
    shards = expand_urls(urls)
    if shuffle:
        random.Random("%d:%d" % (seed, epoch)).shuffle(shards)
    return shards[rank::world_size][worker::num_workers]


def shuffled(samples, size, rng):
    """Shuffles a stream through a buffer of at most 'size' samples."""
    if size <= 1:
        yield from samples
        return
    buf = []
    for s in samples:
        if len(buf) < size:
            buf.append(s)
            continue
        i = rng.randrange(size)
        buf[i], s = s, buf[i]
        yield s
    rng.shuffle(buf)
    yield from buf


def samples(urls, rank=0, world_size=1, worker=0, num_workers=1, shuffle=False, seed=0, epoch=0,
            shuffle_buffer=1000, client=None, stats=None, **shard_kw):
    """Yields the samples of this rank's and worker's shards for 'epoch'
    (split_shards), shard after shard, through a shuffle buffer when
    'shuffle'. Keyword arguments go to shard_samples."""
    mine = split_shards(urls, rank, world_size, worker, num_workers, shuffle, seed, epoch)

    def stream():
        for url in mine:
            yield from shard_samples(url, client=client, stats=stats, **shard_kw)

    if not shuffle:
        return stream()
    rng = random.Random("%d:%d:%d:%d" % (seed, epoch, rank, worker))
    return shuffled(stream(), shuffle_buffer, rng)
