"""Black-box tests of the HTTP layer against hostile or vanishing clients
(issue 8, items 4, 11, 12 and the head timeout): a client that pipelines
without reading, a held stdin writer that disappears, a slowloris head,
raw control bytes in JSON strings, and replies that quote bytes which are
not UTF-8."""
import base64
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (TEND_BIN, AgentTestCase, ResponseReader, SLOW, poll, request_bytes,  # noqa: E402
                     scaled)

MIB = 1024 * 1024


def metrics(a):
    r = a.get("/v1/metrics")
    out = {}
    for line in r.body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition(" ")
            out[name] = float(value)
    return out


def send_until_blocked(s, data, stall, limit=None):
    """Send data without reading until a send has blocked for stall
    seconds, the agent drops the connection, or limit bytes went out.
    Returns (bytes sent, dropped?)."""
    s.settimeout(stall)
    mv = memoryview(data)
    sent = 0
    limit = len(data) if limit is None else limit
    while sent < limit:
        try:
            sent += s.send(mv[sent:sent + 65536])
        except socket.timeout:
            return sent, False
        except (BrokenPipeError, ConnectionResetError):
            return sent, True
    return sent, False


class TestPipelinedWithoutReading(AgentTestCase):
    """Item 4: unsent output bounds what a connection may ask for."""

    def test_pipelined_health_is_bounded(self):
        a = self.agent()
        time.sleep(0.2)
        rss0 = a.rss_kib()
        req = request_bytes("GET", "/v1/health")
        data = req * (8 * MIB // len(req))
        s = a.connect()
        try:
            sent, dropped = send_until_blocked(s, data, scaled(1.5))
            self.assertFalse(dropped)
            grown = a.rss_kib() - rss0
            # Today all 8 MiB are read and answered into memory (~+40 MiB).
            self.assertLess(sent, 2 * MIB, "the agent kept reading requests nobody reads replies to")
            self.assertLess(grown, 8 * 1024, "RSS grew by %d KiB" % grown)
            # The agent stays responsive, and the held-back requests are
            # answered, in order, once the client reads.
            self.assertEqual(a.get("/v1/health").status, 200)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(scaled(10))
            rd = ResponseReader(s)
            n = 0
            while True:
                r = rd.read()
                if r is None:
                    break
                self.assertEqual(r.status, 200, r)
                n += 1
            self.assertEqual(n, sent // len(req))
        finally:
            s.close()

    def test_pipelined_json_polls_are_bounded(self):
        a = self.agent()
        a.launch_ok(["head", "-c", "1000000", "/dev/urandom"], id="big")
        a.wait_ended("big")
        time.sleep(0.2)
        rss0 = a.rss_kib()
        req = request_bytes("GET", "/v1/processes/big/logs", headers={"Accept": "application/json"})
        s = a.connect(timeout=10)
        try:
            s.sendall(req * 16)
            time.sleep(scaled(1.0))
            grown = a.rss_kib() - rss0
            # 16 replies of 1.3 MB each are ~+20 MiB today; one is queued now.
            self.assertLess(grown, (24 if SLOW else 8) * 1024, "RSS grew by %d KiB" % grown)
            rd = ResponseReader(s)
            for i in range(16):
                r = rd.read()
                self.assertIsNotNone(r, "reply %d missing" % i)
                self.assertEqual(r.status, 200, r)
                self.assertEqual(len(base64.b64decode(r.json["stdout"])), 1000000)
        finally:
            s.close()

    def test_client_that_sends_but_never_reads_is_dropped(self):
        a = self.agent(extra=["--stuck-timeout", "1"])
        req = request_bytes("GET", "/v1/health")
        data = req * (16 * MIB // len(req))
        s = a.connect()
        t0 = time.monotonic()
        try:
            # Keep sending: today every read counts as progress, so the
            # stuck timeout never fires while the client writes.
            sent, dropped = 0, False
            while not dropped and sent < len(data) and time.monotonic() - t0 < scaled(8):
                n, dropped = send_until_blocked(s, data[sent:], 0.2, limit=MIB)
                sent += n
            self.assertTrue(dropped, "not dropped after %.1f s and %d bytes" % (time.monotonic() - t0, sent))
            self.assertLess(sent, 4 * MIB)
        finally:
            s.close()
        self.assertEqual(poll(lambda: metrics(a).get("tend_connections") == 1), True)


class TestHeldStdinWriterVanishes(AgentTestCase):
    """Item 11: a paused request notices its client's hang-up."""

    def test_vanished_writer_frees_stdin_and_slot(self):
        a = self.agent()
        go = os.path.join(a.tmp, "go")
        # Reads nothing until told: the held body stays held meanwhile.
        a.launch_ok(["sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; exec cat >/dev/null" % go],
                    id="s", stdin="pipe")
        size = 8 * MIB
        s = a.connect()
        try:
            s.sendall(b"POST /v1/processes/s/stdin HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: %d\r\n\r\n" % size)
            sent, dropped = send_until_blocked(s, b"x" * size, scaled(1.0))
            self.assertFalse(dropped)
            self.assertGreater(sent, MIB + 64 * 1024, "the body was not held")
            self.assertLess(sent, size)
            held = a.post("/v1/processes/s/stdin", b"y")
            self.assertError(held, 409, "conflict")
            self.assertEqual(metrics(a)["tend_connections"], 2)
        finally:
            s.close()
        # The vanished writer's connection is closed, though its reading
        # was paused...
        t0 = time.monotonic()
        self.assertTrue(poll(lambda: metrics(a)["tend_connections"] == 1, timeout=4),
                        "connection still open %.1f s after the writer left" % (time.monotonic() - t0))
        # ...and stdin takes the next writer: queued behind what is left
        # (the bound holds across requests), answered once it drains.
        s2 = a.connect(timeout=10)
        try:
            s2.sendall(request_bytes("POST", "/v1/processes/s/stdin", b"z"))
            open(go, "w").close()
            r = ResponseReader(s2).read()
            self.assertIsNotNone(r)
            self.assertEqual(r.status, 204, r)
        finally:
            s2.close()
        self.assertEqual(a.status("s").json["state"], "running")

    def test_half_closed_writer_still_gets_its_reply(self):
        """Shutting down only the sending half while held is not a hang-up."""
        a = self.agent()
        a.launch_ok(["sh", "-c", "sleep 3; exec cat >/dev/null"], id="c", stdin="pipe")
        size = 2 * MIB
        s = a.connect(timeout=20)
        try:
            # Room for the whole body in the kernel, so that the client is
            # done sending (and shuts down) while the agent holds the body.
            s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_SNDBUFFORCE", 32), 4 * size)
            s.sendall(request_bytes("POST", "/v1/processes/c/stdin", b"x" * size))
            s.shutdown(socket.SHUT_WR)
            self.assertTrue(poll(lambda: a.post("/v1/processes/c/stdin", b"y").status == 409, timeout=2))
            time.sleep(1.5)
            self.assertError(a.post("/v1/processes/c/stdin", b"y"), 409, "conflict")
            s.settimeout(scaled(20))
            r = ResponseReader(s).read()
            self.assertIsNotNone(r)
            self.assertEqual(r.status, 204, r)
        finally:
            s.close()
        self.assertEqual(a.post("/v1/processes/c/stdin", b"z").status, 204)


class TestHeadTimeout(AgentTestCase):
    """A request head must be complete within --head-timeout."""

    def test_slowloris_head_gets_408_and_close(self):
        a = self.agent(extra=["--head-timeout", "1"])
        s = a.connect()
        t0 = time.monotonic()
        try:
            s.sendall(b"GET /v1/health HTTP/1.1\r\n")
            closed = False
            while time.monotonic() - t0 < scaled(6):
                try:
                    s.sendall(b"X-Slow: y\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                time.sleep(0.2)
            took = time.monotonic() - t0
            s.settimeout(scaled(2))
            try:
                r = ResponseReader(s).read()
            except ConnectionResetError:
                r = None
        finally:
            s.close()
        self.assertTrue(closed or r is not None, "the slow head was never cut")
        self.assertGreater(took, 0.9)
        self.assertLess(took, scaled(4))
        if r is not None:
            self.assertError(r, 408, "timeout")
            self.assertEqual(r.header("connection"), "close")

    def test_head_timeout_spares_idle_and_slow_replies(self):
        a = self.agent(extra=["--head-timeout", "1"])
        a.launch_ok(["sleep", "60"], id="s")
        idle = a.connect()
        try:
            # No byte sent: the idle timeout's business, not the head's.
            time.sleep(scaled(2.5))
            idle.sendall(request_bytes("GET", "/v1/health"))
            r = ResponseReader(idle).read()
            self.assertEqual(r.status, 200, r)
        finally:
            idle.close()
        # A complete head whose reply takes longer than the head timeout.
        t0 = time.monotonic()
        st = a.post("/v1/processes/s/wait?timeout=2500", b"")
        self.assertEqual(st.status, 200, st)
        self.assertGreater(time.monotonic() - t0, 2.0)

    def test_head_timeout_option(self):
        out = subprocess.run([TEND_BIN, "agent", "--help"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 0)
        self.assertIn(b"--head-timeout", out.stdout)
        for bad in ("0", "-1", "x", ""):
            out = subprocess.run([TEND_BIN, "agent", "--socket", "/nonexistent/s", "--head-timeout", bad],
                                 capture_output=True, timeout=10)
            self.assertEqual(out.returncode, 2, (bad, out))
            self.assertIn(b"--head-timeout", out.stderr)


class TestControlBytesAndUtf8(AgentTestCase):
    """Item 12: raw control bytes in JSON strings are refused, and error
    messages are valid UTF-8 whatever the request held."""

    def post_raw(self, a, body):
        r = a.raw_response(request_bytes("POST", "/v1/processes", body,
                                         {"Content-Type": "application/json"}))
        self.assertIsNotNone(r)
        return r

    def test_raw_nul_in_argv_and_id_refused(self):
        a = self.agent()
        for body in (b'{"argv":["echo","keep\x00DROPPED"]}',
                     b'{"argv":["true"],"id":"ok\x00/../../etc"}'):
            self.assertError(self.post_raw(a, body), 400, "invalid_request")
        self.assertEqual(a.get("/v1/processes").json, [])
        self.assertEqual(a.health()["processes"]["total"], 0)

    def test_raw_control_bytes_refused(self):
        a = self.agent()
        for ch in (b"\x01", b"\n", b"\t", b"\r", b"\x1f", b"\\\x01"):
            body = b'{"argv":["echo","a' + ch + b'b"]}'
            self.assertError(self.post_raw(a, body), 400, "invalid_request")
        self.assertEqual(a.get("/v1/processes").json, [])
        # Whitespace between tokens, escapes and DEL inside strings are fine.
        r = self.post_raw(a, b'{\n\t"argv" :\r\n ["printf", "a\\tb\\n\x7f"], "id": "ws"}')
        self.assertEqual(r.status, 200, r)
        a.wait_ended("ws")
        out = a.get("/v1/processes/ws/logs", headers={"Accept": "application/json"}).json
        self.assertEqual(base64.b64decode(out["stdout"]), b"a\tb\n\x7f")

    def assertUtf8Error(self, r, status):
        self.assertIsNotNone(r)
        self.assertEqual(r.status, status, r)
        text = r.body.decode("utf-8")   # raises on invalid UTF-8
        j = json.loads(text)
        self.assertIsInstance(j.get("error"), str)
        self.assertIn("\ufffd", j["error"])
        return j

    def test_error_messages_are_utf8(self):
        a = self.agent()
        cases = [
            (b"GET /v1/processes/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", 404),
            (b"GET /v1/nothing\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", 404),
            # A truncated sequence and a surrogate, after valid text.
            (b"GET /v1/nothing/\xc3\xa9\xe2\x82 HTTP/1.1\r\nHost: x\r\n\r\n", 404),
            (b"GET /v1/nothing/\xed\xa0\x80 HTTP/1.1\r\nHost: x\r\n\r\n", 404),
            (b"GET /v1/processes?boot=%ff%fe HTTP/1.1\r\nHost: x\r\n\r\n", 410),
        ]
        for raw, status in cases:
            self.assertUtf8Error(a.raw_response(raw), status)
        j = self.assertUtf8Error(a.raw_response(cases[2][0]), 404)
        self.assertIn("\u00e9", j["error"], "valid text around bad bytes is kept")


class TestChunkedFramingStrict(AgentTestCase):
    """Issue 25, item 15: chunked framing is read strictly.  http_parser
    built without HTTP_PARSER_STRICT (Debian's) takes any byte where the
    CRLF after a chunk's data belongs, and control bytes in a chunk
    extension; a proxy in front that frames strictly would read another
    body, and another request after it, than the agent."""

    HEAD = (b"POST /v1/processes HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")

    def body(self, pid):
        return json.dumps({"argv": ["true"], "id": pid}).encode()

    def test_lenient_framing_refused(self):
        a = self.agent()
        cases = {
            "nocrlf": lambda b: b"%x\r\n%sXX0\r\n\r\n" % (len(b), b),
            "ctlext": lambda b: b"%x;\x01\r\n%s\r\n0\r\n\r\n" % (len(b), b),
            "lfext": lambda b: b"%x;a\nb\r\n%s\r\n0\r\n\r\n" % (len(b), b),
            "ctltrailer": lambda b: b"%x\r\n%s\r\n0\r\nX: \x02\r\n\r\n" % (len(b), b),
        }
        for name, frame in cases.items():
            r = a.raw_response(self.HEAD + frame(self.body(name)))
            self.assertIsNotNone(r, name)
            self.assertEqual(r.status, 400, "%s: %r" % (name, r))
            self.assertEqual(r.json.get("code"), "invalid_request", name)
        self.assertEqual(a.get("/v1/processes").json, [],
                         "a body framed leniently was read and launched")
        # Sound framing, with an extension and a trailer, still launches.
        b = self.body("sound")
        r = a.raw_response(self.HEAD + b"%x;ext=1\r\n%s\r\n0\r\nX-T: 1\r\n\r\n"
                           % (len(b), b))
        self.assertIsNotNone(r)
        self.assertIn(r.status, (200, 201), r)
        self.assertEqual([p["id"] for p in a.get("/v1/processes").json], ["sound"])


if __name__ == "__main__":
    import unittest
    unittest.main()
