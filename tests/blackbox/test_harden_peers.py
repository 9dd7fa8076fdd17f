"""Peers that would lock others out (issue 25 items 8 and 9) and the
WebSocket token in the query (issue 30 item 5): unauthenticated clients
cannot fill the shim, the shim cannot take the agent's last slots, and a
WebSocket upgrade may carry its token as ?authorization=Bearer%20<token>."""

import base64
import http.client
import os
import select
import socket
import tempfile
import threading
import time
import unittest

from harness import AgentTestCase, UnixHTTPConnection, scaled  # noqa: E402
from test_shim import TOKEN, FakeBackendCase, ShimTestCase, free_port, wait_for  # noqa: E402

# lib/base/tunables.h
SHIM_FIRST_TIMEOUT = 3.0
SHIM_PEER_PENDING = 64


def closed_by_peer(s, timeout):
    """Whether the other side closed s within timeout seconds."""
    r, _, _ = select.select([s], [], [], timeout)
    if not r:
        return False
    try:
        return s.recv(1) == b""
    except OSError:
        return True


class TestShimUnauthenticated(ShimTestCase):
    def open_silent(self, n):
        out = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=5)
            self.addCleanup(s.close)
            out.append(s)
        return out

    def test_a_silent_connection_has_a_few_seconds(self):
        s = self.open_silent(1)[0]
        t0 = time.monotonic()
        self.assertTrue(closed_by_peer(s, scaled(9)), "still open after 9 s")
        self.assertLess(time.monotonic() - t0, SHIM_FIRST_TIMEOUT + scaled(2))

    def test_a_dripped_first_head_has_a_few_seconds(self):
        s = self.open_silent(1)[0]
        t0 = time.monotonic()
        head = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n"
        closed = False
        for b in head:
            try:
                s.send(bytes([b]))
            except OSError:
                closed = True
                break
            if closed_by_peer(s, 0.5):
                closed = True
                break
            if time.monotonic() - t0 > 9:
                break
        self.assertTrue(closed, "a head dripped for 9 s was still read")
        self.assertLess(time.monotonic() - t0, SHIM_FIRST_TIMEOUT + scaled(2))

    def test_one_address_keeps_at_most_its_share_unauthenticated(self):
        extra = 8
        socks = self.open_silent(SHIM_PEER_PENDING + extra)
        # The oldest ones gave way, at once (not at the first head's deadline).
        time.sleep(0.5)
        closed = [i for i, s in enumerate(socks) if closed_by_peer(s, 0)]
        self.assertEqual(closed, list(range(extra)))
        # An authorised request from the same address still gets in.
        st, _, body = self.req("GET", "/v1/health")
        self.assertEqual(st, 200, body)

    def test_flood_of_strangers_does_not_refuse_authorised_requests(self):
        maxconns = 32
        shim = self.start_shim(self.a.sock, extra=["--socket-group", "0",
                                                   "--max-conns", str(maxconns)])
        stop = threading.Event()
        held = []
        counts = {"opened": 0}

        def flood():
            # Silent ones and byte-a-second drippers, reopened when closed.
            while not stop.is_set():
                held[:] = [s for s in held if not _closed_now(s)]
                while len(held) < 3 * maxconns and not stop.is_set():
                    try:
                        s = socket.create_connection(("127.0.0.1", shim.port), timeout=1)
                    except OSError:
                        break
                    counts["opened"] += 1
                    held.append(s)
                for i, s in enumerate(held):
                    if i % 2 == 0:
                        try:
                            s.send(b"G")
                        except OSError:
                            pass
                time.sleep(0.2)

        t = threading.Thread(target=flood)
        t.start()
        try:
            time.sleep(1.0)
            ok = refused = 0
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    st, _, _ = self.req("GET", "/v1/health", port=shim.port, timeout=3)
                    ok += st == 200
                    refused += st != 200
                except (OSError, http.client.HTTPException):
                    refused += 1
                time.sleep(0.1)
        finally:
            stop.set()
            t.join()
            for s in held:
                s.close()
        self.assertGreater(counts["opened"], maxconns)
        self.assertEqual(refused, 0, "%d of %d authorised requests refused" % (refused, ok + refused))
        self.assertGreater(ok, 10)


def _closed_now(s):
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        return False
    try:
        if s.recv(1) == b"":
            s.close()
            return True
    except OSError:
        s.close()
        return True
    return False


class TestAgentSlotsForDirectClients(AgentTestCase):
    def test_the_shim_cannot_take_every_agent_slot(self):
        tmp = tempfile.mkdtemp(prefix="tend-peers-tok-")
        tok = os.path.join(tmp, "token")
        with open(tok, "w") as f:
            f.write(TOKEN + "\n")
        port = free_port()
        maxconns = 16
        a = self.agent(extra=["--shim-listen", "127.0.0.1:%d" % port, "--shim-token-file", tok,
                              "--max-conns", str(maxconns)])
        os.chmod(a.tmp, 0o711)

        def served():
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + TOKEN})
                r = c.getresponse()
                r.read()
                c.close()
                return r.status == 200
            except OSError:
                return False
        wait_for(served, timeout=scaled(10), what="served through the supervised shim")
        # Authorised idle keep-alive clients, more than the agent has slots.
        conns, through = [], 0
        for _ in range(maxconns + 4):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            self.addCleanup(c.close)
            c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + TOKEN})
            r = c.getresponse()
            r.read()
            through += r.status == 200
            conns.append(c)
        # Direct clients on the unix socket still get in, several at once.
        direct = []
        for _ in range(2):
            d = UnixHTTPConnection(a.sock, timeout=scaled(5))
            self.addCleanup(d.close)
            d.request("GET", "/v1/health")
            r = d.getresponse()
            body = r.read()
            self.assertEqual(r.status, 200, body)
            direct.append(d)
        # The shim had all but the reserve (1/8, one at least).
        self.assertEqual(through, maxconns - maxconns // 8)


class TestWebSocketQueryToken(FakeBackendCase):
    """The backend records each request line and its Authorization."""

    def backend(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                conn.close()
                return
            data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        self.seen.append(head)
        if "upgrade: websocket" in head.lower():
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         b"Connection: Upgrade\r\n\r\n")
            while conn.recv(4096):
                pass
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        conn.close()

    def upgrade(self, target, headers=b""):
        s = socket.create_connection(("127.0.0.1", self.shim.port), timeout=scaled(5))
        self.addCleanup(s.close)
        key = base64.b64encode(os.urandom(16))
        s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                  b"Sec-WebSocket-Key: " + key + b"\r\n" + headers + b"\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.split(b"\r\n", 1)[0]

    def test_query_token_on_an_upgrade_is_accepted_and_stripped(self):
        q = b"/v1/sandbox/s/pty?cols=80&authorization=Bearer%20" + TOKEN.encode() + b"&rows=24"
        self.assertEqual(self.upgrade(q), b"HTTP/1.1 101 Switching Protocols")
        line = self.seen[-1].split("\r\n", 1)[0]
        self.assertEqual(line, "GET /v1/sandbox/s/pty?cols=80&rows=24 HTTP/1.1")
        self.assertNotIn(TOKEN, self.seen[-1])

    def test_header_and_query_both_stripped(self):
        q = b"/ws?authorization=Bearer+" + TOKEN.encode()
        st = self.upgrade(q, b"Authorization: Bearer " + TOKEN.encode() + b"\r\n")
        self.assertEqual(st, b"HTTP/1.1 101 Switching Protocols")
        self.assertEqual(self.seen[-1].split("\r\n", 1)[0], "GET /ws HTTP/1.1")
        self.assertNotIn(TOKEN, self.seen[-1])

    def test_wrong_query_token_is_refused_even_with_a_good_header(self):
        st = self.upgrade(b"/ws?authorization=Bearer%20nope",
                          b"Authorization: Bearer " + TOKEN.encode() + b"\r\n")
        self.assertTrue(st.startswith(b"HTTP/1.1 401"), st)
        self.assertEqual(self.seen, [])

    def test_query_token_is_not_accepted_for_other_requests(self):
        st, h, body = self.req("GET", "/v1/health?authorization=Bearer%20" + TOKEN, token=None)
        self.assertUnauthorized(st, h, body)
        self.assertEqual(self.seen, [])


if __name__ == "__main__":
    unittest.main()
