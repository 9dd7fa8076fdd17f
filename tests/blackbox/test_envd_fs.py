"""Black-box tests of envd's filesystem surface (issue 15): the Connect
service filesystem.Filesystem (every RPC, its EntryInfo, error codes
and HTTP statuses, confinement to the files root, WatchDir's stream and
the polling watchers) and GET/POST /files (Range, multipart split at
every awkward point, octet-stream, chunked bodies, ownership, 507, a
100 MB upload in bounded memory, and gzip bodies: members, corrupt ones
and a gzip bomb while the loop keeps serving).

Each agent's files root is a temp dir on the real disk (/var/tmp); the
paths in messages are host-absolute."""
import base64
import gzip
import json
import os
import pwd
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import AgentTestCase, UnixHTTPConnection, poll, scaled  # noqa: E402

MiB = 1 << 20
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
FS = "/filesystem.Filesystem/"
RING = 4096         # WATCH_RING_EVENTS
PUMP = 256          # WATCH_PUMP_EVENTS


def envelope(obj, flag=0):
    b = json.dumps(obj).encode()
    return bytes([flag]) + struct.pack(">I", len(b)) + b


class Stream:
    """A Connect server stream read frame by frame."""

    def __init__(self, agent, rpc, msg, headers=None, timeout=10.0):
        body = envelope(msg)
        h = {"Content-Type": "application/connect+json"}
        h.update(headers or {})
        self.c = UnixHTTPConnection(agent.sock, timeout=scaled(timeout))
        self.c.request("POST", FS + rpc, body=body, headers=h)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.ctype = self.r.getheader("Content-Type", "")
        self.end = None       # the end-stream frame's JSON, once read

    def next(self):
        """The next message (a dict); None after the end-stream frame."""
        if self.end is not None:
            return None
        head = self.r.read(5)
        if len(head) < 5:
            raise AssertionError("stream cut after %r" % head)
        flag, n = head[0], struct.unpack(">I", head[1:])[0]
        data = json.loads(self.r.read(n))
        if flag & 2:
            self.end = data
            return None
        return data

    def until(self, pred, timeout=5.0):
        """Messages up to and with the first pred(m) true (a list)."""
        out = []
        end = time.monotonic() + scaled(timeout)
        while time.monotonic() < end:
            m = self.next()
            if m is None:
                break
            out.append(m)
            if pred(m):
                return out
        raise AssertionError("not seen: %r" % out)

    def close(self):
        self.c.close()


class EnvdFsCase(AgentTestCase):
    extra = ()

    def setUp(self):
        super().setUp()
        self.top = tempfile.mkdtemp(prefix="tend-efs-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.top, ignore_errors=True)
        self.root = os.path.join(self.top, "root")
        self.outside = os.path.join(self.top, "outside")
        os.makedirs(self.root)
        os.makedirs(self.outside)
        self.before_start()
        self.a = self.agent(extra=["--files-root", self.root] + list(self.extra))

    def before_start(self):
        pass

    def p(self, *parts):
        return os.path.join(self.root, *parts)

    def rpc(self, name, msg, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        return self.a.request("POST", FS + name, body=json.dumps(msg).encode(), headers=h)

    def ok(self, name, msg, **kw):
        r = self.rpc(name, msg, **kw)
        self.assertEqual(r.status, 200, r)
        return r.json

    def assertConnectError(self, r, status, code):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.json.get("code"), code, r.json)
        self.assertIsInstance(r.json.get("message"), str)
        return r.json

    def stream(self, rpc, msg, **kw):
        s = Stream(self.a, rpc, msg, **kw)
        self.addCleanup(s.close)
        return s

    def files_get(self, path, headers=None, query=""):
        return self.a.request("GET", "/files?path=" + urllib.parse.quote(path) + query,
                              headers=headers)

    def upload_raw(self, head, pieces, pause=0.0):
        """A POST /files sent as head then pieces, with a pause between."""
        s = self.a.connect(timeout=60)
        try:
            s.sendall(head)
            for piece in pieces:
                s.sendall(piece)
                if pause:
                    time.sleep(pause)
            return read_response(s)
        finally:
            s.close()


def read_response(s):
    from harness import ResponseReader
    return ResponseReader(s).read()


def multipart(files, boundary="XbOuNdArYx"):
    """files: (filename, bytes) pairs; the body and its Content-Type."""
    out = b"preamble\r\n"
    for name, data in files:
        out += (b"--" + boundary.encode() + b"\r\n"
                b"Content-Disposition: form-data; name=\"file\"; filename=\"" +
                name.encode() + b"\"\r\nContent-Type: application/octet-stream\r\n\r\n" +
                data + b"\r\n")
    out += b"--" + boundary.encode() + b"--\r\n"
    return out, "multipart/form-data; boundary=" + boundary


class TestStat(EnvdFsCase):
    def test_entry_info_as_envd_fills_it(self):
        with open(self.p("f.txt"), "wb") as f:
            f.write(b"hello")
        os.chmod(self.p("f.txt"), 0o640)
        os.mkdir(self.p("d"))
        os.symlink("d", self.p("ln"))
        e = self.ok("Stat", {"path": self.p("f.txt")})["entry"]
        self.assertEqual(e["name"], "f.txt")
        self.assertEqual(e["type"], "FILE_TYPE_FILE")
        self.assertEqual(e["path"], self.p("f.txt"))
        self.assertEqual(e["size"], "5")                 # int64: a string
        self.assertEqual(e["mode"], 0o640)
        self.assertEqual(e["permissions"], "-rw-r-----")
        self.assertEqual(e["owner"], "root")
        self.assertEqual(e["group"], "root")
        self.assertRegex(e["modifiedTime"], RFC3339)
        self.assertNotIn("symlinkTarget", e)
        d = self.ok("Stat", {"path": self.p("d")})["entry"]
        self.assertEqual((d["type"], d["permissions"][0]), ("FILE_TYPE_DIRECTORY", "d"))
        # A link: the target's type and bits, the link's own permissions.
        ln = self.ok("Stat", {"path": self.p("ln")})["entry"]
        self.assertEqual(ln["type"], "FILE_TYPE_DIRECTORY")
        self.assertEqual(ln["permissions"], "Lrwxrwxrwx")
        self.assertEqual(ln["symlinkTarget"], self.p("d"))
        self.assertEqual(ln["mode"], os.stat(self.p("d")).st_mode & 0o777)
        # Go's letters for the special bits, as envd's permissions show them.
        os.mkdir(self.p("sticky"))
        os.chmod(self.p("sticky"), 0o1777)
        os.chmod(self.p("f.txt"), 0o4755)
        self.assertEqual(self.ok("Stat", {"path": self.p("sticky")})["entry"]["permissions"],
                         "dtrwxrwxrwx")
        self.assertEqual(self.ok("Stat", {"path": self.p("f.txt")})["entry"]["permissions"],
                         "urwxr-xr-x")

    def test_owner_names_from_etc(self):
        nobody = pwd.getpwnam("nobody")
        with open(self.p("n"), "w"):
            pass
        os.chown(self.p("n"), nobody.pw_uid, nobody.pw_gid)
        e = self.ok("Stat", {"path": self.p("n")})["entry"]
        self.assertEqual(e["owner"], "nobody")
        os.chown(self.p("n"), 54321, 54321)
        e = self.ok("Stat", {"path": self.p("n")})["entry"]
        self.assertEqual((e["owner"], e["group"]), ("54321", "54321"))

    def test_missing_is_not_found(self):
        self.assertConnectError(self.rpc("Stat", {"path": self.p("nope")}), 404, "not_found")

    def test_confined_to_the_files_root(self):
        with open(os.path.join(self.outside, "secret"), "w") as f:
            f.write("s")
        os.symlink(self.outside, self.p("out"))
        for path in (os.path.join(self.outside, "secret"), self.p("..", "outside", "secret"),
                     self.p("out", "secret"), "/etc/passwd"):
            self.assertConnectError(self.rpc("Stat", {"path": path}), 403, "permission_denied")

    def test_bad_messages(self):
        r = self.a.request("POST", FS + "Stat", body=b"{not json",
                           headers={"Content-Type": "application/json"})
        self.assertConnectError(r, 400, "invalid_argument")
        self.assertConnectError(self.rpc("Stat", {"path": 5}), 400, "invalid_argument")
        # snake_case and unknown fields: as proto3 JSON reads them.
        os.mkdir(self.p("s"))
        e = self.ok("Stat", {"path": self.p("s"), "whatever_else": 1})["entry"]
        self.assertEqual(e["name"], "s")

    def test_unknown_rpc_unimplemented(self):
        r = self.rpc("Chown", {"path": "/"})
        self.assertConnectError(r, 501, "unimplemented")

    def test_unknown_basic_user_unauthenticated(self):
        h = {"Authorization": "Basic " + base64.b64encode(b"no-such-user:").decode()}
        r = self.rpc("Stat", {"path": self.root}, headers=h)
        self.assertConnectError(r, 401, "unauthenticated")


class TestRelativePaths(EnvdFsCase):
    """A relative path is joined to the user's home (the files root is /
    here, the home a temp dir of a user made up in a copy of passwd is
    not possible: root's home is /root, so the test works under it)."""

    def setUp(self):
        AgentTestCase.setUp(self)
        if not os.path.isdir("/root"):
            self.skipTest("no /root")
        self.home_dir = tempfile.mkdtemp(prefix="tend-efs-", dir="/root")
        self.addCleanup(shutil.rmtree, self.home_dir, ignore_errors=True)
        self.a = self.agent(extra=["--files-root", "/"])

    def test_relative_and_tilde(self):
        name = os.path.basename(self.home_dir)
        with open(os.path.join(self.home_dir, "f"), "w") as f:
            f.write("x")
        for path in (name + "/f", "~/" + name + "/f"):
            e = self.ok("Stat", {"path": path})["entry"]
            self.assertEqual(e["path"], os.path.join(self.home_dir, "f"))


class TestDirs(EnvdFsCase):
    def test_makedir_twice(self):
        e = self.ok("MakeDir", {"path": self.p("a", "b", "c")})["entry"]
        self.assertEqual((e["name"], e["type"]), ("c", "FILE_TYPE_DIRECTORY"))
        self.assertTrue(os.path.isdir(self.p("a", "b", "c")))
        self.assertConnectError(self.rpc("MakeDir", {"path": self.p("a", "b", "c")}), 409,
                                "already_exists")
        with open(self.p("file"), "w"):
            pass
        self.assertConnectError(self.rpc("MakeDir", {"path": self.p("file")}), 400,
                                "invalid_argument")
        self.assertConnectError(self.rpc("MakeDir", {"path": self.p("file", "x")}), 400,
                                "invalid_argument")

    def test_makedir_owned_by_the_user(self):
        nobody = pwd.getpwnam("nobody")
        os.mkdir(self.p("mine"))
        h = {"Authorization": "Basic " + base64.b64encode(b"nobody:").decode()}
        self.ok("MakeDir", {"path": self.p("mine", "x", "y")}, headers=h)
        for d in (("mine", "x"), ("mine", "x", "y")):
            self.assertEqual(os.stat(self.p(*d)).st_uid, nobody.pw_uid, d)
        self.assertEqual(os.stat(self.p("mine")).st_uid, 0)    # there before

    def test_list_depth(self):
        os.makedirs(self.p("t", "a", "b", "c"))
        for f in (("t", "z"), ("t", "a", "y"), ("t", "a", "b", "x")):
            with open(self.p(*f), "w"):
                pass
        names = lambda j: [e["path"][len(self.p("t")) + 1:] for e in j["entries"]]  # noqa: E731
        self.assertEqual(names(self.ok("ListDir", {"path": self.p("t")})), ["a", "z"])
        self.assertEqual(names(self.ok("ListDir", {"path": self.p("t"), "depth": 2})),
                         ["a", "a/b", "a/y", "z"])
        self.assertEqual(names(self.ok("ListDir", {"path": self.p("t"), "depth": 3})),
                         ["a", "a/b", "a/b/c", "a/b/x", "a/y", "z"])
        for d in ("nan", "-nan", "-inf", "0"):                   # 1, never (int)NaN
            self.assertEqual(names(self.ok("ListDir", {"path": self.p("t"), "depth": d})),
                             ["a", "z"], d)
        self.assertEqual(names(self.ok("ListDir", {"path": self.p("t"), "depth": "inf"})),
                         ["a", "a/b", "a/b/c", "a/b/x", "a/y", "z"])
        j = self.ok("ListDir", {"path": self.p("t"), "depth": 2})
        self.assertEqual(j["entries"][1]["name"], "b")            # its own name
        self.assertEqual(j["entries"][1]["type"], "FILE_TYPE_DIRECTORY")
        self.assertConnectError(self.rpc("ListDir", {"path": self.p("t", "z")}), 400,
                                "invalid_argument")
        self.assertConnectError(self.rpc("ListDir", {"path": self.p("nope")}), 404, "not_found")

    def test_move_makes_parents(self):
        with open(self.p("src"), "w") as f:
            f.write("data")
        e = self.ok("Move", {"source": self.p("src"), "destination": self.p("n", "e", "w")})["entry"]
        self.assertEqual((e["name"], e["path"], e["size"]), ("w", self.p("n", "e", "w"), "4"))
        self.assertFalse(os.path.exists(self.p("src")))
        with open(self.p("n", "e", "w")) as f:
            self.assertEqual(f.read(), "data")
        self.assertConnectError(self.rpc("Move", {"source": self.p("src"),
                                                  "destination": self.p("x")}), 404, "not_found")
        self.assertConnectError(self.rpc("Move", {"source": self.p("n"),
                                                  "destination": os.path.join(self.outside, "n")}),
                                403, "permission_denied")

    def test_remove_recursive(self):
        os.makedirs(self.p("r", "s", "t"))
        with open(self.p("r", "s", "t", "f"), "w"):
            pass
        self.assertEqual(self.ok("Remove", {"path": self.p("r")}), {})
        self.assertFalse(os.path.exists(self.p("r")))
        self.assertEqual(self.ok("Remove", {"path": self.p("r")}), {})   # as os.RemoveAll
        self.assertConnectError(self.rpc("Remove", {"path": self.root}), 400,
                                "failed_precondition")


class TestWatchDir(EnvdFsCase):
    def fs_events(self, msgs):
        return [(m["filesystem"]["type"], m["filesystem"]["name"]) for m in msgs if "filesystem" in m]

    def test_start_then_events(self):
        os.mkdir(self.p("w"))
        s = self.stream("WatchDir", {"path": self.p("w"), "recursive": True, "includeEntry": True})
        self.assertEqual(s.status, 200)
        self.assertTrue(s.ctype.startswith("application/connect+json"), s.ctype)
        self.assertEqual(s.next(), {"start": {}})
        os.mkdir(self.p("w", "sub"))
        # Once sub's own watch is added (its create told), writes in it
        # are seen as they happen; a file made in the moment between the
        # mkdir and that watch is told as a create by sub's scan.
        msgs = s.until(lambda m: m.get("filesystem", {}).get("name") == "sub")
        self.assertEqual(self.fs_events(msgs), [("EVENT_TYPE_CREATE", "sub")])
        with open(self.p("w", "sub", "f"), "w") as f:
            f.write("x")
        msgs = s.until(lambda m: m.get("filesystem", {}).get("type") == "EVENT_TYPE_WRITE")
        ev = self.fs_events(msgs)
        self.assertEqual(ev, [("EVENT_TYPE_CREATE", "sub/f"), ("EVENT_TYPE_WRITE", "sub/f")])
        self.assertEqual(msgs[-1]["filesystem"]["entry"]["path"], self.p("w", "sub", "f"))
        os.rename(self.p("w", "sub", "f"), self.p("w", "g"))
        os.chmod(self.p("w", "g"), 0o600)
        os.unlink(self.p("w", "g"))
        msgs = s.until(lambda m: m.get("filesystem", {}).get("type") == "EVENT_TYPE_REMOVE")
        self.assertEqual(self.fs_events(msgs), [("EVENT_TYPE_RENAME", "sub/f"),
                                                ("EVENT_TYPE_CREATE", "g"),
                                                ("EVENT_TYPE_CHMOD", "g"),
                                                ("EVENT_TYPE_REMOVE", "g")])
        self.assertNotIn("entry", msgs[-1]["filesystem"])

    def test_atomic_write_is_create_write_then_write(self):
        os.mkdir(self.p("w"))
        s = self.stream("WatchDir", {"path": self.p("w")})
        self.assertEqual(s.next(), {"start": {}})
        body, ct = multipart([(self.p("w", "f"), b"one")])
        self.assertEqual(self.a.request("POST", "/files", body=body,
                                        headers={"Content-Type": ct}).status, 200)
        r = self.a.request("POST", "/files?path=" + urllib.parse.quote(self.p("w", "f")),
                           body=b"two", headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(r.status, 200)
        os.mkdir(self.p("w", "marker"))
        msgs = s.until(lambda m: m.get("filesystem", {}).get("name") == "marker")
        # The new file's create and write, the replaced one's write (one
        # with the first when both are read at once, as inotify folds
        # them): what envd's writes in place are told as.
        ev = [e for i, e in enumerate(self.fs_events(msgs))
              if i == 0 or e != self.fs_events(msgs)[i - 1]]
        self.assertEqual(ev, [("EVENT_TYPE_CREATE", "f"),
                              ("EVENT_TYPE_WRITE", "f"),
                              ("EVENT_TYPE_CREATE", "marker")])

    def test_keepalive_after_silence(self):
        s = self.stream("WatchDir", {"path": self.root}, headers={"Keepalive-Ping-Interval": "1"})
        self.assertEqual(s.next(), {"start": {}})
        t0 = time.monotonic()
        self.assertEqual(s.next(), {"keepalive": {}})
        self.assertGreater(time.monotonic() - t0, 0.5)

    def test_errors_end_the_stream(self):
        with open(self.p("f"), "w"):
            pass
        for path, code in ((self.p("f"), "invalid_argument"), (self.p("nope"), "not_found"),
                           (self.outside, "permission_denied")):
            s = self.stream("WatchDir", {"path": path})
            self.assertEqual(s.status, 200)                     # always, for a stream
            self.assertIsNone(s.next())
            self.assertEqual(s.end["error"]["code"], code, path)

    def test_deadline_ends_the_stream(self):
        s = self.stream("WatchDir", {"path": self.root}, headers={"Connect-Timeout-Ms": "300"})
        self.assertEqual(s.next(), {"start": {}})
        self.assertIsNone(s.next())
        self.assertEqual(s.end["error"]["code"], "deadline_exceeded")

    def test_directory_removed_ends_the_stream(self):
        os.mkdir(self.p("gone"))
        s = self.stream("WatchDir", {"path": self.p("gone")})
        self.assertEqual(s.next(), {"start": {}})
        os.rmdir(self.p("gone"))
        m = s.next()
        self.assertEqual(m["filesystem"], {"name": ".", "type": "EVENT_TYPE_REMOVE"})
        self.assertIsNone(s.next())
        self.assertEqual(s.end, {})

    def test_overflow_is_data_loss_not_a_gap(self):
        """The agent stopped while more events than the kernel queues
        happen: the stream ends with data_loss, never silently short."""
        with open("/proc/sys/fs/inotify/max_queued_events") as f:
            n = int(f.read()) + 100
        if n > 70000:
            self.skipTest("max_queued_events too large to overflow quickly")
        os.mkdir(self.p("w"))
        s = self.stream("WatchDir", {"path": self.p("w")})
        self.assertEqual(s.next(), {"start": {}})
        pid = self.a.host_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            for i in range(n):
                os.mkdir(self.p("w", str(i)))
        finally:
            os.kill(pid, signal.SIGCONT)
        end = time.monotonic() + scaled(20)
        while s.next() is not None:
            self.assertLess(time.monotonic(), end)
        self.assertEqual(s.end["error"]["code"], "data_loss")


class TestPollingWatcher(EnvdFsCase):
    def test_create_get_remove(self):
        os.mkdir(self.p("w"))
        wid = self.ok("CreateWatcher", {"path": self.p("w"), "recursive": True})["watcherId"]
        self.assertRegex(wid, r"^w[0-9a-f]{16}$")
        with open(self.p("w", "f"), "w") as f:
            f.write("x")

        def events():
            return self.ok("GetWatcherEvents", {"watcherId": wid})["events"]
        got = []
        poll(lambda: got.extend(events()) or any(e["name"] == "f" for e in got))
        self.assertEqual(got[0], {"name": "f", "type": "EVENT_TYPE_CREATE"})
        self.assertEqual(events(), [])                          # taken once
        self.assertEqual(self.ok("RemoveWatcher", {"watcherId": wid}), {})
        self.assertConnectError(self.rpc("GetWatcherEvents", {"watcherId": wid}), 404, "not_found")
        self.assertConnectError(self.rpc("RemoveWatcher", {"watcherId": wid}), 404, "not_found")
        self.assertConnectError(self.rpc("CreateWatcher", {"path": self.p("nope")}), 404,
                                "not_found")

    def test_bounded(self):
        ids = []
        for _ in range(64):
            r = self.rpc("CreateWatcher", {"path": self.root})
            self.assertEqual(r.status, 200, r)
            ids.append(r.json["watcherId"])
        self.assertConnectError(self.rpc("CreateWatcher", {"path": self.root}), 429,
                                "resource_exhausted")
        self.ok("RemoveWatcher", {"watcherId": ids[0]})
        self.ok("CreateWatcher", {"path": self.root})

    def make_and_settle(self, wid, names):
        for n in names:
            os.mkdir(self.p("w", n))
        time.sleep(scaled(0.5))         # all read from the kernel

    def test_a_poll_is_bounded(self):
        """At most WATCH_PUMP_EVENTS per reply, the rest kept for the next."""
        os.mkdir(self.p("w"))
        wid = self.ok("CreateWatcher", {"path": self.p("w"), "includeEntry": True})["watcherId"]
        names = ["d%d" % i for i in range(1000)]
        self.make_and_settle(wid, names)
        t = time.monotonic()
        first = self.ok("GetWatcherEvents", {"watcherId": wid})["events"]
        print("a poll of %d events with entries: %.3fs" % (len(first), time.monotonic() - t),
              file=sys.stderr)
        self.assertEqual(len(first), PUMP)
        got = list(first)
        while True:
            evs = self.ok("GetWatcherEvents", {"watcherId": wid})["events"]
            self.assertLessEqual(len(evs), PUMP)
            if not evs:
                break
            got.extend(evs)
        self.assertEqual([e["name"] for e in got], names)
        self.assertEqual(got[-1]["entry"]["path"], self.p("w", names[-1]))

    def test_gap_loses_nothing_more(self):
        """Behind the ring: data_loss, then the oldest kept event first."""
        os.mkdir(self.p("w"))
        wid = self.ok("CreateWatcher", {"path": self.p("w")})["watcherId"]
        names = ["d%d" % i for i in range(RING + 100)]
        self.make_and_settle(wid, names)
        r = self.rpc("GetWatcherEvents", {"watcherId": wid})
        self.assertEqual(r.json.get("code"), "data_loss", r.json)
        evs = self.ok("GetWatcherEvents", {"watcherId": wid})["events"]
        self.assertEqual(evs[0]["name"], names[100])


class TestDownload(EnvdFsCase):
    def test_bytes_range_and_errors(self):
        data = bytes(range(256)) * 10
        with open(self.p("b"), "wb") as f:
            f.write(data)
        r = self.files_get(self.p("b"))
        self.assertEqual((r.status, r.body), (200, data))
        r = self.files_get(self.p("b"), headers={"Range": "bytes=10-19"})
        self.assertEqual((r.status, r.body), (206, data[10:20]))
        r = self.files_get(self.p("nope"))
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json["code"], 404)
        self.assertIn("does not exist", r.json["message"])
        r = self.files_get(self.root)
        self.assertEqual((r.status, r.json["code"]), (400, 400))
        r = self.files_get("/etc/passwd")
        self.assertEqual((r.status, r.json["code"]), (403, 403))
        r = self.files_get(self.p("b"), query="&username=no-such-user")
        self.assertEqual((r.status, r.json["code"]), (401, 401))


class TestUpload(EnvdFsCase):
    def post(self, body, ctype, query=""):
        return self.a.request("POST", "/files" + query, body=body, headers={"Content-Type": ctype})

    def test_multipart_files_and_reply(self):
        body, ct = multipart([(self.p("one"), b"1" * 1000), (self.p("deep", "er", "two"), b"")])
        r = self.post(body, ct)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, [{"path": self.p("one"), "name": "one", "type": "file"},
                                  {"path": self.p("deep", "er", "two"), "name": "two",
                                   "type": "file"}])
        with open(self.p("one"), "rb") as f:
            self.assertEqual(f.read(), b"1" * 1000)
        self.assertEqual(os.path.getsize(self.p("deep", "er", "two")), 0)
        self.assertEqual([n for n in os.listdir(self.root) if n.startswith(".")], [])

    def test_query_path_and_octet_stream(self):
        r = self.post(b"raw", "application/octet-stream", "?path=" + urllib.parse.quote(self.p("r")))
        self.assertEqual(r.json, [{"path": self.p("r"), "name": "r", "type": "file"}])
        r = self.post(b"", "application/octet-stream", "?path=" + urllib.parse.quote(self.p("e")))
        self.assertEqual(r.status, 200)
        self.assertEqual(os.path.getsize(self.p("e")), 0)
        r = self.post(b"raw", "application/octet-stream")
        self.assertEqual((r.status, r.json["code"]), (400, 400))
        body, ct = multipart([("ignored-name", b"q")])
        r = self.post(body, ct, "?path=" + urllib.parse.quote(self.p("q")))
        self.assertEqual(r.json[0]["path"], self.p("q"))

    def test_owned_by_the_user(self):
        nobody = pwd.getpwnam("nobody")
        body, ct = multipart([(self.p("u", "v", "f"), b"x")])
        r = self.post(body, ct, "?username=nobody")
        self.assertEqual(r.status, 200, r)
        for rel in (("u",), ("u", "v"), ("u", "v", "f")):
            self.assertEqual(os.stat(self.p(*rel)).st_uid, nobody.pw_uid, rel)

    def test_refusals(self):
        body, ct = multipart([(os.path.join(self.outside, "x"), b"x")])
        r = self.post(body, ct)
        self.assertEqual((r.status, r.json["code"]), (403, 403))
        self.assertEqual(os.listdir(self.outside), [])
        body, ct = multipart([(self.p("d"), b"1"), (self.p("d"), b"2")])
        r = self.post(body, ct)
        self.assertEqual((r.status, r.json["code"]), (400, 400))
        self.assertIn("same path", r.json["message"])
        r = self.post(b"x", "text/plain")
        self.assertEqual((r.status, r.json["code"]), (400, 400))
        body, ct = multipart([(self.p("cut"), b"x")])
        r = self.post(body[:-20], ct)                           # no closing boundary
        self.assertEqual((r.status, r.json["code"]), (400, 400))
        os.mkdir(self.p("dir"))
        body, ct = multipart([(self.p("dir"), b"x")])
        r = self.post(body, ct)
        self.assertEqual(r.status, 400)
        r = self.post(b"x", "application/octet-stream", "?path=%s&username=no-such-user"
                      % urllib.parse.quote(self.p("n")))
        self.assertEqual((r.status, r.json["code"]), (401, 401))

    def test_split_at_every_awkward_point(self):
        """The body in two writes, cut at each byte of the delimiters and
        headers: the server reads them apart, the file is the same."""
        data = b"A\r\n--XbOuNdArY-not\r\r\n" * 3
        body, ct = multipart([(self.p("s"), data)])
        head = ("POST /files HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                "Content-Length: %d\r\n\r\n" % (ct, len(body))).encode()
        start = body.index(b"--XbOuNdArYx")
        cuts = list(range(start, start + 140)) + list(range(len(body) - 40, len(body)))
        for cut in cuts:
            r = self.upload_raw(head, [body[:cut], body[cut:]], pause=0.005)
            self.assertEqual(r.status, 200, (cut, r))
            with open(self.p("s"), "rb") as f:
                self.assertEqual(f.read(), data, cut)

    def test_chunked_body(self):
        data = os.urandom(200000)
        body, ct = multipart([(self.p("c"), data)])
        head = ("POST /files HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                "Transfer-Encoding: chunked\r\n\r\n" % ct).encode()
        pieces, i = [], 0
        for n in (1, 2, 3, 7, 100, 4096, 65536):
            pieces.append(b"%x\r\n%s\r\n" % (n, body[i:i + n]))
            i += n
        pieces.append(b"%x\r\n%s\r\n" % (len(body) - i, body[i:]))
        pieces.append(b"0\r\n\r\n")
        r = self.upload_raw(head, pieces, pause=0.002)
        self.assertEqual(r.status, 200, r)
        with open(self.p("c"), "rb") as f:
            self.assertEqual(f.read(), data)

    def test_100mb_upload_bounded_memory(self):
        size = 100 * MiB
        boundary = b"bigBOUNDARY"
        pre = (b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"file\"; "
               b"filename=\"" + self.p("big").encode() + b"\"\r\n\r\n")
        post = b"\r\n--" + boundary + b"--\r\n"
        head = ("POST /files HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; "
                "boundary=bigBOUNDARY\r\nContent-Length: %d\r\n\r\n"
                % (len(pre) + size + len(post))).encode()
        chunk = (b"\r\n-" * 21846)[:65536]
        before = self.a.rss_kib()

        def pieces():
            yield pre
            for _ in range(size // len(chunk)):
                yield chunk
            yield post
        t0 = time.monotonic()
        r = self.upload_raw(head, pieces())
        took = time.monotonic() - t0
        self.assertEqual(r.status, 200, r)
        self.assertEqual(os.path.getsize(self.p("big")), size)
        grown = self.a.rss_kib() - before
        print("\n100 MB multipart upload (a CR every 3 bytes): %.2f s, agent RSS %d KiB "
              "before, grew %d KiB" % (took, before, grown), file=sys.stderr)
        self.assertLess(grown, 16 * 1024)


def gz_members(data, cuts):
    """data gzipped as consecutive members, cut at the offsets given."""
    out, last = b"", 0
    for cut in list(cuts) + [len(data)]:
        out += gzip.compress(data[last:cut], mtime=0)
        last = cut
    return out


def gz_zeros(size):
    """size zero bytes gzipped (a bomb: about a thousandth of size)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(MiB)
    out = [z.compress(block) for _ in range(size // MiB)]
    return b"".join(out) + z.flush()


class TestGzipUpload(EnvdFsCase):
    """Content-Encoding: gzip on POST /files, as the SDK's gzip option
    sends it (octet-stream, CompressionStream, chunked)."""

    def post_gz(self, body, ctype, query="", encoding="gzip"):
        return self.a.request("POST", "/files" + query, body=body, timeout=60,
                              headers={"Content-Type": ctype, "Content-Encoding": encoding})

    def q(self, *parts):
        return "?path=" + urllib.parse.quote(self.p(*parts))

    def chunked_head(self, ctype, query=""):
        return ("POST /files%s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
                % (query, ctype)).encode()

    def no_temp(self):
        return [n for n in os.listdir(self.root) if n.startswith(".")]

    def test_octet_stream_members_byte_exact(self):
        data = os.urandom(2 * MiB) + bytes(MiB) + b"tend gzip\n" * 100000
        body = gz_members(data, [1, 2 * MiB, 2 * MiB, 3 * MiB + 7])   # an empty member too
        r = self.post_gz(body, "application/octet-stream", self.q("g.bin"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, [{"path": self.p("g.bin"), "name": "g.bin", "type": "file"}])
        with open(self.p("g.bin"), "rb") as f:
            self.assertEqual(f.read(), data)
        for enc in ("x-gzip", "GZip", "X-GZIP"):
            r = self.post_gz(gzip.compress(enc.encode()), "application/octet-stream",
                             self.q(enc), encoding=enc)
            self.assertEqual(r.status, 200, (enc, r))
            with open(self.p(enc), "rb") as f:
                self.assertEqual(f.read(), enc.encode())
        r = self.post_gz(b"as is", "application/octet-stream", self.q("id"), encoding="identity")
        self.assertEqual(r.status, 200, r)
        with open(self.p("id"), "rb") as f:
            self.assertEqual(f.read(), b"as is")
        self.assertEqual(self.no_temp(), [])

    def test_multipart_decoded_before_the_form(self):
        one, two = os.urandom(300000), b"second\r\n--XbOuNdArY" * 1000
        form, ct = multipart([(self.p("m1"), one), (self.p("d", "m2"), two)])
        r = self.post_gz(gz_members(form, [len(form) // 3]), ct)
        self.assertEqual(r.status, 200, r)
        self.assertEqual([e["path"] for e in r.json], [self.p("m1"), self.p("d", "m2")])
        with open(self.p("m1"), "rb") as f:
            self.assertEqual(f.read(), one)
        with open(self.p("d", "m2"), "rb") as f:
            self.assertEqual(f.read(), two)

    def test_chunked_as_compression_stream_sends_it(self):
        data = os.urandom(500000) + bytes(3 * MiB)
        form, form_ct = multipart([(self.p("c"), data)])
        for ctype, body, query in (
                ("application/octet-stream", gz_members(data, [250000]), self.q("c")),
                (form_ct, gzip.compress(form), "")):
            pieces, i = [], 0
            for n in (1, 2, 3, 9, 100, 4096, 65536, 300000):
                pieces.append(b"%x\r\n%s\r\n" % (n, body[i:i + n]))
                i += n
            pieces.append(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body) - i, body[i:]))
            r = self.upload_raw(self.chunked_head(ctype, query), pieces, pause=0.002)
            self.assertEqual(r.status, 200, (ctype, r))
            with open(self.p("c"), "rb") as f:
                self.assertEqual(f.read(), data, ctype)
            os.unlink(self.p("c"))

    def test_pipelined_after_a_long_inflate(self):
        """The reply waits for the body's inflating (32 MiB from 32 KiB);
        the next request on the connection is served after it."""
        body = gz_zeros(32 * MiB)
        head = ("POST /files%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream"
                "\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
                % (self.q("z"), len(body))).encode()
        s = self.a.connect(timeout=60)
        try:
            s.sendall(head + body + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            from harness import ResponseReader
            rd = ResponseReader(s)
            r1, r2 = rd.read(), rd.read()
        finally:
            s.close()
        self.assertEqual(r1.status, 200, r1)
        self.assertEqual(r2.status, 200, r2)
        self.assertEqual(os.path.getsize(self.p("z")), 32 * MiB)

    def test_corrupt_truncated_trailing_are_400(self):
        data = os.urandom(100000) + b"abc" * 100000
        good = gz_members(data, [50000])
        bad = bytearray(good)
        bad[len(good) // 2] ^= 0xff                              # inside a member
        codes = bytearray(good)
        codes[-30] ^= 0x55                                       # in the "abc" codes
        crc = bytearray(good)
        crc[-8] ^= 0x01                                          # the last member's CRC
        cases = {
            "corrupt": bytes(bad),
            "corrupt codes": bytes(codes),
            "crc": bytes(crc),
            "truncated": good[:-5],
            "cut in the header": good[:5],
            "trailing garbage": good + b"garbage!",
            "a trailing byte": good + b"\x1f",
            "trailing zeros": good + bytes(16),
            "not gzip": b"plain text, not gzip",
            "empty": b"",
        }
        form, form_ct = multipart([(self.p("t"), data)])
        gform = gzip.compress(form)
        # A form's part that ended before the error was found stays, as
        # with the form's other refusals; one cut inside it does not.
        forms = {"inside the part": (gform[:len(gform) // 2], b"old"),
                 "trailing garbage": (gform + b"xx", data),
                 "empty": (b"", b"old")}
        with open(self.p("t"), "wb") as f:
            f.write(b"old")
        uploads = [(what, "application/octet-stream", body, self.q("t"), b"old")
                   for what, body in cases.items()]
        uploads += [(what, form_ct, body, "", want) for what, (body, want) in forms.items()]
        for what, ctype, body, query, want in uploads:
            r = self.post_gz(body, ctype, query)
            self.assertEqual((r.status, r.json["code"]), (400, 400), (what, ctype, r))
            self.assertTrue(r.json["message"].startswith("error decompressing request "
                                                         "body: gzip: "), (what, r.json))
            with open(self.p("t"), "rb") as f:
                self.assertEqual(f.read(), want, (what, ctype))   # atomic: old or whole
            self.assertEqual(self.no_temp(), [], (what, ctype))
            with open(self.p("t"), "wb") as f:
                f.write(b"old")
        r = self.post_gz(good, "application/octet-stream", self.q("t"), encoding="br")
        self.assertEqual((r.status, r.json["code"]), (400, 400), r)
        self.assertIn("Content-Encoding", r.json["message"])
        r = self.post_gz(good, "application/octet-stream", self.q("t"))
        self.assertEqual(r.status, 200, r)
        with open(self.p("t"), "rb") as f:
            self.assertEqual(f.read(), data)

    def test_bomb_keeps_the_loop_serving(self):
        """256 MiB of zeros from 256 KiB: inflated a share a turn, while
        another connection's GET /health is answered promptly; a client
        that hangs up mid-bomb leaves nothing behind."""
        size = 256 * MiB
        body = gz_zeros(size)
        worst, polls, stop = [0.0], [0], threading.Event()

        def poller():
            c = UnixHTTPConnection(self.a.sock, timeout=scaled(10))
            try:
                while not stop.is_set():
                    t0 = time.monotonic()
                    c.request("GET", "/health")
                    c.getresponse().read()
                    worst[0] = max(worst[0], time.monotonic() - t0)
                    polls[0] += 1
                    time.sleep(0.002)
            finally:
                c.close()
        t = threading.Thread(target=poller)
        t.start()
        try:
            t0 = time.monotonic()
            r = self.post_gz(body, "application/octet-stream", self.q("bomb"))
            took = time.monotonic() - t0
        finally:
            stop.set()
            t.join()
        self.assertEqual(r.status, 200, r)
        print("\n%d MiB gzip bomb (%d KiB sent): %.2f s, %d health polls meanwhile, worst "
              "%.1f ms" % (size // MiB, len(body) // 1024, took, polls[0], worst[0] * 1000),
              file=sys.stderr)
        self.assertGreater(polls[0], 10)
        self.assertLess(worst[0], scaled(0.1))
        self.assertEqual(os.path.getsize(self.p("bomb")), size)
        zero = bytes(MiB)
        with open(self.p("bomb"), "rb") as f:
            for _ in range(size // MiB):
                self.assertEqual(f.read(MiB), zero)
        os.unlink(self.p("bomb"))
        s = self.a.connect(timeout=10)
        s.sendall(("POST /files%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream"
                   "\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
                   % (self.q("gone"), len(body))).encode() + body[:len(body) // 2])
        time.sleep(0.05)
        s.close()
        self.assertTrue(poll(lambda: not os.path.exists(self.p("gone")) and
                             self.no_temp() == [], timeout=scaled(10)), os.listdir(self.root))
        self.a.health()


class TestMetadata(EnvdFsCase):
    """File metadata (issue 30): X-Metadata-<key> headers on POST /files
    become the xattrs user.e2b.<key>, surfaced as EntryInfo.metadata."""

    def post(self, body, ctype, query="", meta=None):
        h = {"Content-Type": ctype}
        h.update(meta or {})
        return self.a.request("POST", "/files" + query, body=body, headers=h)

    def xattrs(self, path):
        return {n[len("user.e2b."):]: os.getxattr(path, n).decode()
                for n in os.listxattr(path) if n.startswith("user.e2b.")}

    def test_multipart_and_octet_stream_round_trip(self):
        meta = {"X-Metadata-Author": "mish", "x-metadata-PURPOSE": "up load",
                "x-metadata-author": "second", "X-Metadata-": "no key"}
        want = {"author": "mish", "purpose": "up load"}
        body, ct = multipart([(self.p("m1"), b"1"), (self.p("d", "m2"), b"22")])
        r = self.post(body, ct, meta=meta)
        self.assertEqual(r.status, 200, r)
        self.assertEqual([e.get("metadata") for e in r.json], [want, want])
        for f in (self.p("m1"), self.p("d", "m2")):
            self.assertEqual(self.xattrs(f), want)
            self.assertEqual(self.ok("Stat", {"path": f})["entry"]["metadata"], want)
        r = self.post(b"raw", "application/octet-stream", "?path=" + urllib.parse.quote(self.p("o")),
                      meta={"X-Metadata-K": "v"})
        self.assertEqual(r.json, [{"path": self.p("o"), "name": "o", "type": "file",
                                   "metadata": {"k": "v"}}])
        self.assertEqual(self.xattrs(self.p("o")), {"k": "v"})
        listed = {e["name"]: e.get("metadata") for e in self.ok("ListDir", {"path": self.root})["entries"]}
        self.assertEqual(listed["m1"], want)
        self.assertEqual(listed["o"], {"k": "v"})
        self.assertIsNone(listed["d"])          # none: no "metadata" at all
        moved = self.ok("Move", {"source": self.p("o"), "destination": self.p("n", "o2")})["entry"]
        self.assertEqual(moved["metadata"], {"k": "v"})

    def test_upload_replaces_metadata(self):
        r = self.post(b"1", "application/octet-stream", "?path=" + urllib.parse.quote(self.p("f")),
                      meta={"X-Metadata-A": "1", "X-Metadata-B": "2"})
        self.assertEqual(r.status, 200)
        r = self.post(b"2", "application/octet-stream", "?path=" + urllib.parse.quote(self.p("f")),
                      meta={"X-Metadata-B": "3"})
        self.assertEqual(r.json[0]["metadata"], {"b": "3"})
        self.assertEqual(self.xattrs(self.p("f")), {"b": "3"})
        r = self.post(b"3", "application/octet-stream", "?path=" + urllib.parse.quote(self.p("f")))
        self.assertNotIn("metadata", r.json[0])
        self.assertEqual(self.xattrs(self.p("f")), {})
        self.assertNotIn("metadata", self.ok("Stat", {"path": self.p("f")})["entry"])

    def test_set_by_someone_else(self):
        with open(self.p("x"), "w") as f:
            f.write("x")
        os.setxattr(self.p("x"), "user.e2b.author", b"mish")
        os.setxattr(self.p("x"), "user.other", b"not ours")
        os.setxattr(self.p("x"), "user.e2b.bad", b"\xff\xfe")     # not UTF-8: left out
        os.symlink("x", self.p("ln"))
        self.assertEqual(self.ok("Stat", {"path": self.p("x")})["entry"]["metadata"], {"author": "mish"})
        # A link shows what it leads to's, as envd's getxattr follows it.
        self.assertEqual(self.ok("Stat", {"path": self.p("ln")})["entry"]["metadata"], {"author": "mish"})

    def test_invalid_metadata_is_400_before_writing(self):
        q = "?path=" + urllib.parse.quote(self.p("v"))
        for meta in ({"X-Metadata-K": "caf\xe9"},
                     {"X-Metadata-" + "k" * 247: "v"},
                     {"X-Metadata-K%d" % i: "v" * 100 for i in range(40)}):
            r = self.post(b"v", "application/octet-stream", q, meta=meta)
            self.assertEqual((r.status, r.json["code"]), (400, 400), meta)
            self.assertIn("invalid metadata", r.json["message"])
            self.assertFalse(os.path.exists(self.p("v")))
        r = self.post(b"v", "application/octet-stream", q, meta={"X-Metadata-" + "k" * 246: "v"})
        self.assertEqual(r.status, 200, r)


class TestMetadataNoXattrs(EnvdFsCase):
    """Metadata for a file system that refuses user xattrs (a ramfs): an
    error, the old file left as it was, never a file without them."""

    def before_start(self):
        self.ram = os.path.join(self.root, "ram")
        os.mkdir(self.ram)
        if subprocess.call(["mount", "-t", "ramfs", "ramfs", self.ram]) != 0:
            self.skipTest("cannot mount a ramfs")
        self.addCleanup(subprocess.call, ["umount", "-l", self.ram])
        with open(os.path.join(self.ram, "f"), "w") as fh:
            fh.write("old")

    def test_refused_not_dropped(self):
        f = os.path.join(self.ram, "f")
        q = "?path=" + urllib.parse.quote(f)
        r = self.a.request("POST", "/files" + q, body=b"new", headers={
            "Content-Type": "application/octet-stream", "X-Metadata-K": "v"})
        self.assertEqual((r.status, r.json["code"]), (500, 500), r)
        self.assertIn("extended attributes", r.json["message"])
        with open(f) as fh:
            self.assertEqual(fh.read(), "old")                   # left as it was
        self.assertEqual(os.listdir(self.ram), ["f"])           # no temp left
        # Without metadata the same upload is fine there.
        r = self.a.request("POST", "/files" + q, body=b"new", headers={
            "Content-Type": "application/octet-stream"})
        self.assertEqual(r.status, 200, r)
        self.assertNotIn("metadata", self.ok("Stat", {"path": f})["entry"])


class TestWatchUploads(EnvdFsCase):
    """What a recursive WatchDir tells of tend's uploads (issue 30): what
    envd's in-place write would, a new file's create then write."""

    def fs_events(self, msgs):
        return [(m["filesystem"]["type"], m["filesystem"]["name"]) for m in msgs if "filesystem" in m]

    def test_new_file_in_a_nested_folder_is_create_then_write(self):
        os.mkdir(self.p("w"))
        s = self.stream("WatchDir", {"path": self.p("w"), "recursive": True})
        self.assertEqual(s.next(), {"start": {}})
        self.ok("MakeDir", {"path": self.p("w", "nested")})
        s.until(lambda m: m.get("filesystem", {}).get("name") == "nested")
        body, ct = multipart([(self.p("w", "nested", "f"), b"content")])
        self.assertEqual(self.a.request("POST", "/files", body=body,
                                        headers={"Content-Type": ct}).status, 200)
        r = self.a.request("POST", "/files?path=" + urllib.parse.quote(self.p("w", "nested", "e")),
                           body=b"", headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(r.status, 200)
        os.mkdir(self.p("w", "marker"))
        msgs = s.until(lambda m: m.get("filesystem", {}).get("name") == "marker")
        # (MakeDir's chown of nested is a chmod of it, as envd's is.)
        self.assertEqual([e for e in self.fs_events(msgs) if e[1] != "nested"],
                         [("EVENT_TYPE_CREATE", "nested/f"),
                                                ("EVENT_TYPE_WRITE", "nested/f"),
                                                ("EVENT_TYPE_CREATE", "nested/e"),
                                                ("EVENT_TYPE_CREATE", "marker")])


class TestFullDisk(EnvdFsCase):
    def before_start(self):
        self.small = os.path.join(self.root, "small")
        os.mkdir(self.small)
        if subprocess.call(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", self.small]) != 0:
            self.skipTest("cannot mount a tmpfs")
        self.addCleanup(subprocess.call, ["umount", "-l", self.small])

    def test_507(self):
        body, ct = multipart([(os.path.join(self.small, "f"), os.urandom(3 * MiB))])
        r = self.a.request("POST", "/files", body=body, headers={"Content-Type": ct})
        self.assertEqual((r.status, r.json["code"]), (507, 507))
        self.assertEqual(os.listdir(self.small), [])            # no temp left

    def test_507_gzip(self):
        body = gzip.compress(bytes(3 * MiB))
        r = self.a.request("POST", "/files?path=" + urllib.parse.quote(
            os.path.join(self.small, "g")), body=body, headers={
                "Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})
        self.assertEqual((r.status, r.json["code"]), (507, 507))
        self.assertEqual(os.listdir(self.small), [])


if __name__ == "__main__":
    unittest.main()
