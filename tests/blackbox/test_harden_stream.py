"""Black-box tests of what a reader of stored output that does not read
costs the agent (issue 25, item 7): an unread envd Connect stream of a
process printing flat out holds a bounded, small amount of memory (the
files are the buffer, not the agent's heap), and a 16 MiB JSON log poll
is streamed from the store, so it neither builds its reply in memory nor
holds the loop while health checks wait.

Each test starts its own agent as PID 1 of a PID namespace (harness.Agent).
TEND_SLOW=1 (sanitizer builds) loosens the latency bound.
"""
import base64
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SLOW, AgentTestCase, HealthProbe, poll, scaled  # noqa: E402
from test_envd import Stream  # noqa: E402

MiB = 1 << 20


def status_kib(pid, field):
    """A field of /proc/pid/status in KiB (VmRSS, VmHWM)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


def reset_hwm(pid):
    """VmHWM back to VmRSS (clear_refs 5); False where that is refused."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class TestUnreadEnvdStreams(AgentTestCase):
    N = 100
    OUT = 32 * MiB

    def test_unread_connect_streams_hold_little(self):
        a = self.agent()
        go = os.path.join(a.tmp, "go")
        # Waits for the streams, then prints flat out, then lives on.
        script = ("while [ ! -e %s ]; do sleep 0.02; done; head -c %d /dev/zero; exec sleep 600"
                  % (go, self.OUT))
        a.launch_ok(["/bin/sh", "-c", script], id="flat")
        time.sleep(0.3)
        rss0 = a.rss_kib()
        streams = []
        try:
            for _ in range(self.N):
                st = Stream(a, "Connect", {"process": {"tag": "flat"}})
                self.assertEqual(st.head.status, 200, st.head)
                streams.append(st)
            rss1 = a.rss_kib()
            open(go, "w").close()
            ok = poll(lambda: a.status("flat").json.get("stdoutBytes") == self.OUT,
                      timeout=scaled(60))
            self.assertTrue(ok, a.status("flat"))
            # Every stream has been pumped until its socket and queue are full.
            time.sleep(scaled(1.5))
            rss2 = a.rss_kib()
            per = (rss2 - rss0) / self.N
            sys.stderr.write("\n  unread Connect streams: VmRSS %d -> %d (opened) -> %d KiB "
                             "(%.1f KiB a stream)\n" % (rss0, rss1, rss2, per))
            # A stream holds its connection and, of the output its socket
            # does not take, a queue below LOGS_OUT_HIGH plus one piece
            # (LOGS_PIECE as base64): about 32 KiB.  Under a sanitizer the
            # figure is its quarantine's (freed pieces held, up to 256 MiB
            # in all), not the agent's: the bound is the plain build's.
            if not SLOW:
                self.assertLess(per, 48, "VmRSS %d -> %d KiB for %d unread streams"
                                % (rss0, rss2, self.N))
            # They are streams still: one is read to its live data.
            st = streams[0]
            f = st.frame()
            self.assertIsNotNone(f)
            self.assertEqual(f[0], 0)
            seen = 0
            while seen < MiB:
                fl, m = st.frame()
                d = m["event"].get("data")
                if d is not None:
                    seen += len(base64.b64decode(d["stdout"]))
            self.assertGreaterEqual(seen, MiB)
            self.assertTrue(a.health())
        finally:
            for st in streams:
                st.close()


# A JSON poll read in a process of its own, as bare bytes to a file (the
# reply is parsed afterwards), so that the health probe's times are the
# agent's, not those of a client decoding 22 MB of chunks on a shared CPU.
# argv: the socket, the target, the file.
POLLER = r"""
import socket, sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(120)
s.connect(sys.argv[1])
s.sendall(("GET %s HTTP/1.1\r\nHost: tend\r\nAccept: application/json\r\n"
           "Connection: close\r\n\r\n" % sys.argv[2]).encode())
with open(sys.argv[3], "wb") as f:
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        f.write(b)
"""


def parse_reply(data):
    """(status, headers, body) of one HTTP/1.1 reply read to its close."""
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hd = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    if "chunked" not in hd.get("transfer-encoding", ""):
        return status, hd, rest[:int(hd["content-length"])]
    body, off = [], 0
    while True:
        eol = rest.index(b"\r\n", off)
        n = int(rest[off:eol].split(b";")[0], 16)
        if n == 0:
            return status, hd, b"".join(body)
        body.append(rest[eol + 2:eol + 2 + n])
        off = eol + 2 + n + 2


class TestJSONPollStreamed(AgentTestCase):
    SIZE = 16 * MiB
    POLLS = 2

    def test_big_poll_is_streamed(self):
        a = self.agent()
        a.launch_ok(["head", "-c", str(self.SIZE), "/dev/urandom"], id="big")
        a.wait_ended("big", timeout_ms=60000)
        want = a.get("/v1/processes/big/stdout", timeout=60).body
        self.assertEqual(len(want), self.SIZE)
        pid = a.host_pid()
        time.sleep(0.3)
        hwm_ok = reset_hwm(pid)
        hwm0 = status_kib(pid, "VmHWM")
        target = "/v1/processes/big/logs?limitBytes=%d" % self.SIZE
        files = [os.path.join(a.tmp, "poll%d.json" % i) for i in range(self.POLLS)]
        with HealthProbe(a, interval=0.005, late=True) as h:
            time.sleep(0.2)
            t0 = time.monotonic()
            ps = [subprocess.Popen([sys.executable, "-c", POLLER, a.sock, target, f])
                  for f in files]
            for p in ps:
                self.assertEqual(p.wait(timeout=scaled(120)), 0)
            took = time.monotonic() - t0
            time.sleep(0.2)
        hwm1 = status_kib(pid, "VmHWM")
        p99, worst = h.p99(), h.worst
        sys.stderr.write("\n  %d parallel JSON polls of %d MiB in %.2f s: VmHWM %d -> %d KiB; "
                         "health p99 %.1f ms, max %.1f ms, %d samples\n"
                         % (self.POLLS, self.SIZE // MiB, took, hwm0, hwm1, p99 * 1000,
                            worst * 1000, len(h.lat)))
        for f in files:
            with open(f, "rb") as fp:
                status, hd, body = parse_reply(fp.read())
            self.assertEqual(status, 200, hd)
            self.assertEqual(hd.get("content-type"), "application/json")
            j = json.loads(body)
            # The reply's JSON is what it always was.
            self.assertEqual(list(j), ["stdout", "stderr", "cursor", "ended"])
            self.assertEqual(base64.b64decode(j["stdout"]), want)
            self.assertEqual(j["stderr"], "")
            self.assertIs(j["ended"], True)
        self.assertEqual(h.errors, [])
        if hwm_ok:
            # Not built in memory: a poll holds a piece or two, not its reply
            # (22 MB of base64 each, built then copied: ~85 MB for two).
            self.assertLess(hwm1 - hwm0, (48 if SLOW else 8) * 1024,
                            "VmHWM %d -> %d KiB" % (hwm0, hwm1))
        self.assertLessEqual(p99, 0.25 if SLOW else 0.05, "health p99 %.1f ms" % (p99 * 1000))


if __name__ == "__main__":
    import unittest
    unittest.main()
