"""samples.py: WebDataset-style samples streamed out of tar shards, with
no dependency on torch (shardstore.torch wraps this in its datasets).

A shard is read front to back with libshard's parallel range reader and
parsed here (ustar, pax path/size records, GNU long names; other entry
types skipped). Members are grouped into samples by key, as WebDataset
does: the key is the name up to the first dot of its last path component
(directory kept: "a/000123" for "a/000123.seg.png"), the field is the rest
in lower case ("seg.png"); consecutive members with one key form a sample
{"__key__": key, "__url__": url, field: bytes, ...}. Names without a dot
in their last component belong to no sample and are skipped.

Resuming: a sample is handed out only once the header of the next one has
been read (or the archive ended), and the byte offset of that header is
kept. When the connection fails beyond libshard's own retries, the shard is
opened again at that offset, so no sample is repeated or lost.
"""
import random
import warnings
import zlib

from . import ShardError, default_client, expand_urls, parse_url

BLOCK = 512
_ZERO_BLOCK = bytes(BLOCK)
_EXT_TYPES = frozenset(b"xgLK")
_FILE_TYPES = frozenset(b"0\x007")


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


def _octal(field, url, offset):
    if field and field[0] & 0x80:
        # GNU base-256: big-endian two's complement of the remaining bytes.
        v = int.from_bytes(field[1:], "big")
        if field[0] & 0x40:
            raise MalformedShard(url, offset, "negative number")
        return v
    s = field.split(b"\0", 1)[0].strip(b" \0")
    if not s:
        return 0
    try:
        return int(s, 8)
    except ValueError:
        raise MalformedShard(url, offset, "bad number %r" % s) from None


def _pax(data, url, offset):
    out = {}
    pos = 0
    while pos < len(data):
        sp = data.find(b" ", pos)
        if sp < 0:
            break
        try:
            n = int(data[pos:sp])
        except ValueError:
            raise MalformedShard(url, offset, "bad pax record") from None
        if n <= 0 or pos + n > len(data):
            raise MalformedShard(url, offset, "bad pax record length")
        rec = data[sp + 1:pos + n - 1]
        k, _, v = rec.partition(b"=")
        out[k.decode("utf-8", "replace")] = v
        pos += n
    return out


def _checksum_ok(hdr, want):
    """Whether 'want' is the ustar checksum of header 'hdr' (its bytes
    summed, the checksum field counted as spaces). The sum comes from
    adler32, whose low half is 1 + the byte sum modulo 65521, in C: summing
    512 bytes in Python cost more than the rest of a small member's
    parsing. A header sums to at most 130,560, so two sums agreeing modulo
    65521 differ by a multiple of it, which a damaged header hits about as
    rarely as the plain sum's own blind spots."""
    total = (zlib.adler32(hdr) & 0xFFFF) - 1 - sum(hdr[148:156]) + 8 * 32
    return want % 65521 == total % 65521


def _number(field, url, offset):
    """A numeric header field: the plain case (octal digits then one NUL or
    space) parsed at once, anything else (NUL padding, base-256) by
    _octal, which gives the same value wherever both apply."""
    if field[-1] in (0, 32):
        try:
            return int(field[:-1], 8)
        except ValueError:
            pass
    return _octal(field, url, offset)


def iter_members(f, url="", base=0, read_size=1 << 20):
    """Yields (header offset, name, data) for each regular file of the tar
    stream 'f' (a binary file object positioned at a header, 'base' bytes
    into the archive); header offset is where its first header (pax or GNU
    long name included) begins. Raises MalformedShard on a bad or truncated
    archive, and whatever 'f' raises (ShardError) as is.

    'f' is read in pieces of 'read_size' bytes and each piece is parsed in
    place: a member's data is one slice of it (one copy), or, when it runs
    over the end of the piece, one join of the pieces it spans."""
    read = f.read
    buf = b""  # the piece being parsed; buf[i:] is not parsed yet
    i = 0
    pos = base  # archive offset of buf[i]
    ext_start = None
    long_name = None
    pax = {}

    def take(n, what):
        """The next n bytes when they run past the piece in hand: the rest
        of it and the next pieces joined (one copy); buf/i move past them."""
        nonlocal buf, i
        have = len(buf) - i
        if have >= n:
            i += n
            return buf[i - n:i]
        parts = [memoryview(buf)[i:]] if have else []
        while have < n:
            piece = read(max(read_size, n - have))
            if not piece:
                raise MalformedShard(url, pos, "truncated in %s" % what)
            parts.append(piece)
            have += len(piece)
        last = parts[-1]
        keep = have - n  # bytes of the last piece beyond the n taken
        parts[-1] = memoryview(last)[:len(last) - keep]
        buf, i = last, len(last) - keep
        return b"".join(parts)

    while True:
        if len(buf) - i >= BLOCK:
            hdr = buf[i:i + BLOCK]
            i += BLOCK
        else:
            rest = buf[i:]
            piece = read(read_size)
            if not piece and not rest:
                return  # ended right after an entry: tolerated, as tarfile does
            buf, i = rest + piece, 0
            while len(buf) < BLOCK and piece:
                piece = read(read_size)
                buf += piece
            if len(buf) < BLOCK:
                raise MalformedShard(url, pos, "truncated header")
            hdr = buf[:BLOCK]
            i = BLOCK
        if hdr == _ZERO_BLOCK:
            return
        if hdr[154] == 0:
            try:
                want = int(hdr[148:154], 8)
            except ValueError:
                want = _octal(hdr[148:156], url, pos)
        else:
            want = _octal(hdr[148:156], url, pos)
        if not _checksum_ok(hdr, want):
            raise MalformedShard(url, pos, "bad header checksum")
        start = pos if ext_start is None else ext_start
        typ = hdr[156]
        size = _number(hdr[124:136], url, pos)
        pos += BLOCK
        if size < 0:
            raise MalformedShard(url, pos, "negative size")
        padded = (size + BLOCK - 1) & ~(BLOCK - 1)
        if typ in _EXT_TYPES:
            if size > 1 << 20:
                raise MalformedShard(url, pos, "extended header of %d bytes" % size)
            data = bytes(take(padded, "an extended header")[:size])
            pos += padded
            if typ == 0x78:  # x
                pax = _pax(data, url, pos)
                ext_start = start
            elif typ == 0x4C:  # L
                long_name = data.split(b"\0", 1)[0]
                ext_start = start
            continue
        if pax:
            if "size" in pax:
                try:
                    size = int(pax["size"])
                except ValueError:
                    raise MalformedShard(url, pos, "bad pax size") from None
                if size < 0:
                    raise MalformedShard(url, pos, "bad pax size")
                padded = (size + BLOCK - 1) & ~(BLOCK - 1)
            raw = pax.get("path")
            pax = {}
        else:
            raw = None
        if raw is None:
            if long_name is not None:
                raw = long_name
            else:
                raw = hdr[0:100].split(b"\0", 1)[0]
                if hdr[257:262] == b"ustar" and hdr[345] != 0:
                    raw = hdr[345:500].split(b"\0", 1)[0] + b"/" + raw
        name = raw.decode("utf-8", "surrogateescape")
        long_name, ext_start = None, None
        if typ in _FILE_TYPES:
            if len(buf) - i >= size:
                data = buf[i:i + size]
                i += size
            else:
                data = take(size, "member data")
            pad = padded - size
            if pad:
                if len(buf) - i >= pad:
                    i += pad
                else:
                    take(pad, "padding")
            pos += padded
            yield start, name, data
        elif padded:
            # Directories, links, devices: no sample data (skip any bytes).
            if len(buf) - i >= padded:
                i += padded
            else:
                take(padded, "entry data")
            pos += padded


def shard_samples(url, client=None, handler="raise", max_resumes=10, parallel=None,
                  chunk_size=None, stats=None, buffer_size=1 << 20):
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
            f = client.open(bucket, key, offset=offset, parallel=parallel, chunk_size=chunk_size,
                            buffer_size=buffer_size)
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
            for hoff, name, data in iter_members(f, url, offset):
                # split_key inline (this loop runs once a member) but for
                # a name with its only slash in front.
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
