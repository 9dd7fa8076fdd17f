"""`tend shim`: the token-gated TCP front of the agent's socket (DESIGN §6),
started by the test and by the agent (--shim-listen)."""

import base64
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import unittest

from harness import (TEND_BIN, AgentTestCase, poll, read_file, request_bytes, rss_kib,  # noqa: E402
                     scaled, strict_responses)

TOKEN = "s3cret-token-42"


def wait_for(fn, timeout, what):
    v = poll(fn, timeout=timeout)
    if not v:
        raise AssertionError("timed out: " + what)
    return v


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


class Shim:
    """One `tend shim` on 127.0.0.1:<free port>, run by the test."""

    def __init__(self, sock, token=TOKEN, extra=(), tmp=None):
        self.port = free_port()
        self.tmp = tmp
        argv = [TEND_BIN, "shim", "--listen", "127.0.0.1:%d" % self.port, "--socket", sock]
        if token is not None:
            path = os.path.join(tmp, "token")
            with open(path, "w") as f:
                f.write(token + "\n")
            argv += ["--token-file", path]
        self.proc = subprocess.Popen(argv + list(extra), stdin=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)

    def wait_listening(self):
        def up():
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(up, timeout=5, what="shim listening")

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()


class ShimTestCase(AgentTestCase):
    def setUp(self):
        super().setUp()
        self.a = self.agent(extra=["--socket-group", "0"])
        # The shim runs as nobody: it must be able to walk to the socket.
        os.chmod(self.a.tmp, 0o711)
        self.shim = self.start_shim(self.a.sock, extra=["--socket-group", "0"])

    def start_shim(self, sock, **kw):
        s = Shim(sock, tmp=self.a.tmp if hasattr(self, "a") else kw.pop("tmp"), **kw)
        self.addCleanup(s.close)
        s.wait_listening()
        # The socket is root's 0600 unless shared: share it with group 0.
        return s

    def conn(self, port=None, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", port or self.shim.port, timeout=scaled(timeout))

    def req(self, method, path, body=None, headers=None, token=TOKEN, port=None, timeout=10):
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = "Bearer " + token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h["Content-Type"] = "application/json"
        c = self.conn(port, timeout)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
        finally:
            c.close()

    def assertUnauthorized(self, status, headers, body):
        self.assertEqual(status, 401, body)
        self.assertEqual(headers.get("www-authenticate"), "Bearer")
        self.assertEqual(json.loads(body)["code"], "unauthorized")


class TestShimAuth(ShimTestCase):
    def test_no_token_and_wrong_token_are_refused(self):
        self.assertUnauthorized(*self.req("GET", "/v1/health", token=None))
        self.assertUnauthorized(*self.req("GET", "/v1/health", token="wrong"))
        self.assertUnauthorized(*self.req("GET", "/v1/health", token=TOKEN + "x"))
        self.assertUnauthorized(*self.req("GET", "/v1/health", token=TOKEN[:-1]))
        # Another scheme with the right secret is not a bearer token.
        self.assertUnauthorized(*self.req("GET", "/v1/health", token=None,
                                          headers={"Authorization": "Basic " + TOKEN}))

    def test_every_request_of_a_keep_alive_connection_is_checked(self):
        c = self.conn()
        c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + TOKEN})
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(json.loads(r.read())["status"], "ok")
        c.request("GET", "/v1/health")
        r = c.getresponse()
        self.assertUnauthorized(r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read())
        c.close()

    def test_token_is_not_forwarded_and_health_with_token(self):
        status, _, body = self.req("GET", "/v1/health")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["status"], "ok")
        # The agent never sees the header: a child prints its request... the
        # closest observable: a raw request with the header as the only
        # difference is answered the same.
        s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(5))
        s.sendall(b"GET /v1/nope HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
                  b"\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        self.assertIn(b" 404 ", data.split(b"\r\n")[0])
        self.assertIn(b'"not_found"', data)

    def test_health_route_needs_no_token(self):
        status, headers, body = self.req("GET", "/health", token=None)
        # Forwarded to the agent (whatever it answers), not refused.
        self.assertNotEqual(status, 401, body)
        self.assertNotEqual(json.loads(body).get("code"), "unauthorized")
        self.assertUnauthorized(*self.req("GET", "/healthz", token=None))
        self.assertUnauthorized(*self.req("POST", "/health", token=None, body=""))


    def raw(self, data, timeout=5):
        """Send raw bytes, read until the shim closes."""
        s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(timeout))
        s.sendall(data)
        out = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out += b
        except (socket.timeout, ConnectionResetError):
            pass
        s.close()
        return out

    def test_http09_request_is_refused_by_the_shim_in_order(self):
        # The agent answers a request of no version 400 and closes: the
        # requests behind it would go unanswered, and a 401 of the shim's
        # for a later one would be read as theirs.  The shim refuses it
        # itself, after the first reply, and that is the end.
        tok = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
        data = self.raw(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + tok + b"\r\n"
                        b"GET /v1/hea\n" + tok + b"\r\n"
                        b"HEAD /v1/health HTTP/1.1\r\nHost: x\r\n" + tok + b"\r\n"
                        b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        rs = strict_responses(data)
        self.assertEqual([r[0] for r in rs], [200, 400], data)
        self.assertEqual(json.loads(rs[1][2])["code"], "bad_request")
        self.assertIn("version", json.loads(rs[1][2])["error"])

    def test_request_smuggled_after_a_bare_cr_is_refused(self):
        # http_parser (not strict) takes any byte after the empty line's CR
        # for its LF: to the agent these are two requests, the second one
        # without a token; the shim must not pass it on.
        for open_route in (b"GET /health", b"GET /v1/health"):
            tok = b"" if open_route == b"GET /health" else \
                b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
            data = self.raw(open_route + b" HTTP/1.1\r\nHost: x\r\n" + tok + b"\r*"
                            b"GET /v1/processes HTTP/1.1\r\nHost: x\r\n"
                            b"Connection: close\r\n\r\n")
            self.assertEqual(data.count(b"HTTP/1.1 "), 1, data)
            self.assertTrue(data.startswith(b"HTTP/1.1 400 "), data)
            self.assertEqual(json.loads(data.split(b"\r\n\r\n", 1)[1])["code"], "bad_request")

    def test_empty_lines_before_a_request_are_skipped(self):
        # As http_parser (and RFC 9112 §2.2) skip them; not an empty head.
        auth = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
        get = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + auth
        data = self.raw(get + b"\r\n" + b"\r\n\r\n\n" + get + b"Connection: close\r\n\r\n")
        self.assertEqual(data.count(b"HTTP/1.1 200 "), 2, data)
        self.assertEqual(data.count(b"HTTP/1.1 "), 2, data)

    def test_head_refused_for_its_headers_has_no_body(self):
        # Too many headers: the agent refuses before the head ends, and
        # its 413 to a HEAD must have no body, directly and through the shim.
        hdrs = b"".join(b"X-%d: v\r\n" % i for i in range(80))
        req = b"HEAD /v1/health HTTP/1.1\r\nHost: x\r\n" + hdrs + b"\r\n"
        tok = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
        for data in (self.a.raw(req)[0],
                     self.raw(req.replace(b"Host: x\r\n", b"Host: x\r\n" + tok))):
            self.assertTrue(data.startswith(b"HTTP/1.1 413 "), data)
            head, sep, rest = data.partition(b"\r\n\r\n")
            self.assertEqual((sep, rest), (b"\r\n\r\n", b""), data)

    def test_too_large_head_after_head_has_its_body(self):
        # After a HEAD, a GET whose head is too large: its 431 has a body.
        # The refusal's method is the refused request's, not the last one's.
        h = b"HEAD /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n"
        data = self.raw(h + b"GET /v1/health HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n")
        head, _, rest = data.partition(b"\r\n\r\n")
        # The agent's answer to the HEAD (its status whatever it is), no body.
        self.assertTrue(head.startswith(b"HTTP/1.1 "), data)
        self.assertNotIn(b" 431 ", head.split(b"\r\n")[0])
        self.assertTrue(rest.startswith(b"HTTP/1.1 431 "), data)
        self.assertTrue(rest.endswith(b'"code":"head_too_large"}'), rest)


class TestShimForwarding(ShimTestCase):
    def test_exec_json(self):
        status, _, body = self.req("POST", "/v1/exec", body={"argv": ["sh", "-c", "printf hi; exit 3"]})
        self.assertEqual(status, 200, body)
        j = json.loads(body)
        self.assertEqual(base64.b64decode(j["stdout"]), b"hi")
        self.assertEqual(j["exit"]["code"], 3)

    def test_stable_exec_as_the_bridge_clients_read_it(self):
        # The bridge's stable exec through the shim: SSE parsed as its
        # clients parse it, binary output byte-exact, the exit code, and
        # a timeout ending in 124.
        from test_bridge import parse_sse
        ws = os.path.join(self.a.tmp, "workspace")
        a = self.agent(extra=["--socket-group", "0", "--workspace", ws])
        os.chmod(a.tmp, 0o711)
        shim = self.start_shim(a.sock, extra=["--socket-group", "0"])
        blob = bytes(range(256)) * 16 + b"\x00\xff"
        os.makedirs(ws)
        with open(os.path.join(ws, "blob"), "wb") as f:
            f.write(blob)
        for argv, want_out, want_code, extra in (
                (["sh", "-c", "cat blob; echo err >&2; exit 3"], blob, 3, {}),
                (["sleep", "30"], b"", 124, {"timeout_ms": 200})):
            body = dict(argv=argv, **extra)
            status, h, data = self.req("POST", "/v1/sandbox/sb-1/exec", body=body,
                                       port=shim.port)
            self.assertEqual(status, 200, data)
            self.assertTrue(h["content-type"].startswith("text/event-stream"), h)
            out, code = {"stdout": b"", "stderr": b""}, None
            for ev, d in parse_sse(data):
                if ev in out:
                    out[ev] += base64.b64decode(d)
                elif ev == "exit":
                    code = json.loads(d)["exit_code"]
            self.assertEqual(out["stdout"], want_out)
            self.assertEqual(code, want_code, data[-200:])
            if want_code == 3:
                self.assertEqual(out["stderr"], b"err\n")

    def test_launch_follow_sse_and_kill(self):
        status, _, body = self.req("POST", "/v1/processes",
                                   body={"argv": ["sh", "-c", "echo first; sleep 0.3; echo second; sleep 60"]})
        self.assertIn(status, (200, 201), body)
        pid = json.loads(body)["id"]
        s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(10))
        s.sendall(("GET /v1/processes/%s/logs?follow=1 HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer %s\r\n\r\n" % (pid, TOKEN)).encode())
        data = b""
        while data.count(b"data: ") < 2:
            b = s.recv(65536)
            self.assertTrue(b, data)
            data += b
        self.assertIn(b"text/event-stream", data)
        events = [json.loads(l[6:]) for l in data.split(b"\n") if l.startswith(b"data: ")]
        out = b"".join(base64.b64decode(e["data"]) for e in events if e.get("type") == "stdout")
        self.assertEqual(out, b"first\nsecond\n")
        status, _, body = self.req("POST", "/v1/processes/%s/kill" % pid, body={})
        self.assertLess(status, 300, body)
        # The follower sees the end: the terminal event, then the close.
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        self.assertIn(b'"terminal"', data)

    def test_chunked_request_body_reaches_stdin(self):
        status, _, body = self.req("POST", "/v1/processes", body={"argv": ["cat"], "stdin": "pipe"})
        self.assertIn(status, (200, 201), body)
        pid = json.loads(body)["id"]
        payload = os.urandom(300000)

        def chunks():
            for i in range(0, len(payload), 7001):
                yield payload[i:i + 7001]
        c = self.conn()
        c.request("POST", "/v1/processes/%s/stdin?close=1" % pid, body=chunks(),
                  headers={"Authorization": "Bearer " + TOKEN}, encode_chunked=True)
        r = c.getresponse()
        r.read()
        self.assertEqual(r.status, 204)
        # The same keep-alive connection carries the next request (the
        # chunked body's end was found).
        c.request("POST", "/v1/processes/%s/wait?timeout=10000" % pid, body=b"",
                  headers={"Authorization": "Bearer " + TOKEN})
        r = c.getresponse()
        self.assertEqual(r.status, 200, r.read())
        r.read()
        c.request("GET", "/v1/processes/%s/stdout" % pid, headers={"Authorization": "Bearer " + TOKEN})
        r = c.getresponse()
        self.assertEqual(r.getheader("Transfer-Encoding"), "chunked")
        self.assertEqual(r.read(), payload)
        c.close()

    def test_large_raw_stream_byte_exact(self):
        a = self.agent(extra=["--socket-group", "0", "--max-log-bytes", str(300 << 20)])
        os.chmod(a.tmp, 0o711)
        shim = self.start_shim(a.sock, extra=["--socket-group", "0"])
        n = 256 << 20
        r = a.launch_ok(["sh", "-c", "head -c %d /dev/urandom" % n])
        a.wait_ended(r["id"], timeout_ms=60000)
        direct = hashlib.sha256()
        c = a.connect(timeout=60)
        c.sendall(b"GET /v1/processes/%s/stdout HTTP/1.0\r\n\r\n" % r["id"].encode())
        got, head = 0, None
        buf = b""
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            if head is None:
                buf += b
                if b"\r\n\r\n" in buf:
                    head, b = buf.split(b"\r\n\r\n", 1)
                else:
                    continue
            direct.update(b)
            got += len(b)
        c.close()
        self.assertEqual(got, n)
        st, _, body = self.req("GET", "/v1/processes/%s/stdout" % r["id"], port=shim.port, timeout=60)
        self.assertEqual(st, 200)
        self.assertEqual(len(body), n)
        self.assertEqual(hashlib.sha256(body).hexdigest(), direct.hexdigest())

    def test_piped_replies_then_the_shims_own_refusal_in_order(self):
        # An ended record's stream comes from its file through the shim's
        # pipe; the client reads slowly, so the pipe holds bytes when a
        # request with a bad token arrives.  From then on the agent's bytes
        # (the rest of the stream, the next reply) queue behind the pipe's,
        # then the shim's own 401: all in order, each whole.
        a = self.a
        # More than the buffers on the way hold (the client's, the shim's
        # TCP send queue, its pipe, the agent's socket).
        n = 16 * 1024 * 1024 + 5
        a.launch_ok(["sh", "-c", "head -c %d /dev/urandom" % n], id="big")
        st = a.wait_ended("big", timeout_ms=30000)
        want = read_file(os.path.join(a.proc_dir(st["bootId"], "big"), "stdout"))
        self.assertEqual(len(want), n)
        s = socket.socket()
        self.addCleanup(s.close)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        s.settimeout(scaled(30))
        s.connect(("127.0.0.1", self.shim.port))
        auth = {"Authorization": "Bearer " + TOKEN}
        s.sendall(request_bytes("GET", "/v1/processes/big/stdout", headers=auth) +
                  request_bytes("GET", "/v1/processes/big/stdout?offset=%d" % (n - 4),
                                headers=auth))
        data = []
        while sum(map(len, data)) < 100000:
            data.append(s.recv(8192))
        time.sleep(scaled(0.5))
        s.sendall(request_bytes("GET", "/v1/health", headers={"Authorization": "Bearer wrong"}))
        time.sleep(scaled(0.3))
        while True:
            b = s.recv(8192)
            if not b:
                break
            data.append(b)
            if len(data) < 200:
                time.sleep(0.002)
        rs = strict_responses(b"".join(data))
        self.assertEqual([r[0] for r in rs], [200, 200, 401])
        self.assertEqual(hashlib.sha256(rs[0][2]).hexdigest(), hashlib.sha256(want).hexdigest())
        self.assertEqual(rs[1][2], want[-4:])
        self.assertEqual(json.loads(rs[2][2])["code"], "unauthorized")

    def test_many_concurrent_clients(self):
        results = []

        def one():
            try:
                c = self.conn()
                for _ in range(5):
                    c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + TOKEN})
                    r = c.getresponse()
                    results.append((r.status, json.loads(r.read())["status"]))
                c.close()
            except Exception as e:  # noqa: BLE001 - counted as a failure below
                results.append((0, repr(e)))
        ts = [threading.Thread(target=one) for _ in range(64)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(scaled(30))
        self.assertEqual(len(results), 64 * 5)
        self.assertEqual(set(results), {(200, "ok")})

    def test_client_that_never_reads_keeps_shim_small(self):
        a = self.agent(extra=["--socket-group", "0", "--max-log-bytes", str(100 << 20)])
        os.chmod(a.tmp, 0o711)
        shim = self.start_shim(a.sock, extra=["--socket-group", "0"])
        r = a.launch_ok(["head", "-c", str(64 << 20), "/dev/zero"])
        a.wait_ended(r["id"], timeout_ms=30000)
        before = rss_kib(shim.proc.pid)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", shim.port))
        s.sendall(("GET /v1/processes/%s/stdout HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                   % (r["id"], TOKEN)).encode())
        time.sleep(scaled(1.5))
        after = rss_kib(shim.proc.pid)
        # Buffers are bounded (2 x 256 KiB + 64 KiB): not 64 MiB.
        self.assertLess(after - before, 2048, (before, after))
        # The shim still serves others meanwhile.
        st, _, body = self.req("GET", "/v1/health", port=shim.port)
        self.assertEqual(st, 200)
        s.close()


class FakeBackendCase(ShimTestCase):
    """A shim in front of a fake backend on a unix socket (self.backend, on
    a thread), which sees exactly what the shim forwards."""

    def setUp(self):
        AgentTestCase.setUp(self)
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="tend-shim-fake-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.chmod(self.tmp, 0o711)
        self.path = os.path.join(self.tmp, "fake.sock")
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(self.path)
        os.chmod(self.path, 0o666)
        self.srv.listen(8)
        self.addCleanup(self.srv.close)
        self.seen = []
        threading.Thread(target=self.backend, daemon=True).start()
        self.shim = self.start_shim(self.path, tmp=self.tmp)


class TestShimWebSocket(FakeBackendCase):
    """The fake backend answers the upgrade with 101 and then echoes,
    proving the splice of any upgrade byte for byte (TestShimTerminal
    runs the agent's own terminal through it)."""

    def backend(self):
        try:
            c, _ = self.srv.accept()
        except OSError:
            return
        buf = b""
        while b"\r\n\r\n" not in buf:
            b = c.recv(4096)
            if not b:
                return
            buf += b
        head, rest = buf.split(b"\r\n\r\n", 1)
        self.seen.append(head)
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        if rest:
            c.sendall(rest)
        while True:
            b = c.recv(65536)
            if not b:
                break
            c.sendall(b)
        c.close()

    def test_upgrade_is_spliced_both_ways(self):
        s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(10))
        s.sendall(("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Authorization: Bearer %s\r\n\r\n" % TOKEN).encode() + b"early")
        data = b""
        while b"early" not in data:
            b = s.recv(65536)
            self.assertTrue(b, data)
            data += b
        self.assertTrue(data.startswith(b"HTTP/1.1 101"))
        # Bytes after the 101 are raw, not HTTP: 1 MiB each way, echoed.
        blob = os.urandom(1 << 20)
        out = b""
        sender = threading.Thread(target=s.sendall, args=(blob,))
        sender.start()
        while len(out) < len(blob):
            b = s.recv(1 << 20)
            self.assertTrue(b)
            out += b
        sender.join()
        self.assertEqual(out, blob)
        s.close()
        self.assertNotIn(b"authorization", self.seen[0].lower())


class TestShimTerminal(ShimTestCase):
    def test_bridge_pty_round_trip(self):
        # A real terminal over the bridge's /pty WebSocket, through the
        # shim: the shell computes what is typed, so the bytes went both
        # ways; the token is checked on the upgrade like any request.
        import asyncio
        import sys
        try:
            import websockets
        except ImportError:
            sys.path.append("/usr/lib/python3/dist-packages")
            try:
                import websockets
            except ImportError as e:
                self.skipTest("python3-websockets: %s" % e)
        url = "ws://127.0.0.1:%d/v1/sandbox/sb-1/pty?cols=80&rows=24" % self.shim.port

        async def session():
            with self.assertRaises(websockets.InvalidStatusCode) as cm:
                await websockets.connect(url, ping_interval=None)
            self.assertEqual(cm.exception.status_code, 401)
            ws = await websockets.connect(url, ping_interval=None, max_size=None,
                                          extra_headers={"Authorization": "Bearer " + TOKEN})
            try:
                first = json.loads(await ws.recv())
                self.assertEqual(first["type"], "ready", first)
                await ws.send(b"echo round-$((6*7))\n")
                got = b""
                while b"round-42" not in got.replace(b"round-$((6*7))", b""):
                    m = await ws.recv()
                    if isinstance(m, bytes):
                        got += m
                await ws.send(b"exit 5\n")
                while True:
                    m = await ws.recv()
                    if isinstance(m, str) and json.loads(m)["type"] == "exit":
                        return json.loads(m)
            finally:
                await ws.close()

        end = asyncio.run(asyncio.wait_for(session(), scaled(20)))
        self.assertEqual(end["code"], 5, end)


class TestShimHeaders(FakeBackendCase):
    """What the agent receives, seen by the fake backend, which records
    each request head and answers 200 with Connection: close."""

    def backend(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            buf = b""
            while b"\r\n\r\n" not in buf:
                b = c.recv(4096)
                if not b:
                    break
                buf += b
            self.seen.append(buf.split(b"\r\n\r\n", 1)[0])
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            c.close()

    def headers_seen(self, headers, port=None):
        """Status of a GET with these headers, and the head the backend got."""
        n = len(self.seen)
        status, _, body = self.req("GET", "/v1/x", headers=headers, token=None, port=port)
        if status != 200:
            return status, None
        wait_for(lambda: len(self.seen) > n, 5, "backend saw the request")
        lines = self.seen[-1].decode().split("\r\n")[1:]
        return status, dict((k.lower(), v.strip()) for k, _, v in (x.partition(":") for x in lines))

    def test_x_access_token_is_checked_and_removed(self):
        status, h = self.headers_seen({"X-Access-Token": TOKEN})
        self.assertEqual(status, 200)
        self.assertNotIn("x-access-token", h)
        self.assertNotIn("authorization", h)
        self.assertEqual(self.headers_seen({"X-Access-Token": TOKEN + "x"})[0], 401)
        self.assertEqual(self.headers_seen({"X-Access-Token": ""})[0], 401)
        # "Bearer" run into the token is a token line without a token.
        self.assertEqual(self.headers_seen({"X-Access-Token": TOKEN,
                                            "Authorization": "Bearer" + TOKEN})[0], 401)
        # Two token headers: both must carry it.
        self.assertEqual(self.headers_seen({"X-Access-Token": TOKEN,
                                            "Authorization": "Bearer wrong"})[0], 401)
        status, h = self.headers_seen({"X-Access-Token": TOKEN,
                                       "Authorization": "Bearer " + TOKEN})
        self.assertEqual(status, 200)
        self.assertNotIn("authorization", h)

    def test_basic_authorization_goes_through_unchanged(self):
        basic = "Basic " + base64.b64encode(b"user:").decode()
        status, h = self.headers_seen({"X-Access-Token": TOKEN, "Authorization": basic})
        self.assertEqual(status, 200)
        self.assertEqual(h.get("authorization"), basic)
        self.assertNotIn("x-access-token", h)
        # Basic is the envd user, never the token.
        self.assertEqual(self.headers_seen({"Authorization": "Basic " + TOKEN})[0], 401)

    def test_no_auth_keeps_basic_and_needs_no_token(self):
        shim = self.start_shim(self.path, tmp=self.tmp, token=None, extra=["--no-auth"])
        basic = "Basic " + base64.b64encode(b"root:").decode()
        status, h = self.headers_seen({"Authorization": basic}, port=shim.port)
        self.assertEqual(status, 200)
        self.assertEqual(h.get("authorization"), basic)
        status, h = self.headers_seen({"X-Access-Token": "anything"}, port=shim.port)
        self.assertEqual(status, 200)
        self.assertNotIn("x-access-token", h)


class TestShimProcess(AgentTestCase):
    def test_agent_not_running_is_502(self):
        import tempfile
        tmp = tempfile.mkdtemp(prefix="tend-shim-")
        shim = Shim(os.path.join(tmp, "none.sock"), tmp=tmp)
        self.addCleanup(shim.close)
        shim.wait_listening()
        c = http.client.HTTPConnection("127.0.0.1", shim.port, timeout=scaled(5))
        c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + TOKEN})
        r = c.getresponse()
        self.assertEqual(r.status, 502)
        self.assertEqual(json.loads(r.read())["code"], "agent_unavailable")
        # Without a token, still 401: nothing is said about the agent.
        c = http.client.HTTPConnection("127.0.0.1", shim.port, timeout=scaled(5))
        c.request("GET", "/v1/health")
        self.assertEqual(c.getresponse().status, 401)

    def test_refuses_to_start_without_token(self):
        env = {k: v for k, v in os.environ.items() if k != "TEND_TOKEN"}
        p = subprocess.run([TEND_BIN, "shim", "--listen", "127.0.0.1:%d" % free_port()],
                           env=env, capture_output=True, timeout=scaled(5))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"no_token", p.stderr)

    def test_debug_seccomp_is_killed_by_sigsys(self):
        p = subprocess.run([TEND_BIN, "shim", "--no-auth", "--debug-seccomp", "--listen",
                            "127.0.0.1:%d" % free_port(), "--socket", "/nonexistent"],
                           capture_output=True, timeout=scaled(5))
        self.assertEqual(p.returncode, -signal.SIGSYS, p.stderr)


class TestShimSupervised(AgentTestCase):
    def test_runs_as_nobody_with_seccomp_and_is_restarted(self):
        import tempfile
        tmp = tempfile.mkdtemp(prefix="tend-shim-tok-")
        tok = os.path.join(tmp, "token")
        with open(tok, "w") as f:
            f.write(TOKEN + "\n")
        port = free_port()
        a = self.agent(extra=["--shim-listen", "127.0.0.1:%d" % port, "--shim-token-file", tok])
        os.chmod(a.tmp, 0o711)

        def shim_state():
            h = a.health()
            return h.get("shim") if h.get("shim", {}).get("state") == "running" else None
        sh = wait_for(shim_state, timeout=5, what="shim running")
        self.assertEqual(sh["restarts"], 0)
        self.assertEqual(sh["listen"], "127.0.0.1:%d" % port)
        host = a.host_pid_of(sh["pid"])
        self.assertIsNotNone(host)
        # Health says running once the child exists; the filter is its last
        # step before serving (slow under a sanitizer): wait for it.
        def filtered():
            st = proc_status(host)
            return st if st.get("Seccomp") == "2" else None
        st = wait_for(filtered, timeout=5, what="the shim's seccomp filter")
        self.assertEqual(st["Uid"].split()[0], "65534")
        self.assertEqual(st["Seccomp"], "2")
        self.assertEqual(st["NoNewPrivs"], "1")
        # The socket is shared with the shim's group, and it serves.
        self.assertEqual(os.stat(a.sock).st_mode & 0o777, 0o660)

        def served():
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + TOKEN})
                r = c.getresponse()
                return r.status == 200 and json.loads(r.read())["shim"]["pid"] == sh["pid"]
            except OSError:
                return False
            finally:
                c.close()
        wait_for(served, timeout=5, what="served through the supervised shim")
        os.kill(host, signal.SIGKILL)

        def restarted():
            h = a.health().get("shim", {})
            return h if h.get("restarts") == 1 and h.get("state") == "running" else None
        sh2 = wait_for(restarted, timeout=10, what="shim restarted")
        self.assertNotEqual(sh2["pid"], sh["pid"])
        sh["pid"] = sh2["pid"]
        wait_for(served, timeout=5, what="served again")
        host2 = a.host_pid_of(sh2["pid"])
        a.stop()
        # Stopped with the agent: TERM, reaped, gone.
        self.assertFalse(os.path.exists("/proc/%d" % host2))


if __name__ == "__main__":
    unittest.main()
