"""shard_util.py: running the `shard` tool and its test driver against a
harness.Server, with a private HOME so that no real ~/.aws leaks in."""
import atexit
import contextlib
import http.server
import os
import shutil
import subprocess
import tempfile
import threading

import harness as h


def builddir():
    return os.environ.get("SHARD_BUILDDIR") or os.path.dirname(h.server_binary())


def shard_binary():
    path = os.path.join(builddir(), "shard")
    if not os.access(path, os.X_OK):
        raise h.Skip("shard binary not built (%s)" % path)
    return path


_home = tempfile.mkdtemp(prefix="shard-home-")
atexit.register(shutil.rmtree, _home, True)


def base_env(srv=None, **extra):
    """A clean environment: no AWS_* from the caller, HOME a temp dir, and
    (with 'srv') the server's endpoint and keys in the AWS_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = _home
    if srv is not None:
        env["AWS_ACCESS_KEY_ID"] = srv.access_key
        env["AWS_SECRET_ACCESS_KEY"] = srv.secret_key
        env["AWS_ENDPOINT_URL"] = srv.endpoint
        env["AWS_DEFAULT_REGION"] = h.REGION
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run(srv, *args, env=None, input=None, rc=0, timeout=120):
    """Runs `shard ARGS`; checks the exit code ('rc', None for any) and
    returns the CompletedProcess."""
    argv = [shard_binary()] + [str(a) for a in args]
    p = subprocess.run(argv, input=input, capture_output=True, timeout=timeout,
                       env=env if env is not None else base_env(srv),
                       stdin=None if input is not None else subprocess.DEVNULL)
    if rc is not None and p.returncode != rc:
        raise h.Failure("%s: exit %d, expected %d\nstderr: %s" % (
            " ".join(argv[1:])[:300], p.returncode, rc, p.stderr[-2000:].decode("utf-8", "replace")))
    return p


def read_range(srv, bucket, key, off, length, parallel=None, chunk=None, env=None, rc=0, reader_cap=None):
    """Runs the shard_read_range driver: shard_read_range into one buffer, or
    with 'reader_cap' shard_reader_read into a buffer of that many bytes."""
    exe = os.path.join(builddir(), "tests", "integration", "shard_read_range")
    argv = [exe] + (["--reader", str(reader_cap)] if reader_cap else []) + [bucket, key, str(off), str(length)]
    if parallel:
        argv += [str(parallel), str(chunk)]
    p = subprocess.run(argv, capture_output=True, timeout=120,
                       env=env if env is not None else base_env(srv))
    if rc is not None and p.returncode != rc:
        raise h.Failure("shard_read_range %s: exit %d: %s" % (argv[1:], p.returncode, p.stderr[-500:]))
    return p


@contextlib.contextmanager
def fake_s3(answer):
    """A misbehaving S3 endpoint on 127.0.0.1: 'answer(path_and_query)'
    gives the XML body of every GET (status 200). Yields (env for `shard`,
    list of the request paths seen)."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            body = answer(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield base_env(AWS_ACCESS_KEY_ID="AKIDFAKE", AWS_SECRET_ACCESS_KEY="fake-secret",
                       AWS_ENDPOINT_URL="http://127.0.0.1:%d" % httpd.server_address[1],
                       AWS_DEFAULT_REGION=h.REGION), seen
    finally:
        httpd.shutdown()
        httpd.server_close()
