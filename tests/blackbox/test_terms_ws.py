"""Terminals over WebSocket: the connect route, the bridge's /pty, the
output SSE, driven by a WebSocket library that is not tend's own
(python3-websockets), against an agent as PID 1."""
import asyncio
import base64
import json
import os
import socket
import sys
import time
import unittest

from harness import TEND_BIN, AgentTestCase, poll, scaled
from test_terms import SHELL, SHELL_ENV, TermCase

try:
    import websockets
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import websockets
    except ImportError as e:
        websockets = None
        WS_MISSING = str(e)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, scaled(30)))


class Client:
    """One WebSocket connection: connect's framing (text + binary pairs)
    or the bridge's (binary alone)."""

    def __init__(self, ws, bridge=False):
        self.ws = ws
        self.bridge = bridge
        self.out = b""
        self.frames = []        # (text json | bytes)
        self.cursors = []       # (cursor, len(out) after the chunk)
        self.exit = None
        self.closed = False

    async def step(self, timeout):
        try:
            m = await asyncio.wait_for(self.ws.recv(), timeout)
        except websockets.ConnectionClosed:
            self.closed = True
            return False
        if isinstance(m, str):
            j = json.loads(m)
            self.frames.append(j)
            if j["type"] == "exit":
                self.exit = j
            if j["type"] == "chunk":
                data = await asyncio.wait_for(self.ws.recv(), timeout)
                assert isinstance(data, bytes), data
                assert len(data) == j["byteLength"], (j, len(data))
                self.frames.append(data)
                self.out += data
                self.cursors.append((j["cursor"], len(self.out)))
        else:
            assert self.bridge, "a binary frame without its chunk frame"
            self.frames.append(m)
            self.out += m
        return True

    async def until(self, pred, timeout=5.0):
        end = time.monotonic() + scaled(timeout)
        while not pred(self):
            left = end - time.monotonic()
            if left <= 0 or self.closed:
                raise AssertionError("timed out; got %r" % self.out[-300:])
            try:
                if not await self.step(left):
                    continue
            except asyncio.TimeoutError:
                continue
        return self

    async def wait_out(self, needle, timeout=5.0, after=0):
        return await self.until(lambda c: needle in c.out[after:], timeout)

    async def send(self, data):
        await self.ws.send(data)

    async def ctl(self, **j):
        await self.ws.send(json.dumps(j))


async def ws_open(a, path, bridge=False, headers=None):
    ws = await websockets.unix_connect(a.sock, "ws://localhost" + path, max_size=None,
                                       ping_interval=None, extra_headers=headers or {})
    return Client(ws, bridge)


@unittest.skipIf(websockets is None, "python3-websockets: %s" % (
    WS_MISSING if websockets is None else ""))
class TestConnect(TermCase):
    async def attach(self, a, t, cursor=None, **kw):
        q = "?cursor=%s" % cursor if cursor is not None else ""
        c = await ws_open(a, "/v1/terminals/%s/connect%s" % (t["id"], q), **kw)
        await c.until(lambda c: c.frames)
        self.assertEqual(c.frames[0]["type"], "ready", c.frames)
        self.assertIn("cursor", c.frames[0])
        return c

    def test_echo_resize_interrupt(self):
        a = self.agent()
        t = self.shell(a, cols=80, rows=24)

        async def go():
            c = await self.attach(a, t)
            await c.wait_out(b"PROMPT> ")
            await c.send(b"echo hi$((40+2))\n")
            await c.wait_out(b"hi42")
            n = len(c.out)
            await c.ctl(type="resize", cols=101, rows=33)
            await c.send(b"stty size\n")
            await c.wait_out(b"33 101", after=n)
            n = len(c.out)
            await c.send(b"sleep 100\n")
            await c.wait_out(b"sleep 100", after=n)
            await asyncio.sleep(0.2)
            await c.ctl(type="interrupt")
            await c.wait_out(b"PROMPT> ", after=n + 10)
            await c.ws.close()
        run(go())
        self.assertEqual(a.get("/v1/terminals/%s" % t["id"]).json["status"], "running")
        self.assertEqual(self.sleeps_in_ns(a), [])

    def test_exit_after_last_bytes(self):
        """printf bye; exit 3: the last chunk ends with bye, then exit 3."""
        a = self.agent()

        async def go(i):
            t = self.create(a, argv=["/bin/sh", "-c", "sleep 0.02; printf bye%d; exit 3" % i])
            c = await self.attach(a, t)
            await c.until(lambda c: c.exit is not None, 10)
            self.assertTrue(c.out.endswith(b"bye%d" % i), c.out)
            self.assertEqual(c.exit["exit"]["code"], 3, c.exit)
            self.assertEqual(c.exit["cursor"], c.cursors[-1][0])
            last = [f for f in c.frames if isinstance(f, dict)][-1]
            self.assertEqual(last["type"], "exit")
            await c.until(lambda c: c.closed, 5)
        for i in range(20):
            run(go(i))

    def test_reconnect_from_cursor(self):
        a = self.agent()
        t = self.shell(a)

        async def go():
            c = await self.attach(a, t)
            await c.wait_out(b"PROMPT> ")
            await c.send(b"echo one\n")
            await c.wait_out(b"one\r\n")
            await c.ws.close()
            cur, at = c.cursors[-1]
            self.type(a, t, "echo two$((1+1))\n")
            self.wait_out(a, t, rb"two2\r\n.*PROMPT> ")
            stored = self.output(a, t)
            d = await self.attach(a, t, cursor=cur)
            await d.until(lambda d: len(d.out) >= len(stored) - at)
            self.assertEqual(d.out, stored[at:])
            self.assertEqual(d.frames[0]["cursor"], cur)
            # From the start: all of it.
            e = await self.attach(a, t, cursor="")
            await e.until(lambda e: len(e.out) >= len(stored))
            self.assertEqual(e.out, stored)
            await d.ws.close()
            await e.ws.close()
        run(go())

    def test_bad_cursor_and_no_upgrade(self):
        a = self.agent()
        t = self.shell(a)
        r = a.get("/v1/terminals/%s/connect" % t["id"])
        j = self.assertError(r, 400, "invalid_request")
        self.assertIn("WebSocket upgrade required", j["error"])
        hs = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
        r = a.get("/v1/terminals/%s/connect?cursor=nope" % t["id"], headers=hs)
        self.assertError(r, 400, "invalid_request")
        r = a.get("/v1/terminals/%s/connect" % t["id"],
                  headers=dict(hs, **{"Sec-WebSocket-Version": "8"}))
        self.assertEqual(r.status, 426, r)
        r = a.get("/v1/terminals/nosuch/connect", headers=hs)
        self.assertError(r, 404, "not_found")

    def test_two_clients(self):
        a = self.agent()
        t = self.shell(a)

        async def go():
            c = await self.attach(a, t)
            d = await self.attach(a, t)
            await c.wait_out(b"PROMPT> ")
            await d.wait_out(b"PROMPT> ")
            await c.send(b"echo from$((2*3))c\n")
            await d.send(b"echo from$((3*3))d\n")
            for x in (c, d):
                await x.wait_out(b"from6c")
                await x.wait_out(b"from9d")
            await c.ws.close()
            await d.send(b"echo still$((1+1))\n")
            await d.wait_out(b"still2")
            await d.ws.close()
        run(go())

    def handshake(self, a, path):
        s = a.connect()
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n" % path).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        self.assertTrue(head.startswith(b"HTTP/1.1 101"), head)
        return s

    def test_slow_client_bounded(self):
        """A client that never reads while the terminal prints 50 MB: the
        agent's RSS stays within ~1 MiB, the terminal ends, the agent answers."""
        a = self.agent()
        t = self.create(a, argv=["/bin/sh", "-c", "sleep 0.3; yes | head -c 50M; sleep 0.2"])
        s = self.handshake(a, "/v1/terminals/%s/connect" % t["id"])
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        before = a.rss_kib()
        peak = before
        end = time.monotonic() + scaled(60)
        while time.monotonic() < end:
            peak = max(peak, a.rss_kib())
            if a.get("/v1/terminals/%s" % t["id"]).json["status"] != "running":
                break
            time.sleep(0.05)
        st = a.get("/v1/terminals/%s" % t["id"]).json
        self.assertEqual(st["status"], "exited", st)
        self.assertGreater(st["outputBytes"], 50 << 20)
        # A sanitizer build's allocator keeps freed chunks in quarantine.
        limit = 1024 if not os.environ.get("TEND_SLOW") else 8192
        print("slow client: RSS %d -> %d KiB, %d bytes stored" % (before, peak, st["outputBytes"]),
              file=sys.stderr)
        self.assertLess(peak - before, limit, "RSS grew from %d to %d KiB" % (before, peak))
        self.assertEqual(a.get("/v1/terminals").status, 200)
        s.close()

    def test_vanished_client(self):
        a = self.agent()
        t = self.shell(a)
        s = self.handshake(a, "/v1/terminals/%s/connect" % t["id"])
        s.close()
        self.type(a, t, "echo alive$((1+1))\n")
        self.wait_out(a, t, b"alive2")
        time.sleep(0.2)
        self.assertEqual(a.get("/v1/terminals/%s" % t["id"]).json["status"], "running")

        async def go():
            c = await self.attach(a, t)
            await c.wait_out(b"alive2")
            await c.ws.close()
        run(go())

    def test_output_sse(self):
        a = self.agent()
        t = self.create(a, argv=["/bin/sh", "-c", "printf 'a1\\n'; sleep 0.2; printf 'b2\\n'; exit 4"])
        ev = a.sse("/v1/terminals/%s/output?follow=1" % t["id"], timeout=10,
                   until=lambda e: e.get("json", {}).get("type") == "terminal")
        types = [e["json"]["type"] for e in ev.events]
        self.assertEqual(types[-1], "terminal", types)
        data = b"".join(base64.b64decode(e["json"]["data"]) for e in ev.events
                        if e["json"]["type"] == "data")
        self.assertEqual(data, b"a1\r\nb2\r\n")
        for e in ev.events[:-1]:
            self.assertEqual(e["json"]["terminalId"], t["id"])
            self.assertIn("timestamp", e["json"])
        self.assertEqual(ev.events[-1]["json"]["exit"]["code"], 4)
        # From the first event's cursor: only what follows it.
        first = ev.events[0]["json"]["cursor"]
        ev2 = a.sse("/v1/terminals/%s/output?since=%s" % (t["id"], first), timeout=5)
        rest = b"".join(base64.b64decode(e["json"]["data"]) for e in ev2.events
                        if e["json"]["type"] == "data")
        self.assertEqual(rest, b"b2\r\n")


@unittest.skipIf(websockets is None, "python3-websockets missing")
class TestBridgePty(TermCase):
    def test_fresh_terminal_ends_on_close(self):
        a = self.agent()

        async def go():
            c = await ws_open(a, "/v1/sandbox/sb1/pty?cols=90&rows=20&shell=/bin/sh", bridge=True)
            await c.until(lambda c: c.frames and isinstance(c.frames[0], dict))
            self.assertEqual(c.frames[0], {"type": "ready"})
            await c.send(b"stty size; echo x$((6*7))\n")
            await c.wait_out(b"x42")
            self.assertIn(b"20 90", c.out)
            await c.ws.close()
        run(go())
        ts = a.get("/v1/terminals").json
        self.assertEqual(len(ts), 1, ts)
        self.wait_exited(a, ts[0])

    def test_terminal_id_attach_replays(self):
        a = self.agent()

        async def go():
            c = await ws_open(a, "/v1/sandbox/sb1/pty?terminalId=wrong&shell=/bin/sh",
                              bridge=True, headers={"Terminal-Id": "dev"})
            await c.send(b"echo mark$((5+5))\n")
            await c.wait_out(b"mark10")
            await c.ws.close()
            await asyncio.sleep(0.2)
            self.assertEqual(a.get("/v1/terminals/dev").json["status"], "running")
            self.assertEqual(a.get("/v1/terminals/wrong").status, 404)
            d = await ws_open(a, "/v1/sandbox/sb1/pty?terminalId=dev", bridge=True)
            await d.wait_out(b"mark10")
            await d.send(b"exit 7\n")
            await d.until(lambda d: d.exit is not None)
            self.assertEqual(d.exit, {"type": "exit", "code": 7})
            self.assertTrue(d.out.startswith(c.out[:len(b"mark10")]) or b"mark10" in d.out)
        run(go())

    def test_pty_refusals(self):
        a = self.agent()
        hs = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
        r = a.get("/v1/sandbox/sb1/pty?cols=abc&rows=24", headers=hs)
        j = self.assertError(r, 400)
        self.assertIn("cols and rows must be valid numbers", j["error"])
        r = a.get("/v1/sandbox/sb1/pty?cols=80&rows=24")
        self.assertError(r, 400)
        self.assertEqual(a.get("/v1/terminals").json, [])
        # The process-resource line's connect works through the alias.
        t = self.shell(a)

        async def go():
            c = await ws_open(a, "/v1/sandbox/sb1/terminals/%s/connect" % t["id"])
            await c.wait_out(b"PROMPT> ")
            await c.ws.close()
        run(go())


class TestTendTerm(TermCase):
    """tend term driven through a pseudo-terminal (Python's pty module)."""

    def spawn(self, a, *args):
        import pty
        import subprocess
        m, sl = pty.openpty()
        env = dict(os.environ, TEND_SOCKET=a.sock)
        p = subprocess.Popen([TEND_BIN, "term"] + list(args),
                             stdin=sl, stdout=sl, stderr=sl, env=env, close_fds=True,
                             start_new_session=True)
        os.close(sl)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        self.addCleanup(os.close, m)
        return p, m

    def read_until(self, m, needle, seen, timeout=5.0):
        import select
        end = time.monotonic() + scaled(timeout)
        while needle not in seen[0]:
            left = end - time.monotonic()
            self.assertGreater(left, 0, "no %r in %r" % (needle, seen[0][-300:]))
            r, _, _ = select.select([m], [], [], left)
            if r:
                try:
                    seen[0] += os.read(m, 65536)
                except OSError:
                    break
        self.assertIn(needle, seen[0])

    def test_attach_detach_reattach(self):
        a = self.agent()
        p, m = self.spawn(a, "--id", "dev", "-e", "PS1=PROMPT> ", "-e", "HOME=/tmp", "--",
                          *SHELL)
        seen = [b""]
        self.read_until(m, b"PROMPT> ", seen)
        os.write(m, b"echo hi$((20+1))\r")
        self.read_until(m, b"hi21", seen)
        os.write(m, b"\x1d")
        self.assertEqual(p.wait(timeout=scaled(5)), 0)
        self.assertEqual(a.get("/v1/terminals/dev").json["status"], "running")
        # Reattach: the replay first, then live; the exit code is tend's.
        p2, m2 = self.spawn(a, "--id", "dev")
        seen2 = [b""]
        self.read_until(m2, b"hi21", seen2)
        os.write(m2, b"exit 5\r")
        self.assertEqual(p2.wait(timeout=scaled(5)), 5)
        self.assertEqual(a.get("/v1/terminals/dev").json["status"], "exited")


if __name__ == "__main__":
    unittest.main()
