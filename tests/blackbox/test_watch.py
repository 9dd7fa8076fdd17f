"""Black-box tests of tend's watch route (issue 15): GET /v1/watch as
Server-Sent Events of a directory's changes with cursors over a bounded
ring — tend's own atomic writes told as envd's in place (create, write),
other renames as renames, recursive watches following new directories, Last-Event-ID
and ?cursor= resume, truncated when a resumer fell behind, the kernel's
queue overflowing, confinement — and `tend watch` in the CLI."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import TEND_BIN, AgentTestCase, UnixHTTPConnection, scaled  # noqa: E402

RING = 4096       # WATCH_RING_EVENTS


class Events:
    """A /v1/watch stream read event by event."""

    def __init__(self, agent, query, headers=None):
        self.c = UnixHTTPConnection(agent.sock, timeout=scaled(10))
        self.c.request("GET", "/v1/watch?" + query, headers=headers or {})
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.body = self.r.read() if self.status != 200 else b""
        self.closed = False

    def next(self):
        ev = {}
        while True:
            line = self.r.readline()
            if not line:
                self.closed = True
                return None
            text = line.decode().rstrip("\r\n")
            if text == "":
                if "data" in ev:
                    ev["json"] = json.loads(ev["data"])
                    return ev
                continue
            if text.startswith(":"):
                continue
            k, _, v = text.partition(":")
            ev[k] = v[1:] if v.startswith(" ") else v

    def until(self, pred):
        out = []
        while True:
            ev = self.next()
            if ev is None:
                raise AssertionError("stream ended: %r" % out)
            out.append(ev)
            if pred(ev["json"]):
                return out

    def close(self):
        self.c.close()


def pairs(evs):
    return [(e["json"]["type"], e["json"]["path"]) for e in evs]


class WatchCase(AgentTestCase):
    def setUp(self):
        super().setUp()
        self.top = tempfile.mkdtemp(prefix="tend-watch-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.top, ignore_errors=True)
        self.root = os.path.join(self.top, "root")
        os.makedirs(os.path.join(self.root, "w"))
        self.w = os.path.join(self.root, "w")
        self.a = self.agent(extra=["--files-root", self.root])

    def watch(self, path=None, query="", headers=None):
        ev = Events(self.a, "path=" + urllib.parse.quote(path or self.w) + query, headers)
        self.addCleanup(ev.close)
        return ev

    def marker(self, name="marker"):
        os.mkdir(os.path.join(self.w, name))
        return lambda j: j["path"] == os.path.join(self.w, name)


class TestEvents(WatchCase):
    def test_event_shape_and_types(self):
        s = self.watch()
        self.assertEqual(s.status, 200)
        self.assertEqual(s.r.getheader("Content-Type"), "text/event-stream")
        f = os.path.join(self.w, "f")
        with open(f, "w") as fh:
            fh.write("x")
        os.chmod(f, 0o600)
        os.rename(f, os.path.join(self.w, "g"))
        os.unlink(os.path.join(self.w, "g"))
        evs = s.until(self.marker())
        self.assertEqual(pairs(evs), [("create", f), ("write", f), ("chmod", f), ("rename", f),
                                      ("create", os.path.join(self.w, "g")),
                                      ("remove", os.path.join(self.w, "g")),
                                      ("create", os.path.join(self.w, "marker"))])
        for e in evs:
            self.assertRegex(e["id"], r"^[0-9a-f]{16}-\d+$")
            self.assertRegex(e["json"]["timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

    def test_tend_writes_as_envd_writes_in_place(self):
        s = self.watch()
        f = os.path.join(self.w, "up")
        self.assertEqual(self.a.request("PUT", "/v1/file" + urllib.parse.quote(f),
                                        body=b"1").status, 201)
        self.assertEqual(self.a.request("PUT", "/v1/file" + urllib.parse.quote(f),
                                        body=b"2" * 100000).status, 204)
        evs = s.until(self.marker())
        # The new file's create and write, the replaced one's write (one
        # with the first when both are read at once); never the temp's.
        ps = pairs(evs)
        ps = [p for i, p in enumerate(ps) if i == 0 or p != ps[i - 1]]
        self.assertEqual(ps, [("create", f), ("write", f),
                              ("create", os.path.join(self.w, "marker"))])

    def test_recursive_follows_new_directories(self):
        s = self.watch(query="&recursive=1")
        os.makedirs(os.path.join(self.w, "a", "b"))
        deep = os.path.join(self.w, "a", "b", "f")
        with open(deep, "w"):
            pass
        evs = s.until(lambda j: j["path"] == deep)
        self.assertIn(("create", os.path.join(self.w, "a", "b")), pairs(evs))
        # Not recursive: the subdirectory's own changes are not seen.
        t = self.watch()
        with open(os.path.join(self.w, "a", "g"), "w"):
            pass
        evs = t.until(self.marker())
        self.assertEqual(pairs(evs), [("create", os.path.join(self.w, "marker"))])

    def test_directory_removed_ends_the_stream(self):
        s = self.watch()
        os.rmdir(self.w)
        self.assertEqual(s.next()["json"]["type"], "remove")
        self.assertIsNone(s.next())
        self.assertTrue(s.closed)


class TestCursors(WatchCase):
    def test_resume_with_last_event_id(self):
        s = self.watch()
        evs = s.until(self.marker("one"))
        last = evs[-1]["id"]
        s.close()
        os.mkdir(os.path.join(self.w, "two"))          # while nobody reads
        for h, q in (({"Last-Event-ID": last}, ""), ({}, "&cursor=" + last)):
            t = self.watch(headers=h, query=q)
            evs = t.until(lambda j: j["path"].endswith("/two"))
            self.assertEqual(pairs(evs), [("create", os.path.join(self.w, "two"))])
            t.close()

    def test_fell_behind_is_truncated(self):
        s = self.watch()
        first = s.until(self.marker("m0"))[-1]["id"]
        s.close()
        for i in range(RING + 50):
            os.mkdir(os.path.join(self.w, "d%d" % i))
        t = self.watch(headers={"Last-Event-ID": first})
        ev = t.next()
        self.assertEqual(ev["json"]["type"], "truncated")
        self.assertEqual(ev["json"]["path"], self.w)
        nxt = t.next()
        self.assertEqual(nxt["json"]["type"], "create")
        self.assertNotEqual(nxt["json"]["path"], os.path.join(self.w, "d0"))

    def test_another_watchs_cursor_is_truncated(self):
        t = self.watch(headers={"Last-Event-ID": "0123456789abcdef-5"})
        self.assertEqual(t.next()["json"]["type"], "truncated")
        evs = t.until(self.marker())
        self.assertEqual(pairs(evs)[-1], ("create", os.path.join(self.w, "marker")))

    def test_overflow_is_truncated(self):
        with open("/proc/sys/fs/inotify/max_queued_events") as f:
            n = int(f.read()) + 100
        if n > 70000:
            self.skipTest("max_queued_events too large to overflow quickly")
        s = self.watch()
        s.until(self.marker("m0"))
        pid = self.a.host_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            for i in range(n):
                os.mkdir(os.path.join(self.w, "o%d" % i))
        finally:
            os.kill(pid, signal.SIGCONT)
        evs = s.until(lambda j: j["type"] == "truncated")
        self.assertEqual(evs[-1]["json"]["path"], self.w)


class TestRefusals(WatchCase):
    def test_refused(self):
        f = os.path.join(self.root, "file")
        with open(f, "w"):
            pass
        for path, status, code in ((self.top, 403, "forbidden"), ("/etc", 403, "forbidden"),
                                   (os.path.join(self.root, "nope"), 404, "not_found"),
                                   (f, 400, "invalid_request"), ("rel", 400, "invalid_request")):
            s = self.watch(path)
            self.assertEqual(s.status, status, (path, s.body))
            self.assertEqual(json.loads(s.body)["code"], code, path)
        s = self.watch(query="&cursor=junk")
        self.assertEqual(s.status, 400)
        s = self.watch(query="&recursive=maybe")
        self.assertEqual(s.status, 400)


class TestCli(WatchCase):
    def run_watch(self, *args):
        p = subprocess.Popen([TEND_BIN, "--socket", self.a.sock, "watch"] + list(args),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        return p

    def test_lines_and_json(self):
        plain = self.run_watch(self.w)
        js = self.run_watch("--json", "-R", self.w)
        time.sleep(scaled(0.5))
        os.mkdir(os.path.join(self.w, "sub"))
        with open(os.path.join(self.w, "sub", "f"), "w"):
            pass
        time.sleep(scaled(0.3))
        shutil.rmtree(self.w)
        out, err = plain.communicate(timeout=scaled(10))
        self.assertEqual(plain.returncode, 0, err)
        lines = out.decode().splitlines()
        self.assertEqual(lines[0], "create " + os.path.join(self.w, "sub"))
        self.assertEqual(lines[-1], "remove " + self.w)
        self.assertNotIn(os.path.join(self.w, "sub", "f"), out.decode())
        out, err = js.communicate(timeout=scaled(10))
        self.assertEqual(js.returncode, 0, err)
        evs = [json.loads(x) for x in out.decode().splitlines()]
        self.assertIn({"type": "create", "path": os.path.join(self.w, "sub", "f")},
                      [{"type": e["type"], "path": e["path"]} for e in evs])

    def test_missing_directory(self):
        p = self.run_watch(os.path.join(self.root, "nope"))
        out, err = p.communicate(timeout=scaled(10))
        self.assertEqual(p.returncode, 4, err)


class TestBigTrees(WatchCase):
    """A recursive watch of a big tree is scanned a share at each loop turn
    (WATCH_SCAN_BUDGET): health keeps answering while it is."""

    def tree(self, top, n=80, m=100):
        for i in range(n):
            for j in range(m):
                os.makedirs(os.path.join(top, str(i), str(j)))

    def worst_health(self, seconds):
        """The slowest /v1/health of those sent for `seconds`."""
        worst, end = 0.0, time.monotonic() + seconds
        while time.monotonic() < end:
            t = time.monotonic()
            self.assertEqual(self.a.get("/v1/health").status, 200)
            worst = max(worst, time.monotonic() - t)
        return worst

    def test_health_during_scans(self):
        import threading
        self.tree(os.path.join(self.w, "big"))
        opened = []
        th = threading.Thread(target=lambda: opened.append(self.watch(query="&recursive=1")))
        th.start()
        worst = self.worst_health(1.0)
        print("first scan: worst health %.3fs" % worst, file=sys.stderr)
        th.join(scaled(30))
        self.assertEqual(opened[0].status, 200)
        self.assertLess(worst, scaled(0.1), "health stalled during the first scan")
        # A tree moved in: scanned from the loop, its content told.
        out = os.path.join(self.root, "out")
        self.tree(out, 40)
        os.rename(out, os.path.join(self.w, "moved"))
        worst = self.worst_health(1.0)
        print("moved-in scan: worst health %.3fs" % worst, file=sys.stderr)
        self.assertLess(worst, scaled(0.1), "health stalled during a moved-in scan")
        last = os.path.join(self.w, "moved", "39", "99")
        evs = opened[0].until(lambda j: j["path"] == last)
        self.assertEqual(evs[0]["json"], dict(evs[0]["json"], type="create",
                                              path=os.path.join(self.w, "moved")))


if __name__ == "__main__":
    unittest.main()
