"""harness.py: run a real shardstore on a loopback port for integration tests.

Each test script imports this module (found through SHARD_SRCDIR), starts the
server binary named by SHARDSTORE_BIN on a fresh temp data dir with
`--listen 127.0.0.1:0`, reads the port from the single line the server prints
on stdout, and waits for `GET /_/health`. Teardown sends SIGTERM and fails the
test when the exit status is not 0 or the server's stderr holds a sanitizer
report. Only the standard library and boto3/botocore are used.

Exit codes follow automake: 0 pass, 77 skip, anything else fails. A missing
server binary is a failure, never a skip; the only skips are for optional
clients that are not installed (aws, s3cmd, rclone: require_tool) and for
tests that say why they cannot run here.

One case of a script: name it as an argument or in SHARD_TEST_CASE (names
separated by commas or spaces; a case named test_setup always runs), e.g.
    SHARD_TEST_CASE=test_range_reads make check TESTS=tests/integration/test_boto3.py
    scripts/test-one.sh tests/integration/test_boto3.py test_range_reads
An unknown name fails the script and lists the cases it has.
"""

import base64
import contextlib
import hashlib
import http.client
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import xml.etree.ElementTree as ET

ACCESS_KEY = "testkey"
SECRET_KEY = "testsecret"
REGION = "us-east-1"

START_TIMEOUT_S = 20.0
# Every test's teardown is a shutdown test too (issue 16 item 10): the
# server must exit 0 within the default shutdown_grace (10 s) plus the
# guard's 5 s margin, whatever the test's clients did before.
STOP_TIMEOUT_S = 18.0
HTTP_TIMEOUT_S = 30.0

SKIP = 77

# Patterns that fail a test when they appear in the server's stderr.
SANITIZER_PATTERNS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "LeakSanitizer",
    "runtime error:",
    "ERROR: ThreadSanitizer",
    "WARNING: ThreadSanitizer",
)

# A server log line at level ERROR means an internal failure (corruption, I/O
# errors, failed commits): it fails teardown like a sanitizer report, unless
# the test lists it in Server(allowed_errors=[regex, ...]).
LOG_ERROR_LINE = re.compile(r"^\S+ ERROR (.*)$", re.M)

PORT_LINE = re.compile(r"^shardstore: listening on http://127\.0\.0\.1:(\d+)\s*$")


class Skip(Exception):
    """Raise to skip the current test (or the whole script from setup)."""


class Failure(AssertionError):
    pass


# --------------------------------------------------------------------------
# assertions


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def eq(got, want, what=""):
    if got != want:
        g = repr(got)
        w = repr(want)
        if len(g) > 400:
            g = g[:400] + "...(%d chars)" % len(g)
        if len(w) > 400:
            w = w[:400] + "...(%d chars)" % len(w)
        raise Failure("%s: expected %s, got %s" % (what or "value", w, g))


def same_bytes(got, want, what="body"):
    if got == want:
        return
    n = min(len(got), len(want))
    first = next((i for i in range(n) if got[i] != want[i]), n)
    raise Failure(
        "%s differs: got %d bytes, expected %d bytes, first difference at offset %d"
        % (what, len(got), len(want), first)
    )


def parse_s3_error(body):
    """Returns a dict with Code, Message, RequestId (values may be None), or
    raises Failure when 'body' is not an S3 XML error document."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError as e:
        raise Failure("error body is not XML (%s): %r" % (e, body[:300]))
    tag = root.tag.split("}")[-1]
    if tag != "Error":
        raise Failure("error body root is <%s>, expected <Error>: %r" % (tag, body[:300]))
    out = {}
    for child in root:
        out[child.tag.split("}")[-1]] = child.text
    return out


def expect_s3_error(status, body, want_status, want_code, what=""):
    """Checks a raw response is the S3 XML error 'want_code' with HTTP status
    'want_status' (an int, or a tuple of acceptable ints)."""
    prefix = (what + ": ") if what else ""
    ok_status = want_status if isinstance(want_status, tuple) else (want_status,)
    if status not in ok_status:
        raise Failure(
            "%sexpected HTTP %s %s, got HTTP %s body %r"
            % (prefix, want_status, want_code, status, body[:300])
        )
    err = parse_s3_error(body)
    if want_code is not None:
        codes = want_code if isinstance(want_code, tuple) else (want_code,)
        if err.get("Code") not in codes:
            raise Failure("%sexpected <Code>%s, got %r (body %r)" % (prefix, want_code, err.get("Code"), body[:300]))
    check(err.get("Message") is not None, "%serror body lacks <Message>: %r" % (prefix, body[:300]))
    check(err.get("RequestId") is not None, "%serror body lacks <RequestId>: %r" % (prefix, body[:300]))
    return err


@contextlib.contextmanager
def client_error(code, status=None):
    """Context manager: the block must raise botocore ClientError with the
    given error code (a string or tuple) and, if given, HTTP status."""
    from botocore.exceptions import ClientError

    codes = code if isinstance(code, tuple) else (code,)
    try:
        yield
    except ClientError as e:
        got = e.response.get("Error", {}).get("Code")
        got_status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if got not in codes:
            raise Failure("expected error %s, got %s (HTTP %s): %s" % (code, got, got_status, e))
        if status is not None and got_status != status:
            raise Failure("expected HTTP %s for %s, got HTTP %s" % (status, code, got_status))
        return
    raise Failure("expected error %s (HTTP %s), but the call succeeded" % (code, status))


# --------------------------------------------------------------------------
# checksums the stdlib lacks (boto3 needs awscrt for these)


def _crc_table(poly, width):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c & ((1 << width) - 1))
    return table


_CRC32C_TABLE = _crc_table(0x82F63B78, 32)
_CRC64NVME_TABLE = _crc_table(0x9A6C9329AC4BC9B5, 64)


def crc32c(data):
    c = 0xFFFFFFFF
    t = _CRC32C_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc64nvme(data):
    c = 0xFFFFFFFFFFFFFFFF
    t = _CRC64NVME_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFFFFFFFFFF


def checksum_b64(algorithm, data):
    """Base64 of the big-endian checksum S3 puts in x-amz-checksum-*."""
    import zlib

    algorithm = algorithm.upper()
    if algorithm == "CRC32":
        raw = (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")
    elif algorithm == "CRC32C":
        raw = crc32c(data).to_bytes(4, "big")
    elif algorithm == "CRC64NVME":
        raw = crc64nvme(data).to_bytes(8, "big")
    elif algorithm == "SHA1":
        raw = hashlib.sha1(data).digest()
    elif algorithm == "SHA256":
        raw = hashlib.sha256(data).digest()
    else:
        raise ValueError(algorithm)
    return base64.b64encode(raw).decode()


assert crc32c(b"123456789") == 0xE3069283
assert crc64nvme(b"123456789") == 0xAE8B14860A799888


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def random_bytes(n, seed=0):
    """Deterministic pseudo-random bytes (fast: SHAKE-256 of the seed)."""
    return hashlib.shake_256(b"shardstore-test-%d" % seed).digest(n)


def quote_key(key):
    """URI-encodes an object key as SigV4 wants it in the path."""
    return urllib.parse.quote(key, safe="/~")


def quote_param(s):
    return urllib.parse.quote(s, safe="-_.~")


# --------------------------------------------------------------------------
# the server


def server_binary():
    """Returns the path of the shardstore binary: SHARDSTORE_BIN, else
    SHARD_BUILDDIR/shardstore. Without one, fails (raises Failure): a test
    that cannot start the server has tested nothing and must not pass as a
    skip."""
    path = os.environ.get("SHARDSTORE_BIN")
    if not path:
        builddir = os.environ.get("SHARD_BUILDDIR")
        if builddir:
            path = os.path.join(builddir, "shardstore")
    if not path or not os.access(path, os.X_OK):
        raise Failure(
            "the shardstore binary is not found: SHARDSTORE_BIN=%r, SHARD_BUILDDIR=%r (resolved %r is not an "
            "executable file). Build it (make -C build/dev) and run the test through `make check TESTS=...` or "
            "scripts/test-one.sh, or set SHARDSTORE_BIN to the binary."
            % (os.environ.get("SHARDSTORE_BIN"), os.environ.get("SHARD_BUILDDIR"), path)
        )
    # The server runs in its temp data dir: a relative path must not depend on that.
    return os.path.abspath(path)


class Response:
    def __init__(self, status, headers, body, reason=""):
        self.status = status
        self.headers = headers  # http.client.HTTPMessage (case-insensitive)
        self.body = body
        self.reason = reason

    def header(self, name, default=None):
        return self.headers.get(name, default)

    def __repr__(self):
        return "<Response %s %r>" % (self.status, self.body[:200])


class Server:
    """One shardstore process on a temp data dir.

    'config' is the text of a config file (written to the temp dir and passed
    with --config) or None. The data dir survives stop()/kill() so that
    start() again restarts on the same data; cleanup() removes everything.
    """

    def __init__(self, config=None, access_key=ACCESS_KEY, secret_key=SECRET_KEY, env=None, tag="integ", allowed_errors=()):
        self.binary = server_binary()
        self.tmp = tempfile.mkdtemp(prefix="shard-%s-" % tag)
        self.data_dir = os.path.join(self.tmp, "data")
        os.mkdir(self.data_dir)
        self.config_path = None
        if config is not None:
            self.config_path = os.path.join(self.tmp, "shardstore.conf")
            with open(self.config_path, "w") as f:
                f.write(config)
        self.access_key = access_key
        self.secret_key = secret_key
        self.extra_env = dict(env or {})
        self.allowed_errors = [re.compile(x) for x in allowed_errors]
        self.proc = None
        self.port = None
        self.generation = 0
        self.stderr_path = None
        self._stdout_lines = None
        self.problems = []  # every teardown finding (sanitizer reports, bad exit codes)
        self.pending = []  # findings of kill() not yet reported by stop()

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        assert self.proc is None
        self.generation += 1
        self.stderr_path = os.path.join(self.tmp, "stderr.%d.log" % self.generation)
        env = dict(os.environ)
        env["SHARDSTORE_ACCESS_KEY"] = self.access_key
        env["SHARDSTORE_SECRET_KEY"] = self.secret_key
        env.update(self.extra_env)
        argv = [self.binary, "--listen", "127.0.0.1:0", "--data", self.data_dir]
        if self.config_path:
            argv += ["--config", self.config_path]
        errf = open(self.stderr_path, "wb")
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errf,
                env=env,
                cwd=self.tmp,
            )
        finally:
            errf.close()
        lines = queue.Queue()
        self._stdout_lines = lines
        proc = self.proc

        def drain():
            for line in proc.stdout:
                lines.put(line.decode("utf-8", "replace"))
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        first = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._abort_start("no port line on stdout within %.0f s" % START_TIMEOUT_S)
            try:
                line = lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:
                self._abort_start("stdout closed before the port line (exit status %s)" % self.proc.poll())
            first = line
            break
        m = PORT_LINE.match(first)
        if not m:
            self._abort_start("first stdout line is %r, expected 'shardstore: listening on http://127.0.0.1:PORT'" % first)
        self.port = int(m.group(1))
        self.wait_healthy(deadline)
        return self

    def _abort_start(self, why):
        tail = self.stderr_tail()
        self.kill()
        raise Failure("server did not start: %s\n--- server stderr (tail) ---\n%s" % (why, tail))

    def wait_healthy(self, deadline=None):
        if deadline is None:
            deadline = time.monotonic() + START_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._abort_start("exited with status %s before /_/health answered" % self.proc.returncode)
            try:
                r = self.request("GET", "/_/health", sign=False, timeout=2)
                if r.status == 200:
                    return
                last = "HTTP %d" % r.status
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            time.sleep(0.05)
        self._abort_start("/_/health not 200 within %.0f s (last: %s)" % (START_TIMEOUT_S, last))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM, wait, and check exit status 0 and a clean stderr.
        Returns the list of problems found (also kept in self.problems)."""
        problems, self.pending = self.pending, []
        if self.proc is None:
            return problems
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                problems.append("server did not exit within %.0f s of SIGTERM" % STOP_TIMEOUT_S)
        rc = self.proc.returncode
        if rc != 0 and not any("SIGTERM" in p for p in problems):
            problems.append("server exit status after SIGTERM is %s, expected 0" % rc)
        problems += self._sanitizer_problems()
        self._close_proc()
        if problems:
            problems.append("--- server stderr (tail) ---\n" + self.stderr_tail())
        self.problems += problems
        return problems

    def stop_within(self, limit_s):
        """stop(), but a problem also when the process is still alive
        'limit_s' seconds after SIGTERM (it is then killed): shutdown must be
        bounded (shutdown_grace plus a few seconds) whatever clients are
        doing. Call it at teardown after hostile inputs. Returns the list of
        problems (also kept in self.problems)."""
        late = []
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=limit_s)
            except subprocess.TimeoutExpired:
                late.append("server still running %.1f s after SIGTERM" % limit_s)
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.problems += late
        return late + self.stop()

    def kill(self):
        """kill -9 the server (no checks on exit status; sanitizer output so
        far is still checked by the next stop() through self.problems)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        found = self._sanitizer_problems()
        self.problems += found
        self.pending += found
        self._close_proc()

    def restart(self):
        """Clean stop (checked) then start again on the same data dir."""
        problems = self.stop()
        if problems:
            raise Failure("\n".join(problems))
        return self.start()

    def _close_proc(self):
        if self.proc is not None and self.proc.stdout:
            try:
                self.proc.stdout.close()
            except OSError:
                pass
        self.proc = None

    def _sanitizer_problems(self):
        try:
            with open(self.stderr_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return []
        out = []
        for pat in SANITIZER_PATTERNS:
            if pat in text:
                idx = text.index(pat)
                out.append("server stderr (run %d) contains %r:\n%s" % (self.generation, pat, text[max(0, idx - 200): idx + 3000]))
                break
        errors = [m.group(0) for m in LOG_ERROR_LINE.finditer(text) if not any(a.search(m.group(1)) for a in self.allowed_errors)]
        if errors:
            out.append("server log (run %d) has %d ERROR line(s):\n%s" % (self.generation, len(errors), "\n".join(errors[:20])))
        return out

    def stderr_tail(self, n=4000):
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - n))
                return f.read().decode("utf-8", "replace")
        except (OSError, TypeError):
            return "(no stderr)"

    def cleanup(self):
        if self.proc is not None:
            self.kill()
        if not os.environ.get("SHARD_KEEP_TMP"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, exc_type, exc, tb):
        """Stops (checked) and removes everything. Teardown problems fail the
        test, or are printed when the test already failed."""
        try:
            problems = self.stop()
        finally:
            self.cleanup()
        if problems:
            if exc_type is None:
                raise Failure("\n".join(problems))
            print("teardown problems as well:\n" + "\n".join(problems), flush=True)
        return False

    # -- addressing --------------------------------------------------------

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def client(self, access_key=None, secret_key=None, **config_kw):
        """A boto3 S3 client with the default configuration (checksums and
        signing as boto3 ships them), no retries so that errors show."""
        import boto3
        from botocore.config import Config

        kw = dict(
            retries={"max_attempts": 1, "mode": "standard"},
            connect_timeout=10,
            read_timeout=HTTP_TIMEOUT_S,
        )
        kw.update(config_kw)
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=access_key or self.access_key,
            aws_secret_access_key=secret_key or self.secret_key,
            region_name=REGION,
            config=Config(**kw),
        )

    # -- raw HTTP ------------------------------------------------------------

    def sign(self, method, path, query="", headers=None, body=b"", host=None, access_key=None, secret_key=None, region=REGION, payload_hash=None):
        """Returns the headers (a dict) of a SigV4-signed request. 'path' is
        already URI-encoded, 'query' a raw query string (encoded, without
        '?'). 'payload_hash' overrides x-amz-content-sha256 (e.g.
        'UNSIGNED-PAYLOAD'); by default it is the SHA-256 of 'body'."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        host = host or "127.0.0.1:%d" % self.port
        url = "http://%s%s" % (host, path)
        if query:
            url += "?" + query
        hdrs = dict(headers or {})
        if not any(k.lower() == "x-amz-content-sha256" for k in hdrs):
            hdrs["X-Amz-Content-SHA256"] = payload_hash or hashlib.sha256(body or b"").hexdigest()
        req = AWSRequest(method=method, url=url, headers=hdrs, data=body or b"")
        creds = Credentials(access_key or self.access_key, secret_key or self.secret_key)

        class ExactPayloadAuth(S3SigV4Auth):
            # S3SigV4Auth replaces x-amz-content-sha256 with the hash of the
            # body it sees; keep ours (UNSIGNED-PAYLOAD, STREAMING-..., or a
            # deliberately wrong hash).
            def _modify_request_before_signing(self, request):
                want = request.headers.get("X-Amz-Content-SHA256")
                super()._modify_request_before_signing(request)
                del request.headers["X-Amz-Content-SHA256"]
                request.headers["X-Amz-Content-SHA256"] = want

        ExactPayloadAuth(creds, "s3", region).add_auth(req)
        out = {}
        for k, v in req.headers.items():
            out[k] = v.decode() if isinstance(v, bytes) else v
        out["Host"] = host
        return out

    def sign_at(self, when, *args, **kw):
        """sign() as if the clock read 'when' (a naive UTC datetime)."""
        import botocore.auth

        saved = botocore.auth.get_current_datetime
        botocore.auth.get_current_datetime = lambda *a, **k: when
        try:
            return self.sign(*args, **kw)
        finally:
            botocore.auth.get_current_datetime = saved

    def connect(self, timeout=HTTP_TIMEOUT_S):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, query="", headers=None, body=None, sign=True, host=None, timeout=HTTP_TIMEOUT_S, **sign_kw):
        """One request on a fresh connection; returns a Response. Signed
        with SigV4 unless sign=False."""
        hdrs = dict(headers or {})
        if sign:
            hdrs = self.sign(method, path, query, hdrs, body if isinstance(body, bytes) else b"", host=host, **sign_kw)
        elif host:
            hdrs["Host"] = host
        target = path + ("?" + query if query else "")
        conn = self.connect(timeout)
        try:
            if isinstance(body, bytes):
                # Send the body by hand: a server may answer early (e.g. 507)
                # and close while we are still sending; read that answer.
                conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                if not any(k.lower() == "host" for k in hdrs):
                    conn.putheader("Host", "127.0.0.1:%d" % self.port)
                for k, v in hdrs.items():
                    conn.putheader(k, v)
                if not any(k.lower() == "content-length" for k in hdrs):
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders()
                try:
                    conn.send(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
            else:
                conn.request(method, target, body=body, headers=hdrs)
            r = conn.getresponse()
            data = r.read()
            return Response(r.status, r.headers, data, r.reason)
        finally:
            conn.close()

    def health(self, timeout=5):
        try:
            return self.request("GET", "/_/health", sign=False, timeout=timeout).status
        except (OSError, http.client.HTTPException) as e:
            return "unreachable: %r" % e

    def metrics(self):
        """Parses /_/metrics (unsigned, or signed if the server wants auth)
        into {name: float}, ignoring labelled series."""
        r = self.request("GET", "/_/metrics", sign=False)
        if r.status in (401, 403):
            r = self.request("GET", "/_/metrics")
        if r.status != 200:
            raise Failure("GET /_/metrics: HTTP %d %r" % (r.status, r.body[:300]))
        out = {}
        for line in r.body.decode("utf-8", "replace").splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) >= 2 and "{" not in parts[0]:
                try:
                    out[parts[0]] = float(parts[1])
                except ValueError:
                    pass
        return out

    def metric(self, name):
        m = self.metrics()
        if name not in m:
            raise Failure("/_/metrics has no %s" % name)
        return m[name]


# --------------------------------------------------------------------------
# the runner


def run_tests(tests, *args):
    """Runs each test function with 'args'; returns (failed, passed, skipped)
    lists of names. Prints a line per test and the traceback of failures."""
    failed, passed, skipped = [], [], []
    server = args[0] if args and isinstance(args[0], Server) else None
    for t in tests:
        name = t.__name__
        t0 = time.monotonic()
        try:
            t(*args)
        except Skip as e:
            skipped.append(name)
            print("SKIP %s: %s" % (name, e), flush=True)
        except Exception as e:
            failed.append(name)
            print("FAIL %s (%.2fs): %s" % (name, time.monotonic() - t0, e), flush=True)
            if not isinstance(e, Failure):
                traceback.print_exc(file=sys.stdout)
            else:
                tb = traceback.extract_tb(e.__traceback__)
                here = [f for f in tb if f.filename != __file__]
                if here:
                    f = here[-1]
                    print("     at %s:%d: %s" % (os.path.basename(f.filename), f.lineno, f.line), flush=True)
        else:
            passed.append(name)
            print("PASS %s (%.2fs)" % (name, time.monotonic() - t0), flush=True)
        if server is not None and not server.running() and server.proc is not None:
            rc = server.proc.returncode
            failed.append(name + " (server died)")
            print("FAIL %s: the server died (exit status %s)\n--- server stderr (tail) ---\n%s" % (name, rc, server.stderr_tail()), flush=True)
            server.kill()
            server.start()
    return failed, passed, skipped


def selected_cases():
    """The case names asked for: the script's arguments, else the words of
    SHARD_TEST_CASE (commas or spaces between names); [] means every case."""
    names = sys.argv[1:] or os.environ.get("SHARD_TEST_CASE", "").replace(",", " ").split()
    return [n for n in names if n]


def select_tests(tests, names):
    """Returns the functions of 'tests' named in 'names' (in the script's
    order), or all of 'tests' when 'names' is empty. A case named test_setup
    (what later cases of a shared server build on) always stays. Raises
    Failure naming the cases that exist when a name matches none."""
    if not names:
        return list(tests)
    by_name = {t.__name__: t for t in tests}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise Failure("no test case %s in %s; its cases: %s"
                      % (", ".join(unknown), os.path.basename(sys.argv[0]), " ".join(by_name)))
    return [t for t in tests if t.__name__ in names or t.__name__ == "test_setup"]


def main(tests, shared_server=True, config=None):
    """Entry point of a test script. With shared_server, one server is
    started and passed to every test, then stopped and checked; otherwise
    each test is called with no arguments and manages its own servers.
    Runs only the cases selected_cases() names, when it names any."""
    status = 0
    server = None
    try:
        tests = select_tests(tests, selected_cases())
        if shared_server:
            server = Server(config=config)
            server.start()
            failed, passed, skipped = run_tests(tests, server)
        else:
            failed, passed, skipped = run_tests(tests)
        if server is not None:
            problems = server.stop()
            if problems:
                failed.append("teardown")
                print("FAIL teardown:\n" + "\n".join(problems), flush=True)
        print("%d passed, %d failed, %d skipped" % (len(passed), len(failed), len(skipped)))
        if failed:
            print("failed: " + ", ".join(failed))
            status = 1
        elif skipped and not passed:
            status = SKIP
    except Skip as e:
        print("SKIP: %s" % e)
        status = SKIP
    except Failure as e:
        print("FAIL: %s" % e)
        status = 1
    finally:
        if server is not None:
            server.cleanup()
    sys.exit(status)


def require_tool(name):
    path = shutil.which(name)
    if not path:
        raise Skip("%s is not installed" % name)
    return path


def run_cmd(argv, timeout=120, env=None, input=None, check_rc=True):
    """Runs a command with a timeout; returns CompletedProcess (bytes).
    With check_rc, a non-zero exit fails the test showing its output."""
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, input=input, stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise Failure("%s timed out after %s s; stderr %r" % (argv, timeout, (e.stderr or b"")[-2000:]))
    if check_rc and p.returncode != 0:
        raise Failure(
            "%s exited %d\nstdout: %s\nstderr: %s"
            % (" ".join(argv), p.returncode, p.stdout[-2000:].decode("utf-8", "replace"), p.stderr[-2000:].decode("utf-8", "replace"))
        )
    return p
