"""The shim's proxy to the container's own ports (issue 29, parts 3-4):
real servers launched through the agent, reached through `tend shim` by
path (/v1/ports/PORT/proxy/...) and by preview host (PORT-x.localhost),
a browser's cookie login, WebSocket and SSE through it, its policy, and
hostile clients and servers."""

import asyncio
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness import TEND_BIN, HealthProbe, rss_kib, scaled  # noqa: E402
from test_shim import TOKEN, ShimTestCase, free_port, wait_for

try:
    import websockets
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import websockets
    except ImportError:
        websockets = None

# The servers' interpreter: the system's, which has python3-websockets.
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# An HTTP/1.1 server that says what it got (/echo), streams SSE (/sse),
# closes in the middle of a reply (/cut) and streams without end (/zero).
ECHO = r'''
import json, socket, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path.startswith("/sse"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(5):
                ev = ("id: %d\ndata: tick %d\n\n" % (i, i)).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
                time.sleep(0.3)
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/cut"):
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"x" * 1000)
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if self.path.startswith("/zero"):
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            buf = b"\0" * (1 << 20)
            try:
                for _ in range(1024):
                    self.wfile.write(buf)
            except OSError:
                pass
            return
        self.reply(b"")
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        self.reply(body)
    def reply(self, body):
        out = json.dumps({"path": self.path, "headers": self.headers.items(),
                          "sha": __import__("hashlib").sha256(body).hexdigest(),
                          "len": len(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''

# A WebSocket echo on /ws (python3-websockets); any other path is a page
# whose own script opens that WebSocket and writes what came back into
# the DOM, and /late.js, which holds the page's load until the echo went
# out (so that the browser's dump sees it).
WS = r'''
import asyncio, http, sys, websockets
echoed = None
PAGE = b"""<!doctype html><html><head><title>t</title></head><body>
<p id="out">waiting</p>
<script>
var ws = new WebSocket((location.protocol == "https:" ? "wss://" : "ws://") + location.host + "/ws");
ws.onopen = function () { ws.send("ping-" + location.host); };
ws.onmessage = function (e) { document.getElementById("out").textContent = "got:" + e.data; };
ws.onerror = function () { document.getElementById("out").textContent = "ws-error"; };
</script>
<script src="/late.js"></script>
</body></html>"""

async def echo(ws, path):
    async for m in ws:
        await ws.send(m)
        echoed.set()

async def page(path, headers):
    if path.startswith("/ws"):
        return None
    if path.startswith("/late.js"):
        try:
            await asyncio.wait_for(echoed.wait(), 10)
        except asyncio.TimeoutError:
            pass
        await asyncio.sleep(0.3)
        return http.HTTPStatus.OK, [("Content-Type", "text/javascript")], b"/* late */\n"
    return http.HTTPStatus.OK, [("Content-Type", "text/html")], PAGE

async def main():
    global echoed
    echoed = asyncio.Event()
    async with websockets.serve(echo, "127.0.0.1", int(sys.argv[1]), process_request=page):
        await asyncio.Future()

asyncio.run(main())
'''

# Accepts, reads, never answers, never closes; counts its connections.
SILENT = r'''
import asyncio, sys
n = 0
held = []
async def conn(r, w):
    global n
    n += 1
    held.append(w)
    with open(sys.argv[2], "w") as f:
        f.write(str(n))
    while await r.read(65536):
        pass
    await asyncio.sleep(3600)
async def main():
    s = await asyncio.start_server(conn, "127.0.0.1", int(sys.argv[1]), backlog=4096)
    await s.serve_forever()
asyncio.run(main())
'''


def listening(port):
    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    return up


class ProxyCase(ShimTestCase):
    """An agent, a shim in front of it with the proxy, servers launched
    through the agent."""

    shim_extra = []

    def setUp(self):
        super(ShimTestCase, self).setUp()
        self.a = self.agent(extra=["--socket-group", "0"])
        os.chmod(self.a.tmp, 0o711)
        self.shim = self.start_shim(self.a.sock, extra=["--socket-group", "0"] + self.shim_extra)

    def serve(self, argv, port):
        self.a.launch_ok(argv)
        wait_for(listening(port), timeout=10, what="server on %d" % port)
        return port

    def script(self, name, text):
        path = os.path.join(self.a.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def echo_server(self):
        port = free_port()
        return self.serve([PY, self.script("echo.py", ECHO), str(port)], port)

    def preq(self, method, path, host=None, headers=None, token=TOKEN, body=None, port=None):
        h = dict(headers or {})
        if host is not None:
            h["Host"] = host
        return self.req(method, path, body=body, headers=h, token=token, port=port)

    def shim_log(self):
        """Stop the shim, return what it logged."""
        self.shim.proc.terminate()
        self.shim.proc.wait(timeout=scaled(15))
        return self.shim.proc.stderr.read().decode(errors="replace")


class TestProxyForms(ProxyCase):
    shim_extra = ["--proxy-host-suffix", "preview.test"]

    def test_http_server_page_through_both_forms(self):
        www = os.path.join(self.a.tmp, "www")
        os.mkdir(www)
        with open(os.path.join(www, "index.html"), "w") as f:
            f.write("<h1>hello from the box</h1>")
        port = free_port()
        # Launched with readiness: ready means listening, and the listing
        # names its record (parts 1-2 of the issue), then the proxy.
        st = self.a.launch_ok([PY, "-m", "http.server", "--bind", "127.0.0.1", "--directory", www,
                               str(port)], id="web", ready={"port": port, "timeoutMs": 20000})
        r = self.a.post("/v1/processes/web/wait?for=ready&timeout=20000", timeout=scaled(25))
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json["ready"], True)
        ports = [p for p in self.a.get("/v1/ports").json if p["port"] == port]
        self.assertEqual(ports, [{"port": port, "address": "127.0.0.1", "pid": st["pid"], "id": "web"}])
        # The agent's own /v1/ports goes through the shim as any route.
        code, _, body = self.preq("GET", "/v1/ports")
        self.assertEqual(code, 200, body)
        self.assertIn(port, [p["port"] for p in json.loads(body)])
        st, h, body = self.preq("GET", "/v1/ports/%d/proxy/index.html" % port)
        self.assertEqual(st, 200, body)
        self.assertIn(b"hello from the box", body)
        # The prefix alone, with or without its slash: the server's root.
        for p in ("/v1/ports/%d/proxy" % port, "/v1/ports/%d/proxy/" % port):
            st, _, body = self.preq("GET", p)
            self.assertEqual(st, 200, p)
            self.assertIn(b"hello from the box", body, p)
        # Preview hosts: the path is the server's own.
        for host in ("%d-x.localhost" % port, "%d-sbx1.example.com:443" % port,
                     "%d.preview.test" % port, "%d.PREVIEW.test:%d" % (port, self.shim.port)):
            st, _, body = self.preq("GET", "/index.html", host=host)
            self.assertEqual(st, 200, host)
            self.assertIn(b"hello from the box", body, host)
        # Not a preview host: the agent's.
        for host in ("%d.other.test" % port, "x-%d.localhost" % port, "127.0.0.1:%d" % self.shim.port):
            st, _, body = self.preq("GET", "/v1/health", host=host)
            self.assertEqual(st, 200, host)
            self.assertEqual(json.loads(body)["status"], "ok", host)
        # A preview host naming the shim's own port is the shim itself.
        st, _, body = self.preq("GET", "/v1/health", host="%d-x.localhost" % self.shim.port)
        self.assertEqual(json.loads(body)["status"], "ok")

    def test_ipv6_only_server_and_loopback_only(self):
        www = os.path.join(self.a.tmp, "v6")
        os.mkdir(www)
        with open(os.path.join(www, "index.html"), "w") as f:
            f.write("six")
        port = free_port()
        self.a.launch_ok([PY, "-m", "http.server", "--bind", "::1", "--directory", www, str(port)])

        def up6():
            try:
                socket.create_connection(("::1", port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(up6, timeout=10, what="server on [::1]")
        # 127.0.0.1 refuses: [::1] is tried.
        st, _, body = self.preq("GET", "/v1/ports/%d/proxy/" % port)
        self.assertEqual((st, body), (200, b"six"))
        # No address is an input: these are the agent's (404), never a
        # connection elsewhere.
        for p in ("/v1/ports/10.0.0.1:%d/proxy/" % port, "/v1/ports/[::2]:%d/proxy/" % port,
                  "/v1/ports/%d@10.0.0.1/proxy/" % port):
            st, _, body = self.preq("GET", p)
            self.assertEqual(st, 404, p)
        st, _, body = self.preq("GET", "/", host="10.0.0.1:%d" % port)
        self.assertNotEqual(body, b"six")

    def test_headers_query_and_bodies_as_the_server_sees_them(self):
        port = self.echo_server()
        st, _, body = self.preq("GET", "/v1/ports/%d/proxy/echo/a%%20b?x=1&y=2" % port,
                                headers={"X-Forwarded-Prefix": "/evil", "Cookie": "a=1; tend_proxy=zz; b=2"})
        self.assertEqual(st, 200, body)
        j = json.loads(body)
        self.assertEqual(j["path"], "/echo/a%20b?x=1&y=2")
        hs = [(k.lower(), v) for k, v in j["headers"]]
        self.assertIn(("x-forwarded-prefix", "/v1/ports/%d/proxy" % port), hs)
        self.assertEqual([v for k, v in hs if k == "x-forwarded-prefix"], ["/v1/ports/%d/proxy" % port])
        self.assertNotIn("authorization", [k for k, _ in hs])
        self.assertIn(("cookie", "a=1; b=2"), hs)
        self.assertNotIn(TOKEN, body.decode())
        # The host form adds no prefix and keeps the path.
        st, _, body = self.preq("GET", "/q?z=3", host="%d-x.localhost" % port,
                                headers={"X-Access-Token": TOKEN})
        j = json.loads(body)
        self.assertEqual(j["path"], "/q?z=3")
        hs = [k.lower() for k, _ in j["headers"]]
        self.assertNotIn("x-forwarded-prefix", hs)
        self.assertNotIn("x-access-token", hs)
        # Bodies: a length and chunks.
        data = os.urandom(3 << 20)
        st, _, body = self.preq("POST", "/v1/ports/%d/proxy/up" % port, body=data)
        j = json.loads(body)
        self.assertEqual((j["len"], j["sha"]), (len(data), hashlib.sha256(data).hexdigest()))

        def chunks():
            for i in range(0, len(data), 100000):
                yield data[i:i + 100000]
        c = self.conn()
        c.request("POST", "/v1/ports/%d/proxy/up" % port, body=chunks(), encode_chunked=True,
                  headers={"Authorization": "Bearer " + TOKEN, "Transfer-Encoding": "chunked"})
        j = json.loads(c.getresponse().read())
        self.assertEqual((j["len"], j["sha"]), (len(data), hashlib.sha256(data).hexdigest()))
        c.close()

    def test_keep_alive_moves_between_targets(self):
        port = self.echo_server()
        c = self.conn()
        auth = {"Authorization": "Bearer " + TOKEN}
        for path, want in (("/v1/ports/%d/proxy/one" % port, "/one"), ("/v1/health", None),
                           ("/v1/ports/%d/proxy/two" % port, "/two"),
                           ("/v1/ports/%d/proxy/three" % port, "/three"), ("/v1/health", None)):
            c.request("GET", path, headers=auth)
            r = c.getresponse()
            body = r.read()
            self.assertEqual(r.status, 200, (path, body))
            if want is None:
                self.assertEqual(json.loads(body)["status"], "ok")
            else:
                self.assertEqual(json.loads(body)["path"], want)
        c.close()
        # A request for another target refused there: its answer comes
        # once the old target has ended, not never.
        for first, then, status in (("/v1/ports/%d/proxy/a" % port, "/v1/health", 401),
                                    ("/v1/health", "/v1/ports/%d/proxy/a" % port, 401),
                                    ("/v1/ports/%d/proxy/a" % port, "/v1/ports/%d/proxy/b" % port, 401),
                                    ("/v1/health", "/v1/ports/%d/proxy/" % self.shim.port, 403)):
            c = self.conn(timeout=5)
            c.request("GET", first, headers=auth)
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
            c.request("GET", then, headers=auth if status == 403 else {})
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, status, (first, then))
            c.close()

    def test_large_download_byte_exact(self):
        www = os.path.join(self.a.tmp, "big")
        os.mkdir(www)
        data = os.urandom(100 << 20)
        want = hashlib.sha256(data).hexdigest()
        with open(os.path.join(www, "big.bin"), "wb") as f:
            f.write(data)
        del data
        port = free_port()
        self.serve([PY, "-m", "http.server", "--bind", "127.0.0.1", "--directory", www, str(port)], port)

        def fetch(host_port, path, headers):
            c = http.client.HTTPConnection("127.0.0.1", host_port, timeout=scaled(60))
            t = time.monotonic()
            c.request("GET", path, headers=headers)
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            h = hashlib.sha256()
            n = 0
            while True:
                b = r.read(1 << 20)
                if not b:
                    break
                h.update(b)
                n += len(b)
            c.close()
            return n, h.hexdigest(), time.monotonic() - t
        n, got, t_proxy = fetch(self.shim.port, "/v1/ports/%d/proxy/big.bin" % port,
                                {"Authorization": "Bearer " + TOKEN})
        self.assertEqual((n, got), (100 << 20, want))
        n, got, t_direct = fetch(port, "/big.bin", {})
        self.assertEqual(got, want)
        # The ratio is the bench's (scripts/bench proxy); here only a sanity bound.
        self.assertLess(t_proxy, max(10 * t_direct, scaled(20)), (t_proxy, t_direct))


class TestProxyStreams(ProxyCase):
    def test_sse_arrives_as_sent(self):
        port = self.echo_server()
        s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(10))
        s.sendall(("GET /v1/ports/%d/proxy/sse HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                   % (port, TOKEN)).encode())
        got = b""
        t0 = time.monotonic()
        first = None
        while b"0\r\n\r\n" not in got:
            b = s.recv(65536)
            if not b:
                break
            got += b
            if first is None and b"data: tick 0" in got:
                first = time.monotonic() - t0
        s.close()
        for i in range(5):
            self.assertIn(b"data: tick %d\n\n" % i, got)
        self.assertIn(b"text/event-stream", got)
        # The first event came before the last was sent (~1.5 s): streamed.
        self.assertIsNotNone(first)
        self.assertLess(first, 1.0)

    def test_client_half_close_still_gets_its_reply(self):
        port = self.echo_server()
        s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(10))
        s.sendall(("GET /v1/ports/%d/proxy/half HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Connection: close\r\n\r\n" % (port, TOKEN)).encode())
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
        s.close()
        self.assertTrue(got.startswith(b"HTTP/1.1 200"), got[:100])
        self.assertIn(b'"path": "/half"', got)

    def test_server_that_closes_mid_response(self):
        port = self.echo_server()
        c = self.conn()
        c.request("GET", "/v1/ports/%d/proxy/cut" % port, headers={"Authorization": "Bearer " + TOKEN})
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        with self.assertRaises(http.client.IncompleteRead) as e:
            r.read()
        self.assertEqual(len(e.exception.partial), 1000)
        c.close()
        # The shim serves on.
        st, _, body = self.preq("GET", "/v1/ports/%d/proxy/after" % port)
        self.assertEqual(json.loads(body)["path"], "/after")

    @unittest.skipIf(websockets is None, "python3-websockets missing")
    def test_websocket_echo_both_ways(self):
        port = free_port()
        self.serve([PY, self.script("ws.py", WS), str(port)], port)

        async def go():
            out = []
            for url, headers in (
                    ("ws://127.0.0.1:%d/v1/ports/%d/proxy/ws" % (self.shim.port, port),
                     {"Authorization": "Bearer " + TOKEN}),
                    ("ws://%d-x.localhost:%d/ws" % (port, self.shim.port),
                     {"Authorization": "Bearer " + TOKEN})):
                sock = socket.create_connection(("127.0.0.1", self.shim.port))
                async with websockets.connect(url, sock=sock, extra_headers=headers, max_size=None) as ws:
                    for m in ("hello", b"\x00\x01binary" * 1000, "x" * 300000):
                        await ws.send(m)
                        out.append(await ws.recv() == m)
            return out
        self.assertEqual(asyncio.run(asyncio.wait_for(go(), scaled(30))), [True] * 6)


class TestProxyPolicy(ProxyCase):
    def test_closed_forbidden_and_unauthorized(self):
        port = self.echo_server()
        nothing = free_port()
        st, h, body = self.preq("GET", "/v1/ports/%d/proxy/" % nothing)
        self.assertEqual(st, 502, body)
        self.assertEqual(json.loads(body)["code"], "port_closed")
        st, h, body = self.preq("GET", "/", host="%d-x.localhost" % nothing)
        self.assertEqual(json.loads(body)["code"], "port_closed")
        # The shim's own port, by path: never proxied.
        st, h, body = self.preq("GET", "/v1/ports/%d/proxy/" % self.shim.port)
        self.assertEqual(st, 403, body)
        self.assertEqual(json.loads(body)["code"], "port_forbidden")
        # A login for it is refused the same way, with no cookie; without
        # the token the policy is not told (401, not 403).
        st, h, body = self.preq("GET", "/v1/ports/%d/proxy/?tend_token=%s" % (self.shim.port, TOKEN),
                                token=None)
        self.assertEqual((st, json.loads(body)["code"]), (403, "port_forbidden"))
        self.assertNotIn("set-cookie", h)
        self.assertUnauthorized(*self.preq("GET", "/v1/ports/%d/proxy/" % self.shim.port, token=None))
        # No token, a wrong one, the open /health: 401, nothing reaches the port.
        for token in (None, "wrong"):
            self.assertUnauthorized(*self.preq("GET", "/v1/ports/%d/proxy/x" % port, token=token))
            self.assertUnauthorized(*self.preq("GET", "/x", host="%d-x.localhost" % port, token=token))
        self.assertUnauthorized(*self.preq("GET", "/health", host="%d-x.localhost" % port, token=None))
        # Not a proxy path: the agent's (404 there).
        st, _, body = self.preq("GET", "/v1/ports/%d/proxyx" % port)
        self.assertEqual(st, 404, body)
        st, _, body = self.preq("GET", "/v1/ports/0/proxy/")
        self.assertEqual(st, 404, body)

    def test_proxy_ports_list(self):
        allowed, other = self.echo_server(), free_port()
        s = self.start_shim(self.a.sock, extra=["--socket-group", "0", "--proxy-ports",
                                                 "%d,%d-%d" % (allowed, other + 1, other + 3)])
        st, _, body = self.preq("GET", "/v1/ports/%d/proxy/in" % allowed, port=s.port)
        self.assertEqual(json.loads(body)["path"], "/in")
        st, _, body = self.preq("GET", "/v1/ports/%d/proxy/" % other, port=s.port)
        self.assertEqual(st, 403, body)
        self.assertEqual(json.loads(body)["code"], "port_forbidden")
        # Inside a range, nothing there: 502.
        st, _, body = self.preq("GET", "/v1/ports/%d/proxy/" % (other + 2), port=s.port)
        self.assertIn(st, (403, 502), body)
        # --proxy-ports none: the proxy is off, every request the agent's.
        s2 = self.start_shim(self.a.sock, extra=["--socket-group", "0", "--proxy-ports", "none"])
        st, _, body = self.preq("GET", "/v1/ports/%d/proxy/in" % allowed, port=s2.port)
        self.assertEqual(st, 404, body)
        st, _, body = self.preq("GET", "/v1/health", host="%d-x.localhost" % allowed, port=s2.port)
        self.assertEqual(json.loads(body)["status"], "ok")
        for bad in ("", "0", "70000", "5-3", "1,,2", "x", "80-"):
            p = subprocess.run([TEND_BIN, "shim", "--no-auth",
                                "--proxy-ports", bad], capture_output=True, timeout=10)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn(b"--proxy-ports", p.stderr)


class TestProxyCookie(ProxyCase):
    def cookie_of(self, h):
        sc = h.get("set-cookie")
        self.assertIsNotNone(sc, h)
        parts = [p.strip() for p in sc.split(";")]
        name, _, value = parts[0].partition("=")
        return name, value, parts[1:]

    def test_token_once_then_cookie(self):
        port = self.echo_server()
        base = "/v1/ports/%d/proxy" % port
        st, h, body = self.preq("GET", base + "/page?a=1&tend_token=%s&b=2" % TOKEN, token=None)
        self.assertEqual(st, 302, body)
        self.assertEqual((body, h.get("content-length")), (b"", "0"))
        self.assertNotIn("content-type", h)
        self.assertEqual(h["location"], base + "/page?a=1&b=2")
        self.assertNotIn(TOKEN, h["location"])
        name, value, attrs = self.cookie_of(h)
        self.assertEqual(name, "tend_proxy")
        self.assertNotIn(TOKEN, value)
        self.assertIn("HttpOnly", attrs)
        self.assertIn("SameSite=Lax", attrs)
        self.assertIn("Path=" + base, attrs)
        self.assertNotIn("Secure", attrs)
        # The cookie opens that port's proxy, and is not forwarded.
        st, _, body = self.preq("GET", base + "/page?a=1&b=2", token=None,
                                headers={"Cookie": "k=v; tend_proxy=" + value})
        self.assertEqual(st, 200, body)
        j = json.loads(body)
        self.assertEqual(j["path"], "/page?a=1&b=2")
        self.assertIn(("Cookie", "k=v"), [tuple(x) for x in j["headers"]])
        self.assertNotIn(value, body.decode())
        # Not another port's, not the agent's, not altered.
        other = self.echo_server()
        self.assertUnauthorized(*self.preq("GET", "/v1/ports/%d/proxy/" % other, token=None,
                                           headers={"Cookie": "tend_proxy=" + value}))
        self.assertUnauthorized(*self.preq("GET", "/v1/health", token=None,
                                           headers={"Cookie": "tend_proxy=" + value}))
        self.assertUnauthorized(*self.preq("GET", base + "/", token=None,
                                           headers={"Cookie": "tend_proxy=" + value[:-1] + "0"}))
        # A wrong one-time token: 401, no cookie.
        st, h, body = self.preq("GET", base + "/?tend_token=nope", token=None)
        self.assertUnauthorized(st, h, body)
        self.assertNotIn("set-cookie", h)
        # The preview host's cookie is the host's (Path=/); Secure behind TLS.
        st, h, _ = self.preq("GET", "/p?tend_token=" + TOKEN, host="%d-x.localhost" % port, token=None,
                             headers={"X-Forwarded-Proto": "https"})
        self.assertEqual(st, 302)
        self.assertEqual(h["location"], "/p")
        name, value2, attrs = self.cookie_of(h)
        self.assertIn("Path=/", attrs)
        self.assertIn("Secure", attrs)
        self.assertEqual(value2, value)  # one port, one cookie
        st, _, body = self.preq("GET", "/p", host="%d-x.localhost" % port, token=None,
                                headers={"Cookie": "tend_proxy=" + value2})
        self.assertEqual(json.loads(body)["path"], "/p")
        # Nothing of it in either log.
        log = self.shim_log() + self.a.log_text()
        self.assertNotIn(TOKEN, log)
        self.assertNotIn(value, log)

    def test_browser_preview_url_and_websocket(self):
        browser = shutil.which("chromium")
        if browser is None:
            self.skipTest("chromium is not installed (apt-get install chromium)")
        if websockets is None:
            self.skipTest("python3-websockets missing")
        port = free_port()
        self.serve([PY, self.script("ws.py", WS), str(port)], port)
        prof = tempfile.mkdtemp(prefix="tend-chromium-")
        self.addCleanup(shutil.rmtree, prof, True)
        url = "http://%d-x.localhost:%d/?tend_token=%s" % (port, self.shim.port, TOKEN)
        out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                              "--disable-background-networking", "--disable-component-update",
                              "--disable-sync", "--no-first-run", "--user-data-dir=" + prof,
                              "--dump-dom", url],
                             capture_output=True, timeout=scaled(60)).stdout.decode()
        # The page came (after the redirect, with the cookie), and its
        # WebSocket went through the proxy and back.
        self.assertIn('id="out"', out)
        self.assertIn("got:ping-%d-x.localhost:%d" % (port, self.shim.port), out)
        log = self.shim_log() + self.a.log_text()
        self.assertNotIn(TOKEN, log)


class TestProxySupervised(ShimTestCase):
    def setUp(self):
        super(ShimTestCase, self).setUp()

    def test_agent_passes_the_proxy_options_and_health_shows_them(self):
        tmp = tempfile.mkdtemp(prefix="tend-proxy-tok-")
        self.addCleanup(shutil.rmtree, tmp, True)
        tok = os.path.join(tmp, "token")
        with open(tok, "w") as f:
            f.write(TOKEN + "\n")
        sport, allowed = free_port(), free_port()
        a = self.agent(extra=["--shim-listen", "127.0.0.1:%d" % sport, "--shim-token-file", tok,
                              "--proxy-ports", "%d" % allowed, "--proxy-host-suffix", "box.test"])
        os.chmod(a.tmp, 0o711)
        sh = wait_for(lambda: a.health().get("shim", {}).get("state") == "running" and a.health()["shim"],
                      timeout=5, what="shim running")
        self.assertEqual(sh["proxyPorts"], "%d" % allowed)
        self.assertEqual(sh["proxyHostSuffix"], "box.test")
        path = os.path.join(a.tmp, "echo.py")
        with open(path, "w") as f:
            f.write(ECHO)
        a.launch_ok([PY, path, str(allowed)])
        wait_for(listening(allowed), timeout=10, what="server")
        wait_for(listening(sport), timeout=10, what="shim")
        st, _, body = self.req("GET", "/s", headers={"Host": "%d.box.test" % allowed}, port=sport)
        self.assertEqual(json.loads(body)["path"], "/s")
        st, _, body = self.req("GET", "/v1/ports/%d/proxy/" % free_port(), port=sport)
        self.assertEqual(st, 403, body)
        # Without the options: the defaults, shown as such.
        b = self.agent(extra=["--shim-listen", "127.0.0.1:%d" % free_port(), "--shim-token-file", tok])
        sh = wait_for(lambda: b.health().get("shim"), timeout=5, what="shim")
        self.assertEqual(sh["proxyPorts"], "all")
        self.assertIsNone(sh["proxyHostSuffix"])
        p = subprocess.run([TEND_BIN, "agent", "--shim-listen", "127.0.0.1:1", "--shim-token-file", tok,
                            "--proxy-ports", "1-x"], capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"--proxy-ports", p.stderr)


class TestProxyHostile(ProxyCase):
    shim_extra = ["--max-conns", "2100"]

    def shim_fds(self):
        return len(os.listdir("/proc/%d/fd" % self.shim.proc.pid))

    def fast_health(self):
        t = time.monotonic()
        st, _, body = self.preq("GET", "/v1/health")
        self.assertEqual(st, 200)
        return time.monotonic() - t

    def test_slowloris_through_the_proxy(self):
        port = self.echo_server()
        socks = []
        with HealthProbe(self.a, interval=0.01) as probe:
            for _ in range(200):
                s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(10))
                s.sendall(b"GET /v1/ports/%d/proxy/ HTTP/1.1\r\nHost: x\r\n" % port)
                socks.append(s)
            t0 = time.monotonic()
            for _ in range(8):
                time.sleep(0.5)
                for s in socks:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
                self.assertLess(self.fast_health(), 1.0)
            # Each was dropped by the first head's deadline.
            for s in socks:
                try:
                    self.assertEqual(s.recv(100), b"")
                except ConnectionResetError:
                    pass
                s.close()
            self.assertLess(time.monotonic() - t0, scaled(15))
        self.assertEqual(probe.errors, [])
        self.assertLess(probe.worst, 1.0)

    def test_client_that_never_reads_a_large_response(self):
        port = self.echo_server()
        before = rss_kib(self.shim.proc.pid)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", self.shim.port))
        s.sendall(("GET /v1/ports/%d/proxy/zero HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                   % (port, TOKEN)).encode())
        time.sleep(scaled(2))
        after = rss_kib(self.shim.proc.pid)
        # Bounded buffers (2 x 256 KiB + 64 KiB and a pipe), not the 1 GiB reply.
        self.assertLess(after - before, 2048, (before, after))
        self.assertLess(self.fast_health(), 1.0)
        s.close()

    def test_many_connections_to_a_server_that_never_answers(self):
        n = 1000
        port = free_port()
        count = os.path.join(self.a.tmp, "count")
        self.serve([PY, self.script("silent.py", SILENT), str(port), count], port)
        base_fds = self.shim_fds()
        socks = []
        with HealthProbe(self.a, interval=0.01) as probe:
            for i in range(n):
                s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(10))
                s.sendall(("GET /v1/ports/%d/proxy/%d HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                           % (port, i, TOKEN)).encode())
                socks.append(s)

            def held():
                try:
                    with open(count) as f:
                        return int(f.read() or 0) >= n
                except (OSError, ValueError):
                    return False
            wait_for(held, timeout=30, what="%d proxied connections" % n)
            self.assertLess(self.fast_health(), 1.0)
            rss = rss_kib(self.shim.proc.pid)
            for s in socks:
                s.close()
        self.assertEqual(probe.errors, [])
        self.assertLess(probe.worst, 1.0)
        # Memory per held connection is bounded (buffers are allocated, not touched).
        self.assertLess(rss, 256 * 1024, rss)
        # The clients are gone; the server never closes: the shim lets go
        # after SHIM_PROXY_EOF_WAIT (30 s) at the head timer's pace (10 s).
        wait_for(lambda: self.shim_fds() < base_fds + 10, timeout=60, what="shim's connections freed")


if __name__ == "__main__":
    unittest.main()
