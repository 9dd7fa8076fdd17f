"""Live upgrade (POST /v1/upgrade, `tend upgrade`; proto/README.md "Live
upgrade"): the agent execs another build of itself as the same PID 1 and
takes up its processes, terminals, event log, shim and socket.

The second build is this one with another version string, patched into a
copy of TEND_BIN (the same length, so nothing else moves): what differs
between two builds for the handover is the binary and its version."""
import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time
import unittest

from harness import TEND_BIN, AgentTestCase, poll, scaled
from test_logs import LiveStream, collect, cursor_seq
from test_shim import TOKEN, free_port
from test_terms import TermCase
from test_terms_ws import run, websockets, ws_open


def binary_version(path):
    """What `path handover-check` says its version is."""
    return json.loads(subprocess.run([path, "handover-check"], capture_output=True,
                                     check=True, timeout=10).stdout)["version"]


def build_other(dest, src=TEND_BIN):
    """A copy of src whose version string reads otherwise (the same
    length): its version."""
    current = binary_version(src)
    version = current[:-1] + ("u" if current[-1] != "u" else "v")
    with open(src, "rb") as f:
        data = f.read()
    old = ("\0%s\0" % current).encode()
    assert data.count(old) >= 1, "no version string %r in %s" % (current, src)
    with open(dest, "wb") as f:
        f.write(data.replace(old, ("\0%s\0" % version).encode()))
    os.chmod(dest, 0o755)
    assert binary_version(dest) == version, dest
    return version


CURRENT = binary_version(TEND_BIN)


class UpgradeCase(AgentTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tend-upgrade-")
        os.chmod(cls.dir, 0o755)
        cls.next_bin = os.path.join(cls.dir, "tend-next")
        cls.next_version = build_other(cls.next_bin)
        # The same build under another name: an upgrade back and forth.
        cls.same_bin = os.path.join(cls.dir, "tend-same")
        shutil.copy(TEND_BIN, cls.same_bin)
        os.chmod(cls.same_bin, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def script(self, name, text, mode=0o755):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        self.addCleanup(lambda: os.path.exists(path) and os.unlink(path))
        return path

    def upgrade(self, a, path, upgrades, version):
        """POST /v1/upgrade, then wait until the new agent serves."""
        r = a.post("/v1/upgrade", {"path": path})
        self.assertEqual(r.status, 202, r)
        self.assertEqual(r.json["version"], version, r.json)
        self.assertEqual(r.json["path"], path)

        def served():
            try:
                h = a.health()
            except (OSError, AssertionError):
                return None
            return h if h.get("upgrades") == upgrades else None
        h = poll(served, timeout=10, interval=0.005)
        self.assertTrue(h, "the new agent does not serve:\n" + a.log_text()[-3000:])
        self.assertEqual(h["version"], version)
        self.assertEqual(h["pid"], 1)
        self.assertEqual(h["handover"]["state"], "resumed", h)
        return h

    def events(self, a, types):
        r = a.get("/v1/events?types=%s" % types, headers={"Accept": "application/json"})
        self.assertEqual(r.status, 200, r)
        return r.json


class TestUpgrade(UpgradeCase):
    def test_processes_output_stdin_timeout_events(self):
        a = self.agent()
        h0 = a.health()
        self.assertEqual(h0["upgrades"], 0)
        self.assertEqual(h0["handover"], {"state": "none"})
        n = 600
        a.launch_ok(["sh", "-c", "i=1; while [ $i -le %d ]; do echo line$i; i=$((i+1)); "
                     "sleep 0.004; done" % n], id="w")
        a.launch_ok(["sleep", "100"], id="t", timeout=2000)
        a.launch_ok(["cat"], id="c", stdin="pipe")
        # Bytes still queued in the agent at the exec go with the manifest.
        a.launch_ok(["sh", "-c", "sleep 1; exec cat"], id="q", stdin="pipe")
        a.launch_ok(["true"], id="done")
        a.wait_ended("done")
        r = a.post("/v1/processes/c/stdin", b"before\n")
        self.assertEqual(r.status, 204, r)
        big = bytes(range(256)) * 1024      # 256 KiB: more than a pipe holds
        r = a.post("/v1/processes/q/stdin?close=1", big)
        self.assertEqual(r.status, 204, r)
        follower = LiveStream(a, "/v1/processes/w/logs?follow=1", timeout=30)
        self.addCleanup(follower.close)
        self.assertEqual(follower.status, 200)
        got = []
        while len(collect(got)["stdout"].splitlines()) < 50:
            ev = follower.next_event()
            self.assertIsNotNone(ev)
            got.append(ev)
        before = {p["id"]: p for p in a.get("/v1/processes").json}

        h = self.upgrade(a, self.next_bin, 1, self.next_version)
        self.assertEqual(h["bootId"], h0["bootId"])
        self.assertEqual(h["handover"]["from"], CURRENT)
        self.assertGreater(h["uptimeMs"], h0["uptimeMs"])     # the process's
        # The follower's connection was closed; it resumes by its cursor.
        while True:
            ev = follower.next_event()
            if ev is None:
                break
            got.append(ev)
        last = [e for e in got if "id" in e][-1]["id"]
        second = LiveStream(a, "/v1/processes/w/logs?follow=1", headers={"Last-Event-ID": last},
                            timeout=30)
        self.addCleanup(second.close)
        self.assertEqual(second.status, 200)
        rest = second.events_until_close()
        self.assertGreater(cursor_seq(rest[0]["id"]), cursor_seq(last))
        out = collect(got)["stdout"] + collect(rest)["stdout"]
        self.assertEqual(out, b"".join(b"line%d\n" % i for i in range(1, n + 1)))

        # Every record, with its ID, pid and start.
        after = {p["id"]: p for p in a.get("/v1/processes").json}
        self.assertEqual(set(after), set(before))
        for k, p in before.items():
            self.assertEqual(after[k]["pid"], p["pid"], k)
            self.assertEqual(after[k]["startedAt"], p["startedAt"], k)
        self.assertEqual(after["done"]["state"], "exited")

        # Launches go on, in the directories the first agent made ahead.
        for i in range(5):
            a.launch_ok(["sh", "-c", "echo new%d" % i], id="new%d" % i)
        for i in range(5):
            a.wait_ended("new%d" % i)
            self.assertEqual(a.get("/v1/processes/new%d/stdout" % i).body, b"new%d\n" % i)
        for p in a.get("/v1/processes").json:
            self.assertNotIn(p["id"], ("new", ".spare", ".spares"))
        before.update({"new%d" % i: None for i in range(5)})

        # Stdin: the pipe is kept, and so are the bytes queued at the exec.
        r = a.post("/v1/processes/c/stdin?close=1", b"after\n")
        self.assertEqual(r.status, 204, r)
        a.wait_ended("c")
        self.assertEqual(a.get("/v1/processes/c/stdout").body, b"before\nafter\n")
        a.wait_ended("q")
        self.assertEqual(a.get("/v1/processes/q/stdout").body, big)

        # The timeout fires at its deadline, not 2 s after the exec.
        st = a.wait_ended("t")
        self.assertTrue(st["exit"]["timedOut"], st)
        ms = lambda s: time.mktime(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) * 1000 + int(s[20:23])
        late = ms(st["endedAt"]) - ms(st["startedAt"]) - 2000
        # The timer counts from the loop's wakeup that launched it, a
        # moment before startedAt is taken: a little early is its own.
        self.assertGreater(late, -50, st)
        self.assertLess(late, 100, st)

        a.wait_ended("w")
        self.assertEqual(a.zombies(), [])
        ev = self.events(a, "agent.")
        types = [e["type"] for e in ev["events"]]
        self.assertEqual(types[:2], ["agent.started", "agent.upgraded"], types)
        up = ev["events"][1]
        self.assertEqual(up["version"], self.next_version)
        self.assertEqual(up["previousVersion"], CURRENT)
        self.assertEqual(up["upgrades"], 1)
        self.assertEqual(up["watches"], "dropped")
        # The process events of the first agent are still there, once.
        ex = [e["id"] for e in self.events(a, "process.exited")["events"]]
        self.assertEqual(sorted(ex), sorted(set(ex)))
        self.assertIn("done", ex)

        # And back (a downgrade is the same handover).
        h = self.upgrade(a, TEND_BIN, 2, CURRENT)
        self.assertEqual(h["bootId"], h0["bootId"])
        self.assertEqual(len(a.get("/v1/processes").json), len(before))

    def test_event_stream_resumes(self):
        """A follower of /v1/events reconnects with Last-Event-ID: every
        event once, in order, agent.upgraded among them."""
        a = self.agent()
        f = LiveStream(a, "/v1/events?follow=1", timeout=30)
        self.addCleanup(f.close)
        self.assertEqual(f.status, 200)
        for i in range(5):
            a.launch_ok(["true"], id="a%d" % i)
        got = []
        while sum(e["json"]["type"] == "process.exited" for e in got) < 5:
            got.append(f.next_event())
        a.launch_ok(["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 0.05; sh -c true; done"],
                    id="during")
        self.upgrade(a, self.next_bin, 1, self.next_version)
        while True:
            ev = f.next_event()
            if ev is None:
                break
            got.append(ev)
        for i in range(5):
            a.launch_ok(["true"], id="b%d" % i)
        for i in range(5):
            a.wait_ended("b%d" % i)
        a.wait_ended("during")
        g = LiveStream(a, "/v1/events?follow=1", headers={"Last-Event-ID": got[-1]["id"]},
                       timeout=30)
        self.addCleanup(g.close)
        def seen(pid_id):
            return any(e["json"]["type"] == "process.exited" and e["json"]["id"] == pid_id
                       for e in got)
        while not (seen("b4") and seen("during")):
            ev = g.next_event()
            self.assertIsNotNone(ev)
            got.append(ev)
        seqs = [cursor_seq(e["id"]) for e in got]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))), "a gap or a duplicate")
        types = [e["json"]["type"] for e in got]
        self.assertEqual(types.count("agent.upgraded"), 1, types)
        exited = [e["json"]["id"] for e in got if e["json"]["type"] == "process.exited"]
        self.assertEqual(sorted(exited), sorted(["a%d" % i for i in range(5)] +
                                                ["b%d" % i for i in range(5)] + ["during"]))

    def test_sigterm_at_the_handover_is_not_lost(self):
        """SIGTERM right after the 202: whichever agent gets it (the old
        one before the exec, or the new one from the pending set the exec
        kept), the agent shuts down cleanly."""
        for k in range(3):
            a = self.agent()
            a.launch_ok(["sleep", "100"], id="s")
            host = a.host_pid()
            r = a.post("/v1/upgrade", {"path": self.next_bin})
            self.assertEqual(r.status, 202, r)
            time.sleep(0.002 * k)
            os.kill(host, signal.SIGTERM)
            self.assertEqual(a.wait_exit(timeout=15), 0, a.log_text()[-2000:])
            self.assertIn("event=shutdown signal=15", a.log_text())

    def test_frozen_stays_frozen_its_timeout_paused(self):
        a = self.agent()
        a.launch_ok(["sleep", "100"], id="f", timeout=3000)
        r = a.post("/v1/processes/f/freeze")
        if r.status == 422:
            self.skipTest("no cgroups here: %r" % r.json)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json["frozen"], r.json)
        time.sleep(0.3)
        self.upgrade(a, self.next_bin, 1, self.next_version)
        st = a.status("f").json
        self.assertEqual((st["state"], st["frozen"]), ("running", True), st)
        time.sleep(scaled(3.5))     # past the deadline: frozen, it waits
        self.assertEqual(a.status("f").json["state"], "running")
        t0 = time.monotonic()
        r = a.post("/v1/processes/f/thaw")
        self.assertEqual(r.status, 200, r)
        st = a.wait_ended("f")
        took = time.monotonic() - t0
        self.assertTrue(st["exit"]["timedOut"], st)
        self.assertGreater(took, 2.0, st)     # what was left of the 3 s
        self.assertLess(took, scaled(4.0), st)

    def test_cli_upgrade(self):
        a = self.agent()
        a.launch_ok(["sleep", "100"], id="s")
        env = dict(os.environ, TEND_SOCKET=a.sock)
        p = subprocess.run([TEND_BIN, "upgrade", "--json", self.next_bin], env=env,
                           capture_output=True, timeout=scaled(20))
        self.assertEqual(p.returncode, 0, p)
        j = json.loads(p.stdout)
        self.assertEqual(j["version"], self.next_version, j)
        self.assertEqual(j["upgrades"], 1, j)
        self.assertEqual(a.health()["version"], self.next_version)
        p = subprocess.run([TEND_BIN, "health"], env=env, capture_output=True, timeout=scaled(10))
        self.assertIn(b"upgrades   1 (resumed from %s)" % CURRENT.encode(), p.stdout)
        p = subprocess.run([TEND_BIN, "upgrade", self.next_bin], env=env, capture_output=True,
                           timeout=scaled(20))
        self.assertEqual(p.returncode, 0, p)
        self.assertIn(b"upgraded to %s" % self.next_version.encode(), p.stdout)
        # A refusal: its own exit code, the reason on stderr.
        bad = self.script("notexec", "#!/bin/sh\n", mode=0o644)
        p = subprocess.run([TEND_BIN, "upgrade", bad], env=env, capture_output=True,
                           timeout=scaled(20))
        self.assertEqual(p.returncode, 1, p)
        self.assertIn(b"not an executable", p.stderr)
        self.assertEqual(a.status("s").json["state"], "running")

    def test_refusals_change_nothing(self):
        a = self.agent()
        a.launch_ok(["sleep", "100"], id="s")
        h0 = a.health()
        cases = {
            "not executable": self.script("plain", "#!/bin/sh\necho hi\n", mode=0o644),
            "a directory": self.dir,
            "missing": os.path.join(self.dir, "nope"),
            "fails": self.script("fails", "#!/bin/sh\nexit 3\n"),
            "no answer": self.script("silent", "#!/bin/sh\necho not json\n"),
            "another major": self.script("major", "#!/bin/sh\necho '{\"version\":\"9\","
                                         "\"apiVersion\":1,\"handover\":\"2.0\"}'\n"),
            "no exec format": self.script("garbage", "\x7fELF garbage\n"),
        }
        for what, path in cases.items():
            r = a.post("/v1/upgrade", {"path": path})
            self.assertError(r, 409, "upgrade_refused")
            h = a.health()
            self.assertEqual((h["version"], h["upgrades"], h["bootId"], h["pid"]),
                             (h0["version"], 0, h0["bootId"], 1), what)
        for body in ({"path": "relative/tend"}, {}, {"path": 3}):
            self.assertError(a.post("/v1/upgrade", body), 400, "invalid_request")
        self.assertEqual(a.status("s").json["state"], "running")
        self.assertEqual(a.zombies(), [])

    def test_handshake_timeout_is_bounded(self):
        a = self.agent()
        slow = self.script("slow", "#!/bin/sh\nexec sleep 100\n")
        t0 = time.monotonic()
        # Another request is served meanwhile: the check is off the loop.
        res = {}
        th = threading.Thread(target=lambda: res.update(r=a.post("/v1/upgrade", {"path": slow},
                                                                 timeout=30)))
        th.start()
        time.sleep(0.2)
        self.assertEqual(a.health()["upgrades"], 0)
        self.assertError(a.post("/v1/upgrade", {"path": self.next_bin}), 409, "upgrade_refused")
        th.join(scaled(30))
        self.assertError(res["r"], 409, "upgrade_refused")
        self.assertIn("timed out", res["r"].json["error"])
        self.assertLess(time.monotonic() - t0, scaled(8))
        self.assertTrue(poll(lambda: a.zombies() == [], timeout=2))

    def test_failed_exec_goes_on(self):
        """A binary that passes the handshake and is gone at the exec."""
        a = self.agent()
        a.launch_ok(["sh", "-c", "while :; do echo x; sleep 0.05; done"], id="w")
        vanish = self.script("vanish", "#!/bin/sh\nrm -f \"$0\"\n"
                             "echo '{\"version\":\"v\",\"apiVersion\":1,\"handover\":\"1.0\"}'\n")
        r = a.post("/v1/upgrade", {"path": vanish})
        self.assertEqual(r.status, 202, r)
        ev = poll(lambda: self.events(a, "agent.upgrade_failed")["events"], timeout=5)
        self.assertTrue(ev, a.log_text()[-2000:])
        h = a.health()
        self.assertEqual((h["version"], h["upgrades"]), (CURRENT, 0))
        b0 = a.status("w").json["stdoutBytes"]
        self.assertTrue(poll(lambda: a.status("w").json["stdoutBytes"] > b0, timeout=3))
        # And a real upgrade after it.
        self.upgrade(a, self.next_bin, 1, self.next_version)
        self.assertEqual(a.status("w").json["state"], "running")

    def test_shim_kept(self):
        tok = os.path.join(self.dir, "token-%d" % os.getpid())
        with open(tok, "w") as f:
            f.write(TOKEN + "\n")
        self.addCleanup(os.unlink, tok)
        port = free_port()
        a = self.agent(extra=["--shim-listen", "127.0.0.1:%d" % port, "--shim-token-file", tok])
        os.chmod(a.tmp, 0o711)
        sh = poll(lambda: a.health().get("shim", {}).get("state") == "running" and a.health()["shim"],
                  timeout=5)
        self.assertTrue(sh)
        self.upgrade(a, self.next_bin, 1, self.next_version)
        h = a.health()
        self.assertEqual(h["shim"]["pid"], sh["pid"])
        self.assertEqual(h["shim"]["restarts"], 0)

        def served():
            import http.client
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            try:
                c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + TOKEN})
                r = c.getresponse()
                return r.status == 200 and json.loads(r.read())["version"] == self.next_version
            except OSError:
                return False
            finally:
                c.close()
        self.assertTrue(poll(served, timeout=5))

    def test_connect_during_gap_waits(self):
        """The socket is passed: a connect during the handover waits in its
        backlog and is served by the new agent, never refused."""
        a = self.agent()
        stop = threading.Event()
        errors, served = [], []

        def hammer():
            while not stop.is_set():
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(scaled(5))
                try:
                    s.connect(a.sock)
                    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    data = b""
                    while True:
                        d = s.recv(65536)
                        if not d:
                            break
                        data += d
                    if data.startswith(b"HTTP/1.1 200"):
                        served.append(json.loads(data.split(b"\r\n\r\n", 1)[1])["version"])
                except ConnectionRefusedError as e:
                    errors.append(e)
                except OSError:
                    pass    # a connection the old agent closed: a client retries
                finally:
                    s.close()
        th = threading.Thread(target=hammer)
        th.start()
        time.sleep(0.1)
        self.upgrade(a, self.next_bin, 1, self.next_version)
        time.sleep(0.1)
        stop.set()
        th.join()
        self.assertEqual(errors, [])
        self.assertIn(self.next_version, served)


@unittest.skipIf(websockets is None, "python3-websockets missing")
class TestUpgradeTerminal(UpgradeCase, TermCase):
    def test_terminal_continues(self):
        """A session attached over WebSocket: its connection is closed at
        the handover; reattached from its cursor, it goes on with no gap
        and no duplicate."""
        a = self.agent()
        t = self.shell(a)

        async def go():
            c = await ws_open(a, "/v1/terminals/%s/connect" % t["id"])
            await c.until(lambda c: c.frames)
            await c.wait_out(b"PROMPT> ")
            await c.send(b"echo one$((0+1))\n")
            await c.wait_out(b"one1\r\n")
            at_upgrade = len(c.out)
            # Output written during the gap waits in the pty.
            await c.send(b"sleep 0.3; echo two$((1+1))\n")
            await c.until(lambda c: len(c.out) > at_upgrade)
            self.upgrade(a, self.next_bin, 1, self.next_version)
            await c.until(lambda c: c.closed, timeout=5)
            cur, at = c.cursors[-1]
            d = await ws_open(a, "/v1/terminals/%s/connect?cursor=%s" % (t["id"], cur))
            await d.until(lambda d: d.frames)
            self.assertEqual(d.frames[0]["type"], "ready", d.frames)
            await d.wait_out(b"two2\r\n")
            await d.send(b"echo three$((1+2))\n")
            await d.wait_out(b"three3\r\n")
            await d.wait_out(b"PROMPT> ", after=d.out.index(b"three3"))
            stored = self.output(a, t)
            self.assertEqual(c.out[:at] + d.out, stored)
            await d.send(b"exit\n")
            await d.until(lambda d: d.exit is not None, timeout=5)
            self.assertEqual(d.exit["exit"]["code"], 0, d.exit)
        run(go())
        st = a.get("/v1/terminals/%s" % t["id"]).json
        self.assertEqual(st["status"], "exited", st)
        self.assertEqual(a.zombies(), [])


class TestHandoverFailed(UpgradeCase):
    def test_unreadable_manifest(self):
        """An agent handed a manifest it cannot read starts a boot of its
        own and says so; it still reaps what it is given."""
        a = self.agent(env={"TEND_HANDOVER_FD": "77"})
        h = a.health()
        self.assertEqual(h["handover"]["state"], "failed", h)
        self.assertIn("reason", h["handover"])
        self.assertEqual(h["upgrades"], 0)
        self.assertIn("handover_failed", a.log_text())
        a.launch_ok(["true"], id="x")
        a.wait_ended("x")
        # Not passed on: no child sees the variable.
        a.launch_ok(["sh", "-c", "echo ${TEND_HANDOVER_FD:-none}"], id="env")
        a.wait_ended("env")
        self.assertEqual(a.get("/v1/processes/env/stdout").body, b"none\n")


class TestUpgradeLoad(UpgradeCase):
    def test_twenty_upgrades_under_load(self):
        """50 processes, one writing continuously with a follower of its
        output attached; 20 upgrades in a row.
        (This writer is about 30 MB; the issue's 200 MiB across three
        upgrades is TestUpgradeBig's.)"""
        a = self.agent()
        for i in range(49):
            a.launch_ok(["sleep", "1000"], id="s%d" % i)
        chunks, per = 400, 10000
        a.launch_ok(["sh", "-c", "i=0; while [ $i -lt %d ]; do seq $((i*%d+1)) $((i*%d+%d)); "
                     "i=$((i+1)); sleep 0.005; done" % (chunks, per, per, per)], id="w")
        # A follower of its output, reconnecting with Last-Event-ID each
        # time an upgrade closes its stream, until the terminal event.
        followed = {"events": [], "reconnects": 0, "error": None}

        def follow():
            last = None
            try:
                while True:
                    h = {"Last-Event-ID": last} if last else {}
                    f = LiveStream(a, "/v1/processes/w/logs?follow=1", headers=h, timeout=60)
                    try:
                        while True:
                            ev = f.next_event()
                            if ev is None:
                                break
                            followed["events"].append(ev)
                            if "id" in ev:
                                last = ev["id"]
                            if ev["json"].get("type") == "terminal":
                                return
                    finally:
                        f.close()
                    followed["reconnects"] += 1
                    time.sleep(0.005)
            except Exception as e:      # noqa: BLE001 (reported below)
                followed["error"] = e
        th = threading.Thread(target=follow)
        th.start()
        rss = []
        version = CURRENT
        for k in range(1, 21):
            version = self.next_version if version == CURRENT else CURRENT
            self.upgrade(a, self.next_bin if version != CURRENT else TEND_BIN, k, version)
            rss.append(a.rss_kib())
        st = a.wait_ended("w", timeout_ms=120000)
        self.assertEqual(st["exit"]["code"], 0, st)
        expect = b"".join(b"%d\n" % i for i in range(1, chunks * per + 1))
        self.assertEqual(st["stdoutBytes"], len(expect))
        self.assertEqual(st["droppedBytes"], 0)
        body = a.get("/v1/processes/w/stdout", timeout=60).body
        self.assertEqual(body, expect)
        th.join(scaled(120))
        self.assertFalse(th.is_alive(), "the follower did not reach the end")
        self.assertIsNone(followed["error"])
        self.assertGreaterEqual(followed["reconnects"], 1)
        self.assertTrue(collect(followed["events"])["stdout"] == expect,
                        "the follower's bytes differ (a gap or a duplicate)")
        procs = a.get("/v1/processes").json
        self.assertEqual(len(procs), 50)
        self.assertEqual(sum(p["state"] == "running" for p in procs), 49)
        self.assertEqual(a.zombies(), [])
        # RSS flat: the last upgrades cost no more than the first ones.
        self.assertLess(max(rss[10:]), max(rss[:10]) + 2048, rss)


class TestUpgradeBig(UpgradeCase):
    def test_200_mib_follower_across_upgrades(self):
        """The issue's writer: 200 MiB written continuously while the
        agent is upgraded three times, a follower of the output attached
        that resumes by Last-Event-ID: every byte once, in order."""
        a = self.agent()
        blocks = 200 * 16           # 64 KiB blocks: 200 MiB
        # Paced (about 8 s in all), so that it writes across the upgrades.
        prog = ("import struct, sys, time\n"
                "o = sys.stdout.buffer\n"
                "for i in range(%d):\n"
                "    o.write(struct.pack('>Q', i) * 8192)\n"
                "    o.flush()\n"
                "    time.sleep(0.0025)\n" % blocks)
        a.launch_ok(["python3", "-c", prog], id="big", maxLogBytes=blocks * 65536 * 2)
        got = {"hash": hashlib.sha256(), "n": 0, "seqs": [], "reconnects": 0, "error": None}

        def follow():
            last = None
            try:
                while True:
                    h = {"Last-Event-ID": last} if last else {}
                    f = LiveStream(a, "/v1/processes/big/logs?follow=1", headers=h, timeout=60)
                    try:
                        while True:
                            try:
                                ev = f.next_event()
                            except AssertionError:
                                ev = None   # closed mid-event: it is not had
                            if ev is None:
                                break
                            j = ev["json"]
                            if "id" in ev:
                                last = ev["id"]
                            if j.get("type") == "stdout":
                                got["seqs"].append(cursor_seq(ev["id"]))
                                b = base64.b64decode(j["data"])
                                got["hash"].update(b)
                                got["n"] += len(b)
                            elif j.get("type") == "terminal":
                                return
                    finally:
                        f.close()
                    got["reconnects"] += 1
            except Exception as e:      # noqa: BLE001 (reported below)
                got["error"] = e
        th = threading.Thread(target=follow)
        th.start()
        version = CURRENT
        for k in range(1, 4):
            # At a quarter, a half and three quarters of the writing.
            self.assertTrue(poll(lambda: a.status("big").json["stdoutBytes"] >=
                                 k * blocks * 65536 // 4, timeout=60))
            self.assertEqual(a.status("big").json["state"], "running")
            version = self.next_version if version == CURRENT else CURRENT
            self.upgrade(a, self.next_bin if version != CURRENT else TEND_BIN, k, version)
        st = a.wait_ended("big", timeout_ms=120000)
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertEqual(st["stdoutBytes"], blocks * 65536)
        self.assertEqual(st["droppedBytes"], 0)
        th.join(scaled(120))
        self.assertFalse(th.is_alive(), "the follower did not reach the end")
        self.assertIsNone(got["error"])
        self.assertGreaterEqual(got["reconnects"], 3)
        # No duplicate: every cursor after the one before.
        self.assertTrue(all(x < y for x, y in zip(got["seqs"], got["seqs"][1:])))
        want = hashlib.sha256()
        for i in range(blocks):
            want.update(struct.pack(">Q", i) * 8192)
        self.assertEqual(got["n"], blocks * 65536)
        self.assertEqual(got["hash"].hexdigest(), want.hexdigest(), "a gap or a duplicate")
        self.assertEqual(a.zombies(), [])


if __name__ == "__main__":
    unittest.main()
