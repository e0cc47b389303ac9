"""_lib.py: loads libshard.so with ctypes and declares the calls of
client/shard.h that the package uses.

The library is looked for, in order: $SHARDSTORE_LIBSHARD (a path to the
.so), $SHARD_BUILDDIR/client/.libs, the build directories of the source
tree this package sits in (build/*/client/.libs), then the system's
(ctypes.util.find_library, i.e. ldconfig). Struct layouts mirror
client/shard.h field for field; keep them in step with it.
"""
import ctypes
import ctypes.util
import glob
import os

c_u64 = ctypes.c_uint64


class ShardErrorStruct(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("http_status", ctypes.c_long),
                ("code", ctypes.c_char * 64), ("message", ctypes.c_char * 512)]


class ConfigIn(ctypes.Structure):
    _fields_ = [("endpoint_url", ctypes.c_char_p), ("profile", ctypes.c_char_p),
                ("region", ctypes.c_char_p), ("access_key", ctypes.c_char_p),
                ("secret_key", ctypes.c_char_p), ("session_token", ctypes.c_char_p)]


class Options(ctypes.Structure):
    _fields_ = [("parallel", ctypes.c_uint), ("chunk_size", c_u64), ("part_size", c_u64),
                ("max_retries", ctypes.c_uint), ("retry_base_ms", ctypes.c_uint),
                ("connect_timeout_ms", ctypes.c_uint), ("stall_timeout_ms", ctypes.c_uint)]


class ObjectInfo(ctypes.Structure):
    _fields_ = [("size", c_u64), ("etag", ctypes.c_char * 80), ("last_modified", ctypes.c_char * 40)]


class MemberStruct(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("offset", c_u64), ("size", c_u64),
                ("mode", ctypes.c_uint32), ("mtime_s", ctypes.c_int64)]


# struct shard_tar_member is 5 fields of 8 bytes (name, name_len, data, size,
# header_offset): the package reads arrays of them as flat uint64s.
TAR_MEMBER_WORDS = 5


class BatchEntry(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("member", ctypes.c_char_p), ("range", ctypes.c_char_p)]


class Response(ctypes.Structure):
    _fields_ = [("http_status", ctypes.c_long), ("body", ctypes.c_void_p), ("body_len", ctypes.c_size_t)]


MEMBER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(MemberStruct))
WRITE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


def _candidates():
    env = os.environ.get("SHARDSTORE_LIBSHARD")
    if env:
        yield env
    builddir = os.environ.get("SHARD_BUILDDIR")
    if builddir:
        yield os.path.join(builddir, "client", ".libs", "libshard.so")
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(os.path.dirname(here))  # python/shardstore -> the source tree
    for path in sorted(glob.glob(os.path.join(top, "build", "*", "client", ".libs", "libshard.so"))):
        yield path
    found = ctypes.util.find_library("shard")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("shardstore: libshard.so not found; build it (make) or set "
                      "SHARDSTORE_LIBSHARD to its path. Tried: %s" % ("; ".join(tried) or "nothing"))


lib = _load()

P = ctypes.POINTER
vp = ctypes.c_void_p
cp = ctypes.c_char_p
_protos = {
    "shard_client_create": (vp, [P(ConfigIn), P(Options), P(ShardErrorStruct)]),
    "shard_client_destroy": (None, [vp]),
    "shard_head": (ctypes.c_int, [vp, cp, cp, P(ObjectInfo), P(ShardErrorStruct)]),
    "shard_reader_open": (vp, [vp, cp, cp, c_u64, c_u64, P(Options), P(ShardErrorStruct)]),
    "shard_member_reader_open": (vp, [vp, cp, cp, cp, c_u64, c_u64, P(Options), P(ShardErrorStruct)]),
    "shard_reader_length": (c_u64, [vp]),
    "shard_reader_object_size": (c_u64, [vp]),
    "shard_reader_read": (ctypes.c_long, [vp, vp, ctypes.c_size_t, P(ShardErrorStruct)]),
    "shard_reader_close": (None, [vp]),
    "shard_read_range": (ctypes.c_int, [vp, cp, cp, c_u64, c_u64, vp, P(ShardErrorStruct)]),
    "shard_member_head": (ctypes.c_int, [vp, cp, cp, cp, P(ObjectInfo), P(ShardErrorStruct)]),
    "shard_member_get": (ctypes.c_long, [vp, cp, cp, cp, c_u64, c_u64, vp, ctypes.c_size_t,
                                         P(ShardErrorStruct)]),
    "shard_member_list": (ctypes.c_int, [vp, cp, cp, cp, MEMBER_FN, vp, P(ShardErrorStruct)]),
    "shard_batch_get": (ctypes.c_int, [vp, cp, P(BatchEntry), ctypes.c_size_t, ctypes.c_bool,
                                       WRITE_FN, vp, P(ShardErrorStruct)]),
    "shard_request": (ctypes.c_int, [vp, cp, cp, vp, ctypes.c_size_t, vp, ctypes.c_size_t,
                                     P(Response), P(ShardErrorStruct)]),
    "shard_response_cleanup": (None, [P(Response)]),
    "shard_put_buffer": (ctypes.c_int, [vp, cp, cp, vp, ctypes.c_size_t, P(ShardErrorStruct)]),
    "shard_reader_next": (ctypes.c_int, [vp, P(vp), P(ctypes.c_size_t), P(ShardErrorStruct)]),
    "shard_tar_create": (vp, [c_u64]),
    "shard_tar_destroy": (None, [vp]),
    "shard_tar_input": (ctypes.c_int, [vp, vp, ctypes.c_size_t, P(ShardErrorStruct)]),
    "shard_tar_next": (ctypes.c_int, [vp, vp, ctypes.c_size_t, P(ShardErrorStruct)]),
    "shard_tar_read": (ctypes.c_int, [vp, vp, vp, ctypes.c_size_t, P(ShardErrorStruct)]),
    "shard_tar_error": (cp, [vp, P(c_u64)]),
}
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args
