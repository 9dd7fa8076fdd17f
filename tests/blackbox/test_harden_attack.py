"""The new surfaces under attack (issue 25: items 5, 11, 12, 13, 14).

Each test is the regression test of one item: it fails on the agent the
issue was filed against and passes once the item is fixed.
"""
import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
import unittest
import urllib.parse

from harness import AgentTestCase, poll, request_bytes, scaled
from test_envd_fs import Stream
from test_watch import Events
from test_files import tar_bytes, tinfo

HANDSHAKE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
             "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
SHELL = ["/bin/sh"]


# ---------------------------------------------------------------- item 13

class TestZeroTerminalSize(AgentTestCase):
    """proto §12: cols/rows are 1..10000 on attach; 0 is out of range, and
    refused as a non-number is, never upgraded."""

    def upgrade(self, a, path):
        r = a.raw_response(request_bytes("GET", path, headers=HANDSHAKE))
        self.assertIsNotNone(r, "closed without a reply: %s" % path)
        return r

    def test_connect_zero_sizes_refused(self):
        a = self.agent()
        r = a.post("/v1/terminals", {"argv": SHELL, "id": "z"})
        self.assertEqual(r.status, 200, r)
        for q in ("cols=0&rows=0", "cols=0&rows=24", "cols=80&rows=0"):
            r = self.upgrade(a, "/v1/terminals/z/connect?" + q)
            self.assertEqual(r.status, 400, (q, r))
            self.assertIn("cols and rows must be valid numbers", r.json["error"], r)
        # In range, and absent, still upgrade.
        for q in ("cols=80&rows=24", ""):
            self.assertEqual(self.upgrade(a, "/v1/terminals/z/connect?" + q).status, 101, q)

    def test_bridge_pty_zero_sizes_refused(self):
        a = self.agent()
        for q in ("cols=0&rows=0", "cols=0&rows=24", "cols=80&rows=0"):
            r = self.upgrade(a, "/v1/sandbox/sb1/pty?shell=/bin/sh&" + q)
            self.assertEqual(r.status, 400, (q, r))
            self.assertIn("cols and rows must be valid numbers", r.json["error"], r)
        # Nothing was created by the refusals.
        self.assertEqual(a.get("/v1/terminals").json, [])
        self.assertEqual(self.upgrade(a, "/v1/sandbox/sb1/pty?shell=/bin/sh&cols=1&rows=1").status,
                         101)


# ---------------------------------------------------------------- files

class FilesRootCase(AgentTestCase):
    """An agent whose files root is self.root (a temp dir on the real disk)."""

    def setUp(self):
        super().setUp()
        self.top = tempfile.mkdtemp(prefix="tend-attack-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.top, ignore_errors=True)
        self.root = os.path.join(self.top, "root")
        os.makedirs(self.root)

    def hydrate(self, a, root, data):
        return a.post("/v1/hydrate?root=" + urllib.parse.quote(root), body=data)

    def tmpfs(self, size):
        """A small tmpfs of its own at self.root (root only, else skipped)."""
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", self.root],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            self.skipTest("cannot mount a tmpfs (needs root): %s" % p.stderr.decode().strip())
        self.addCleanup(subprocess.run, ["umount", "-l", self.root], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)


# ---------------------------------------------------------------- item 12

class TestHydrateSetid(FilesRootCase):
    """proto §13.2: setuid/setgid are kept when the agent is root (these
    tests run as root), for any owner the entry names."""

    def test_setuid_setgid_kept_as_root(self):
        if os.geteuid() != 0:
            self.skipTest("the agent keeps setuid/setgid only as root")
        a = self.agent(extra=["--files-root", self.root])
        dst = os.path.join(self.root, "t")
        members = []
        for name, mode, uid in (("suid", 0o4755, 0), ("sgid", 0o2755, 0),
                                ("both", 0o6711, 0), ("suid-user", 0o4750, 1000),
                                ("sticky", 0o1755, 0)):
            i = tinfo(name, mode=mode)
            i.uid, i.gid = uid, uid
            members.append((i, b"#!/bin/sh\n"))
        d = tinfo("sgid-dir", tarfile.DIRTYPE, mode=0o2775)
        d.uid, d.gid = 1000, 1000
        members.append((d, None))
        r = self.hydrate(a, dst, tar_bytes(members))
        self.assertEqual((r.status, r.json), (200, {"ok": True}), r)
        for name, mode, uid in (("suid", 0o4755, 0), ("sgid", 0o2755, 0), ("both", 0o6711, 0),
                                ("suid-user", 0o4750, 1000), ("sticky", 0o1755, 0),
                                ("sgid-dir", 0o2775, 1000)):
            st = os.lstat(os.path.join(dst, name))
            self.assertEqual((oct(stat.S_IMODE(st.st_mode)), st.st_uid, st.st_gid),
                             (oct(mode), uid, uid), name)
        # And persist carries them back out.
        r = a.post("/v1/persist?root=" + urllib.parse.quote(dst))
        self.assertEqual(r.status, 200, r)
        modes = {m.name.lstrip("./"): m.mode for m in tarfile.open(fileobj=io.BytesIO(r.body))}
        self.assertEqual((oct(modes["suid"]), oct(modes["sgid-dir"])), (oct(0o4755), oct(0o2775)))


# ---------------------------------------------------------------- item 11

class TestHydrateDiskFull(FilesRootCase):
    """A hydrate cut by ENOSPC: the entry it stopped at leaves nothing (its
    name keeps what was there, its blocks come back), the entries before it
    are whole, and the reply says how many those are."""

    def test_enospc_leaves_no_partial_entry(self):
        self.tmpfs("1m")
        a = self.agent(extra=["--files-root", self.root])
        dst = os.path.join(self.root, "dst")
        os.mkdir(dst)
        with open(os.path.join(dst, "big"), "wb") as f:
            f.write(b"old")
        free0 = os.statvfs(self.root).f_bavail * os.statvfs(self.root).f_frsize
        small = os.urandom(10000)
        members = [(tinfo("d", tarfile.DIRTYPE, mode=0o750), None),
                   (tinfo("d/a"), small), (tinfo("b"), small),
                   (tinfo("big"), os.urandom(4 << 20)), (tinfo("c"), small)]
        r = self.hydrate(a, dst, tar_bytes(members))
        j = self.assertError(r, 507)
        self.assertEqual(j.get("errno"), "ENOSPC", j)
        self.assertIn("big", j["error"])
        # "big" is what it was, no temp is left, nothing after it was made.
        with open(os.path.join(dst, "big"), "rb") as f:
            self.assertEqual(f.read(), b"old")
        self.assertEqual(sorted(os.listdir(dst)), ["b", "big", "d"])
        self.assertEqual(os.listdir(os.path.join(dst, "d")), ["a"])
        # The partial entry's blocks are free again.
        free1 = os.statvfs(self.root).f_bavail * os.statvfs(self.root).f_frsize
        self.assertGreater(free1, free0 - 256 * 1024, (free0, free1))
        # d, d/a and b: the archive's first three, whole.
        self.assertEqual(j.get("entriesWritten"), 3, j)
        with open(os.path.join(dst, "d", "a"), "rb") as f:
            self.assertEqual(f.read(), small)
        with open(os.path.join(dst, "b"), "rb") as f:
            self.assertEqual(f.read(), small)
        # Its directory's mode is set although the archive stopped short.
        self.assertEqual(oct(stat.S_IMODE(os.stat(os.path.join(dst, "d")).st_mode)), oct(0o750))
        # With room, the same archive goes in whole.
        os.unlink(os.path.join(dst, "b"))
        members[3] = (tinfo("big"), os.urandom(200000))
        r = self.hydrate(a, dst, tar_bytes(members))
        self.assertEqual((r.status, r.json), (200, {"ok": True}), r)
        self.assertEqual(os.path.getsize(os.path.join(dst, "big")), 200000)
        self.assertEqual(sorted(os.listdir(dst)), ["b", "big", "c", "d"])

    def test_refused_entry_reports_entries_written(self):
        a = self.agent(extra=["--files-root", self.root])
        dst = os.path.join(self.root, "dst")
        r = self.hydrate(a, dst, tar_bytes([(tinfo("a"), b"x"), (tinfo("b"), b"y"),
                                            (tinfo("dev", tarfile.CHRTYPE), None)]))
        j = self.assertError(r, 400, "invalid_request")
        self.assertIn("dev", j["error"])
        self.assertEqual(j.get("entriesWritten"), 2, j)
        self.assertEqual(sorted(os.listdir(dst)), ["a", "b"])

    def test_cut_short_leaves_no_partial_entry(self):
        a = self.agent(extra=["--files-root", self.root])
        dst = os.path.join(self.root, "dst")
        data = tar_bytes([(tinfo("a"), b"x"), (tinfo("p"), b"y" * 100000)])
        r = self.hydrate(a, dst, data[:20000])
        j = self.assertError(r, 400, "invalid_request")
        self.assertIn("cut short", j["error"])
        self.assertEqual(j.get("entriesWritten"), 1, j)
        self.assertEqual(os.listdir(dst), ["a"])


# ---------------------------------------------------------------- item 5

DIRS_MAX = 8192     # WATCH_DIRS_MAX
SCAN_MAX = 4096     # WATCH_SCAN_MAX
FS = "/filesystem.Filesystem/"


class TestLossTold(FilesRootCase):
    """proto §15.4: lost events end a WatchDir with data_loss and are a
    poller's data_loss, a /v1/watch reader's truncated — for every reader
    of a watch that lost some, whenever it came."""

    def setUp(self):
        super().setUp()
        # A tmpfs: thousands of directories come and go in no time there.
        self.tmpfs("64m")
        self.a = self.agent(extra=["--files-root", self.root])
        self.w = os.path.join(self.root, "w")

    def big_tree(self):
        """More directories than one recursive watch holds."""
        for i in range(100):
            for j in range(DIRS_MAX // 100 + 2):
                os.makedirs(os.path.join(self.w, "a%d" % i, "b%d" % j))

    def watchdir(self, timeout_ms=None):
        h = {"Content-Type": "application/connect+json"}
        if timeout_ms is not None:
            h["Connect-Timeout-Ms"] = str(timeout_ms)
        s = Stream(self.a, "WatchDir", {"path": self.w, "recursive": True}, headers=h,
                   timeout=30)
        self.addCleanup(s.close)
        self.assertEqual(s.next(), {"start": {}})
        return s

    def ends_in_data_loss(self, s):
        """Read s to its end; its end's error code."""
        while s.next() is not None:
            pass
        return (s.end.get("error") or {}).get("code")

    def rpc(self, name, msg):
        return self.a.request("POST", FS + name, body=json.dumps(msg).encode(),
                              headers={"Content-Type": "application/json"})

    def first_watch_lost(self):
        s = self.watchdir()
        self.assertEqual(self.ends_in_data_loss(s), "data_loss", s.end)

    def touch_some(self, n=20):
        for i in range(n):
            with open(os.path.join(self.w, "a%d" % (99 - i % 100), "b0", "f%d" % i), "w"):
                pass

    def test_second_watchdir_is_told(self):
        self.big_tree()
        self.first_watch_lost()
        s = self.watchdir(timeout_ms=int(scaled(8000)))
        self.touch_some()
        self.assertEqual(self.ends_in_data_loss(s), "data_loss", s.end)

    def test_poller_after_is_told(self):
        self.big_tree()
        self.first_watch_lost()
        r = self.rpc("CreateWatcher", {"path": self.w, "recursive": True})
        self.assertEqual(r.status, 200, r)
        wid = r.json["watcherId"]
        self.touch_some()
        codes = []

        def lost():
            r = self.rpc("GetWatcherEvents", {"watcherId": wid})
            codes.append(r.status if r.status == 200 else r.json.get("code"))
            return r.status != 200 and r.json.get("code") == "data_loss"
        self.assertTrue(poll(lost, 8, 0.1), codes[-5:])

    def test_tend_reader_after_is_told(self):
        self.big_tree()
        self.first_watch_lost()
        ev = Events(self.a, "recursive=1&path=" + urllib.parse.quote(self.w))
        self.addCleanup(ev.close)
        self.touch_some()
        # Creates may come first (from what the new watch holds already).
        ev.until(lambda j: j["type"] == "truncated")

    def test_joiner_of_a_held_watch_is_told(self):
        """A /v1/watch reader goes on after its truncated, holding the
        watch: a WatchDir that comes after is still told."""
        self.big_tree()
        ev = Events(self.a, "recursive=1&path=" + urllib.parse.quote(self.w))
        self.addCleanup(ev.close)
        ev.until(lambda j: j["type"] == "truncated")
        s = self.watchdir(timeout_ms=int(scaled(8000)))
        self.touch_some()
        self.assertEqual(self.ends_in_data_loss(s), "data_loss", s.end)
        # The first reader still reads its own watch.
        os.mkdir(os.path.join(self.w, "late"))
        ev.until(lambda j: j["path"] == os.path.join(self.w, "late"))

    def test_truncated_while_opening_is_told(self):
        """The first share of a recursive watch's scan runs as it is made:
        a loss found there (a directory with more than WATCH_SCAN_MAX
        entries) is told to the reader that made it too."""
        os.mkdir(self.w)
        for i in range(SCAN_MAX + 10):
            os.mkdir(os.path.join(self.w, "d%d" % i))
        s = self.watchdir(timeout_ms=int(scaled(5000)))
        self.assertEqual(self.ends_in_data_loss(s), "data_loss", s.end)


if __name__ == "__main__":
    unittest.main()
