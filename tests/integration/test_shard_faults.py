"""test_shard_faults.py: libshard keeps its promises when the network does
not. A small Python proxy between the tool and the server drops connections
after some bytes, answers 503 SlowDown, or loses its upstream while the
server is killed and restarted mid-stream; the streamed bytes must still be
exact (retried ranges restart where their bytes stopped, never duplicated)
and uploads must still complete."""
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402
import shard_util as su  # noqa: E402

SLOWDOWN = (b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nConnection: close\r\n"
            b"Content-Length: 107\r\n\r\n<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>"
            b"<Message>Please reduce</Message><RequestId>1</RequestId></Error>")


class Proxy:
    """Relays 127.0.0.1:port -> 127.0.0.1:target. Knobs (changeable live):
    drop_after: close a connection after this many bytes went downstream;
    drop_first: only the first N connections are dropped that way;
    slowdown_first: the first N connections get a 503 SlowDown and close;
    delay_s: sleep after each relayed block downstream (slows transfers)."""

    def __init__(self, target):
        self.target = target
        self.drop_after = None
        self.drop_first = 1 << 30
        self.slowdown_first = 0
        self.delay_s = 0.0
        self.connections = 0
        self.dropped = 0
        self.slowdowns = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def close(self):
        self.closed = True
        self.sock.close()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                n = self.connections
            threading.Thread(target=self._serve, args=(c, n), daemon=True).start()

    def _serve(self, c, n):
        if n <= self.slowdown_first:
            try:
                c.recv(65536)
                c.sendall(SLOWDOWN)
            except OSError:
                pass
            with self.lock:
                self.slowdowns += 1
            c.close()
            return
        try:
            u = socket.create_connection(("127.0.0.1", self.target), timeout=5)
        except OSError:
            c.close()
            return
        u.settimeout(None)
        limit = self.drop_after if n <= self.drop_first else None
        done = threading.Event()

        def up():
            try:
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    u.sendall(b)
            except OSError:
                pass
            done.set()

        threading.Thread(target=up, daemon=True).start()
        sent = 0
        try:
            while True:
                b = u.recv(65536)
                if not b:
                    break
                if limit is not None and sent + len(b) >= limit:
                    c.sendall(b[: max(0, limit - sent)])
                    with self.lock:
                        self.dropped += 1
                    break
                c.sendall(b)
                sent += len(b)
                if self.delay_s:
                    time.sleep(self.delay_s)
        except OSError:
            pass
        for s in (c, u):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def env_for(srv, proxy):
    return su.base_env(srv, AWS_ENDPOINT_URL=proxy.endpoint)


def test_dropped_connections_give_exact_bytes(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="drops")
    body = h.random_bytes(6 * 1048576 + 123, seed=31)
    s3.put_object(Bucket="drops", Key="obj", Body=body)
    proxy = Proxy(srv.port)
    try:
        # Every connection dies after ~300 KB downstream: each 1 MiB range
        # needs several attempts, each resuming where the last one stopped.
        proxy.drop_after = 300000
        env = env_for(srv, proxy)
        for parallel, chunk in [(4, 1048576), (1, 3 << 20), (3, 500000)]:
            p = su.run(srv, "cat", "--parallel", parallel, "--chunk-size", chunk, "s3://drops/obj", env=env)
            h.same_bytes(p.stdout, body, "cat through a dropping proxy p=%d c=%d" % (parallel, chunk))
        p = su.run(srv, "cat", "--range", "1000-4000000", "s3://drops/obj", env=env)
        h.same_bytes(p.stdout, body[1000:4000001], "range through a dropping proxy")
        p = su.read_range(srv, "drops", "obj", 5, len(body) - 10, 4, 1048576, env=env)
        h.same_bytes(p.stdout, body[5:-5], "read_range through a dropping proxy")
        h.check(proxy.dropped >= 20, "the proxy dropped only %d connections" % proxy.dropped)
        # Progress resets the retry budget; a link that moves no byte at all
        # spends it and the read fails cleanly (exit 1).
        proxy.drop_after = 0
        p = su.run(srv, "--retries", "2", "cat", "--parallel", "2", "--chunk-size", "3M", "s3://drops/obj",
                   env=env, rc=1)
        h.eq(p.stdout, b"", "nothing delivered")
        h.check(p.stderr.startswith(b"shard: s3://drops/obj: ConnectionError"), "message: %r" % p.stderr)
    finally:
        proxy.close()


def test_slowdown_is_retried(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="slow")
    body = h.random_bytes(11 * 1048576 + 5, seed=32)
    proxy = Proxy(srv.port)
    try:
        env = env_for(srv, proxy)
        proxy.slowdown_first = 4
        su.run(srv, "cp", "--part-size", "5M", "--parallel", "3", "-", "s3://slow/up", env=env, input=body)
        h.eq(proxy.slowdowns, 4, "SlowDown answers sent")
        got = s3.get_object(Bucket="slow", Key="up")
        h.same_bytes(got["Body"].read(), body, "upload through SlowDown")
        h.check(got["ETag"].endswith('-3"'), "multipart ETag %s" % got["ETag"])
        proxy.slowdown_first = proxy.connections + 3
        p = su.run(srv, "cat", "--parallel", "4", "--chunk-size", "1M", "s3://slow/up", env=env)
        h.same_bytes(p.stdout, body, "download through SlowDown")
        p = su.run(srv, "ls", "s3://slow", env=env)
        h.check(b" up" in p.stdout, "ls through SlowDown")
        proxy.slowdown_first = proxy.connections + 100
        p = su.run(srv, "--retries", "2", "ls", "s3://slow", env=env, rc=1)
        h.check(b"SlowDown" in p.stderr and b"HTTP 503" in p.stderr, "retries spent: %r" % p.stderr)
        # No multipart upload was left behind by the retried parts.
        h.eq(s3.list_multipart_uploads(Bucket="slow").get("Uploads", []), [], "leftover uploads")
    finally:
        proxy.close()


def test_server_restart_mid_stream():
    srv = h.Server(tag="shard-restart")
    proxy = None
    try:
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="rst")
        body = h.random_bytes(24 * 1048576 + 77, seed=33)
        s3.put_object(Bucket="rst", Key="obj", Body=body)
        proxy = Proxy(srv.port)
        proxy.delay_s = 0.004  # ~16 MB/s per connection: the read takes seconds
        env = env_for(srv, proxy)
        argv = [su.shard_binary(), "cat", "--parallel", "3", "--chunk-size", "2M", "s3://rst/obj"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out = bytearray()
        out += proc.stdout.read(3 * 1048576)
        srv.kill()  # kill -9 while ranges are in flight
        time.sleep(0.3)
        srv.start()  # same data dir, new port
        proxy.target = srv.port
        rest, err = proc.communicate(timeout=120)
        out += rest
        h.eq(proc.returncode, 0, "exit status (stderr %r)" % err[-500:])
        h.same_bytes(bytes(out), body, "bytes read across a server restart")
        h.check(len(srv.problems) == 0, "server problems: %s" % srv.problems)
    finally:
        if proxy:
            proxy.close()
        problems = srv.stop()
        srv.cleanup()
    h.check(not problems, "teardown: %s" % problems)


if __name__ == "__main__":
    status = 0
    srv = h.Server(tag="shard-faults")
    try:
        srv.start()
        failed, passed, skipped = h.run_tests([test_dropped_connections_give_exact_bytes,
                                               test_slowdown_is_retried], srv)
        f2, p2, s2 = h.run_tests([test_server_restart_mid_stream])
        failed += f2
        passed += p2
        problems = srv.stop()
        if problems:
            failed.append("teardown")
            print("FAIL teardown:\n" + "\n".join(problems))
        print("%d passed, %d failed, %d skipped" % (len(passed), len(failed), len(skipped) + len(s2)))
        status = 1 if failed else 0
    except h.Skip as e:
        print("SKIP: %s" % e)
        status = h.SKIP
    finally:
        srv.cleanup()
    sys.exit(status)
