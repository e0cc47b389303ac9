"""shardstore: Python access to shardstore (and any S3 endpoint) through
libshard, the project's C client, with ctypes and nothing else beyond the
standard library. Bytes move in C: parallel range reads, keep-alive
connections, retries that resume where the bytes stopped.

    import shardstore
    with shardstore.open("s3://bucket/shard-000000.tar") as f:        # an object
        head = f.read(1024)
    shardstore.open("s3://bucket/obj", offset=100, length=50)         # a range
    shardstore.open("s3://bucket/shard.tar", member="000123.jpg")     # a tar member
    for m in shardstore.list_members("s3://bucket/shard.tar"): ...    # the member index
    shardstore.batch_get("bucket", [("shard.tar", "000123.jpg"), ("obj", None)])

Endpoint, region and credentials are resolved by libshard as aws-cli does
($AWS_ENDPOINT_URL, $AWS_ACCESS_KEY_ID, ~/.aws/...), or given to Client().
A Client belongs to the process that made it: after a fork (DataLoader
workers) default_client() makes a new one. PyTorch datasets are in
shardstore.torch, the only module that imports torch.
"""
import ctypes
import io
import os
import re
import threading
import xml.etree.ElementTree as ET

from . import _lib
from ._lib import lib

__all__ = ["Client", "ShardError", "Member", "open", "default_client", "parse_url",
           "expand_urls", "list_members", "get_member", "batch_get", "BATCH_ERROR_PREFIX"]

UINT64_MAX = (1 << 64) - 1
# Failed batch entries (ContinueOnError) come as members named this + entry name.
BATCH_ERROR_PREFIX = "__error__/"
BATCH_MAX = 10000


class ShardError(OSError):
    """A libshard call failed. 'kind' is libshard's error kind ("S3",
    "NET", "IO", "ARG", "CONFIG", "PROTO", "FORMAT"), 'http_status' and 'code' the
    server's answer when there was one."""

    KINDS = {-1: "S3", -2: "NET", -3: "IO", -4: "ARG", -5: "CONFIG", -6: "PROTO", -7: "FORMAT"}

    def __init__(self, kind, http_status=0, code="", message=""):
        self.kind = kind
        self.http_status = http_status
        self.code = code
        self.message = message
        super().__init__("%s error%s: %s: %s" % (
            kind, " (HTTP %d)" % http_status if http_status else "", code, message))

    @classmethod
    def from_struct(cls, err, rc=None):
        kind = cls.KINDS.get(err.kind or rc, str(err.kind or rc))
        return cls(kind, err.http_status, err.code.decode("utf-8", "replace"),
                   err.message.decode("utf-8", "replace"))

    @property
    def is_not_found(self):
        return self.http_status == 404


def _b(s):
    return s.encode("utf-8") if isinstance(s, str) else s


def parse_url(url):
    """'s3://bucket/key' -> ('bucket', 'key'); the key may be empty."""
    m = re.match(r"^s3://([^/]+)/?(.*)$", url, re.S)
    if not m:
        raise ValueError("not an s3://bucket/key URL: %r" % url)
    return m.group(1), m.group(2)


def _expand_one(pattern):
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    head, body, tail = pattern[:m.start()], m.group(1), pattern[m.end():]
    r = re.match(r"^(-?\d+)\.\.(-?\d+)$", body)
    if r:
        a, b = r.group(1), r.group(2)
        width = len(a) if a.lstrip("-").startswith("0") and len(a) > 1 else 0
        lo, hi = int(a), int(b)
        step = 1 if hi >= lo else -1
        items = ["%0*d" % (width, i) for i in range(lo, hi + step, step)]
    else:
        items = body.split(",")
    out = []
    for it in items:
        out.extend(_expand_one(head + it + tail))
    return out


def expand_urls(urls):
    """A list (or one string) of URLs with brace patterns, expanded in order:
    'shard-{000000..000002}.tar' -> shard-000000.tar, shard-000001.tar,
    shard-000002.tar (zero padding kept); '{a,b}' lists alternatives."""
    if isinstance(urls, str):
        urls = [urls]
    out = []
    for u in urls:
        out.extend(_expand_one(u))
    return out


class Member:
    """One member of a tar object, from the server's member index."""
    __slots__ = ("name", "offset", "size", "mode", "mtime")

    def __init__(self, name, offset, size, mode=0o644, mtime=0):
        self.name, self.offset, self.size, self.mode, self.mtime = name, offset, size, mode, mtime

    def __repr__(self):
        return "Member(%r, offset=%d, size=%d)" % (self.name, self.offset, self.size)


class Client:
    """A libshard client: a pool of keep-alive connections, usable from
    several threads of one process. Arguments left None are resolved like
    aws-cli does. 'parallel' and 'chunk_size' shape streamed reads (parallel
    range requests of chunk_size bytes); 'max_retries' bounds the retries of
    one request before an error surfaces."""

    def __init__(self, endpoint_url=None, access_key=None, secret_key=None, region=None,
                 profile=None, session_token=None, parallel=None, chunk_size=None,
                 max_retries=None, retry_base_ms=None, connect_timeout_ms=None,
                 stall_timeout_ms=None):
        self._keep = [_b(v) for v in (endpoint_url, profile, region, access_key, secret_key,
                                      session_token)]
        cfg = _lib.ConfigIn(*self._keep)
        opts = _lib.Options()
        opts.parallel = parallel or 0
        opts.chunk_size = chunk_size or 0
        opts.max_retries = max_retries or 0
        opts.retry_base_ms = retry_base_ms or 0
        opts.connect_timeout_ms = connect_timeout_ms or 0
        opts.stall_timeout_ms = stall_timeout_ms or 0
        err = _lib.ShardErrorStruct()
        self._c = lib.shard_client_create(ctypes.byref(cfg), ctypes.byref(opts), ctypes.byref(err))
        if not self._c:
            raise ShardError.from_struct(err, -5)
        self.pid = os.getpid()

    def close(self):
        if getattr(self, "_c", None) and self.pid == os.getpid():
            lib.shard_client_destroy(self._c)
        self._c = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @staticmethod
    def _opts(parallel, chunk_size):
        if not parallel and not chunk_size:
            return None
        o = _lib.Options()
        o.parallel = parallel or 0
        o.chunk_size = chunk_size or 0
        return ctypes.byref(o)

    # ---- objects ----------------------------------------------------------

    def head(self, bucket, key):
        """(size, etag) of an object."""
        info, err = _lib.ObjectInfo(), _lib.ShardErrorStruct()
        rc = lib.shard_head(self._c, _b(bucket), _b(key), ctypes.byref(info), ctypes.byref(err))
        if rc:
            raise ShardError.from_struct(err, rc)
        return info.size, info.etag.decode()

    def put(self, bucket, key, data):
        """One PUT of 'data' (bytes-like)."""
        data = bytes(data)
        err = _lib.ShardErrorStruct()
        rc = lib.shard_put_buffer(self._c, _b(bucket), _b(key), data, len(data), ctypes.byref(err))
        if rc:
            raise ShardError.from_struct(err, rc)

    def get(self, bucket, key):
        """The whole object in one GET on a pooled keep-alive connection
        (small objects: answers over 64 MiB are cut; use open() for more)."""
        resp, err = _lib.Response(), _lib.ShardErrorStruct()
        rc = lib.shard_request(self._c, b"GET", _b("/%s/%s" % (bucket, key)), None, 0, None, 0,
                               ctypes.byref(resp), ctypes.byref(err))
        try:
            if rc:
                raise ShardError.from_struct(err, rc)
            return ctypes.string_at(resp.body, resp.body_len) if resp.body_len else b""
        finally:
            lib.shard_response_cleanup(ctypes.byref(resp))

    def read_range(self, bucket, key, offset, length):
        """Exactly 'length' bytes at 'offset', read as parallel ranges."""
        buf = bytearray(length)
        if length == 0:
            return bytes(buf)
        err = _lib.ShardErrorStruct()
        c_buf = (ctypes.c_char * length).from_buffer(buf)
        rc = lib.shard_read_range(self._c, _b(bucket), _b(key), offset, length, c_buf,
                                  ctypes.byref(err))
        if rc:
            raise ShardError.from_struct(err, rc)
        return bytes(buf)

    def open(self, bucket, key, member=None, offset=0, length=None, parallel=None,
             chunk_size=None, buffer_size=1 << 20):
        """A readable binary stream of the object, a range of it, or of tar
        member 'member' (a range of it with offset/length)."""
        raw = Reader(self, bucket, key, member, offset, length, parallel, chunk_size)
        return io.BufferedReader(raw, buffer_size) if buffer_size else raw

    # ---- tar members --------------------------------------------------------

    def member_head(self, bucket, key, member):
        """(size, object etag) of a tar member."""
        info, err = _lib.ObjectInfo(), _lib.ShardErrorStruct()
        rc = lib.shard_member_head(self._c, _b(bucket), _b(key), _b(member), ctypes.byref(info),
                                   ctypes.byref(err))
        if rc:
            raise ShardError.from_struct(err, rc)
        return info.size, info.etag.decode()

    def get_member(self, bucket, key, member, size=None, offset=0, length=None):
        """The bytes of a tar member (or of a range of it) in one request.
        With 'size' (known from a listing) no HEAD is needed."""
        if size is None:
            size, _ = self.member_head(bucket, key, member)
        cap = max(0, size - offset) if length is None else min(length, max(0, size - offset))
        buf = bytearray(cap)
        if cap == 0:
            return b""
        err = _lib.ShardErrorStruct()
        c_buf = (ctypes.c_char * cap).from_buffer(buf)
        n = lib.shard_member_get(self._c, _b(bucket), _b(key), _b(member), offset,
                                 UINT64_MAX if length is None else length, c_buf, cap,
                                 ctypes.byref(err))
        if n < 0:
            raise ShardError.from_struct(err, n)
        return bytes(buf) if n == cap else bytes(memoryview(buf)[:n])

    def list_members(self, bucket, key, marker=None, page=1000):
        """Yields the Members of a tar object in archive order, fetching one
        page of up to 'page' at a time (memory stays bounded)."""
        while True:
            got = []

            def one(ctx, m):
                got.append(Member(m.contents.name.decode("utf-8", "surrogateescape"),
                                  m.contents.offset, m.contents.size, m.contents.mode,
                                  m.contents.mtime_s))
                return 1 if len(got) >= page else 0

            fn = _lib.MEMBER_FN(one)
            err = _lib.ShardErrorStruct()
            rc = lib.shard_member_list(self._c, _b(bucket), _b(key),
                                       marker.encode("utf-8", "surrogateescape") if marker else None,
                                       fn, None, ctypes.byref(err))
            if rc < 0:
                raise ShardError.from_struct(err, rc)
            yield from got
            if rc == 0 or not got:
                return
            marker = got[-1].name

    # ---- batch GET ------------------------------------------------------------

    def batch_stream(self, bucket, entries, continue_on_error=True, write=None):
        """Batch GET of 'entries' (each (key,), (key, member) or (key, member,
        range) with member/range None or a string like "bytes=0-99"): the
        tar answer is passed to write(bytes) as it streams in. Returns
        nothing; raises ShardError (SHARD "NET" with code BatchCut when the
        server cut the stream at a failed entry without continue_on_error)."""
        entries = list(entries)
        if not entries or len(entries) > BATCH_MAX:
            raise ValueError("a batch holds 1 to %d entries, not %d" % (BATCH_MAX, len(entries)))
        arr = (_lib.BatchEntry * len(entries))()
        keep = []
        for i, e in enumerate(entries):
            if isinstance(e, str):
                e = (e,)
            vals = [_b(v) if v is not None else None for v in (list(e) + [None, None])[:3]]
            keep.append(vals)
            arr[i].key, arr[i].member, arr[i].range = vals
        failure = []

        def sink(ctx, data, n):
            try:
                write(ctypes.string_at(data, n))
                return 0
            except BaseException as ex:  # noqa: B902 - re-raised below
                failure.append(ex)
                return 1

        fn = _lib.WRITE_FN(sink)
        err = _lib.ShardErrorStruct()
        rc = lib.shard_batch_get(self._c, _b(bucket), arr, len(entries), bool(continue_on_error),
                                 fn, None, ctypes.byref(err))
        if failure:
            raise failure[0]
        if rc:
            raise ShardError.from_struct(err, rc)

    def batch_get(self, bucket, entries, continue_on_error=True):
        """Batch GET of 'entries' (see batch_stream) in one request. Returns a
        list, in request order, of (name, bytes) for each entry read and
        (name, ShardError) for each that failed (with continue_on_error);
        'name' is "key" or "key/member"."""
        from .samples import iter_members

        chunks = []
        self.batch_stream(bucket, entries, continue_on_error, chunks.append)
        out = []
        for _, name, data in iter_members(io.BytesIO(b"".join(chunks)), "s3://%s?batch" % bucket):
            if name.startswith(BATCH_ERROR_PREFIX):
                out.append((name[len(BATCH_ERROR_PREFIX):], _batch_error(data)))
            else:
                out.append((name, data))
        return out


def _batch_error(xml):
    try:
        doc = ET.fromstring(xml)
        code, msg = doc.findtext("Code") or "", doc.findtext("Message") or ""
    except ET.ParseError:
        code, msg = "InternalError", xml[:200].decode("utf-8", "replace")
    status = {"NoSuchKey": 404, "NoSuchMember": 404, "AccessDenied": 403,
              "InvalidArchive": 400, "InvalidRange": 416}.get(code, 500)
    return ShardError("S3", status, code, msg)


class Reader(io.RawIOBase):
    """A raw stream over libshard's parallel range reader (see Client.open).
    'offset' and 'size' tell where it stands in the object or member."""

    def __init__(self, client, bucket, key, member=None, offset=0, length=None, parallel=None,
                 chunk_size=None):
        super().__init__()
        self.client = client
        self.bucket, self.key, self.member = bucket, key, member
        self.start = offset
        err = _lib.ShardErrorStruct()
        opts = Client._opts(parallel, chunk_size)
        n = UINT64_MAX if length is None else length
        if member is None:
            self._r = lib.shard_reader_open(client._c, _b(bucket), _b(key), offset, n, opts,
                                            ctypes.byref(err))
        else:
            self._r = lib.shard_member_reader_open(client._c, _b(bucket), _b(key), _b(member),
                                                   offset, n, opts, ctypes.byref(err))
        if not self._r:
            raise ShardError.from_struct(err, -1)
        self.length = lib.shard_reader_length(self._r)
        self.size = lib.shard_reader_object_size(self._r)
        self.pos = 0

    def readable(self):
        return True

    def readinto(self, b):
        mv = memoryview(b).cast("B")
        if len(mv) == 0 or self.pos >= self.length:
            return 0
        err = _lib.ShardErrorStruct()
        c_buf = (ctypes.c_char * len(mv)).from_buffer(mv)
        n = lib.shard_reader_read(self._r, c_buf, len(mv), ctypes.byref(err))
        if n < 0:
            raise ShardError.from_struct(err, n)
        self.pos += n
        return n

    def tell(self):
        return self.start + self.pos

    def close(self):
        if getattr(self, "_r", None):
            lib.shard_reader_close(self._r)
            self._r = None
        super().close()


_default = {"pid": None, "client": None, "kwargs": {}}
_default_lock = threading.Lock()


def default_client(**kwargs):
    """The process's shared Client (made on first use, and again after a
    fork). Keyword arguments, when given, replace those it is made with."""
    with _default_lock:
        if kwargs:
            _default["kwargs"] = kwargs
            _default["client"] = None
        if _default["client"] is None or _default["pid"] != os.getpid():
            _default["client"] = Client(**_default["kwargs"])
            _default["pid"] = os.getpid()
        return _default["client"]


def open(url, mode="rb", member=None, offset=0, length=None, client=None, **kw):  # noqa: A001
    """A readable binary stream of s3://bucket/key, of 'length' bytes at
    'offset' of it, or of its tar member 'member' (Client.open)."""
    if mode not in ("rb", "r"):
        raise ValueError("shardstore.open reads only (mode 'rb')")
    bucket, key = parse_url(url)
    f = (client or default_client()).open(bucket, key, member, offset, length, **kw)
    return io.TextIOWrapper(f) if mode == "r" else f


def list_members(url, client=None):
    """Yields the Members of the tar object at 'url' (paged)."""
    bucket, key = parse_url(url)
    return (client or default_client()).list_members(bucket, key)


def get_member(url, member, client=None, **kw):
    """The bytes of tar member 'member' of the object at 'url'."""
    bucket, key = parse_url(url)
    return (client or default_client()).get_member(bucket, key, member, **kw)


def batch_get(bucket, entries, continue_on_error=True, client=None):
    """Client.batch_get on the default client."""
    return (client or default_client()).batch_get(bucket, entries, continue_on_error)
