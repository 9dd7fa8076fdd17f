"""Hardening (issue 25 item 6): names that are not UTF-8.  Any process
can make a file named b"bad\\xff\\xfeutf8"; every JSON the agent emits
about it — tend's listing, envd's ListDir, Stat and watch events, tend's
watch stream, `tend ls --json` and `tend watch --json`, a process's and
a terminal's status and their files on disk when their cwd is such a
path — must still be valid UTF-8 (Python's json.loads on the strictly decoded body), each
ill-formed byte shown as U+FFFD, and tend's own API gives the exact
bytes back in "<key>Bytes" (base64).  Such a name is addressed in a
request by percent-encoding its bytes in the URL."""
import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import urllib.parse

from harness import TEND_BIN, Agent, AgentTestCase, UnixHTTPConnection, poll, scaled

BAD = b"bad\xff\xfeutf8"
SHOWN = "bad\ufffd\ufffdutf8"
FS = "/filesystem.Filesystem/"


def strict(body):
    """body as JSON, decoded as UTF-8 with no error tolerated."""
    return json.loads(body.decode("utf-8", "strict"))


def unb64(s):
    return base64.b64decode(s, validate=True)


def q(path):
    """A path's bytes percent-encoded for a URL."""
    return urllib.parse.quote(path if isinstance(path, bytes) else path.encode())


class Utf8Case(AgentTestCase):
    def setUp(self):
        super().setUp()
        self.top = tempfile.mkdtemp(prefix="tend-utf8-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.top.encode(), ignore_errors=True)
        self.root = os.path.join(self.top, "root")
        self.broot = self.root.encode()
        os.makedirs(os.path.join(self.root, "w"))
        with open(os.path.join(self.broot, BAD), "wb") as f:
            f.write(b"payload")
        with open(os.path.join(self.root, "good"), "wb") as f:
            f.write(b"g")
        os.mkdir(os.path.join(self.broot, b"dir\xff"))
        with open(os.path.join(self.broot, b"dir\xff", b"in\xfe"), "wb") as f:
            f.write(b"x")
        os.symlink(BAD, os.path.join(self.root.encode(), b"ln"))
        self.a = self.start_agent()

    def start_agent(self):
        return self.agent(extra=["--files-root", self.root])

    def get_json(self, path):
        r = self.a.request("GET", path)
        self.assertEqual(r.status, 200, r)
        return strict(r.body)


class TestListing(Utf8Case):
    def test_listing_is_utf8_with_name_bytes(self):
        j = self.get_json("/v1/file" + q(self.root))
        by = {e["name"]: e for e in j["entries"]}
        e = by[SHOWN]
        self.assertEqual(unb64(e["nameBytes"]), BAD)
        self.assertEqual((e["type"], e["size"]), ("file", 7))
        self.assertNotIn("nameBytes", by["good"])
        self.assertEqual(unb64(by["dir\ufffd"]["nameBytes"]), b"dir\xff")
        # A link's text is a name too.
        self.assertEqual(by["ln"]["target"], SHOWN)
        self.assertEqual(unb64(by["ln"]["targetBytes"]), BAD)
        self.assertNotIn("nameBytes", by["ln"])

    def test_deeper_names_carry_their_whole_bytes(self):
        j = self.get_json("/v1/file" + q(self.root) + "?depth=2")
        by = {e["name"]: e for e in j["entries"]}
        self.assertEqual(unb64(by["dir\ufffd/in\ufffd"]["nameBytes"]), b"dir\xff/in\xfe")

    def test_the_bytes_address_the_file(self):
        # The name given back, percent-encoded, reaches the same file.
        j = self.get_json("/v1/file" + q(self.root))
        raw = [unb64(e["nameBytes"]) for e in j["entries"] if "nameBytes" in e]
        self.assertIn(BAD, raw)
        r = self.a.request("GET", "/v1/file" + q(self.broot + b"/" + BAD))
        self.assertEqual((r.status, r.body), (200, b"payload"))
        r = self.a.request("PUT", "/v1/file" + q(self.broot + b"/new\xff"), body=b"n")
        self.assertEqual(r.status, 201, r)
        self.assertIn(b"new\xff", os.listdir(self.broot))
        # The U+FFFD form is another name, which does not exist.
        r = self.a.request("GET", "/v1/file" + q(self.root + "/" + SHOWN))
        self.assertEqual(r.status, 404, r)
        # An error quoting such a path is valid UTF-8 too.
        r = self.a.request("GET", "/v1/file" + q(self.broot + b"/nope\xff"))
        self.assertEqual(r.status, 404, r)
        self.assertIn("nope\ufffd", strict(r.body)["error"])

    def test_cli_ls_json_passes_it_through(self):
        out = subprocess.run([TEND_BIN, "-S", self.a.sock, "ls", "--json", self.root],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=scaled(10))
        self.assertEqual(out.returncode, 0, out.stderr)
        j = strict(out.stdout)
        self.assertIn(BAD, [unb64(e["nameBytes"]) for e in j["entries"] if "nameBytes" in e])


class TestEnvd(Utf8Case):
    def rpc(self, name, msg):
        r = self.a.request("POST", FS + name, body=json.dumps(msg).encode(),
                           headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r)
        return strict(r.body)

    def test_list_dir_replaces_as_envd_does(self):
        j = self.rpc("ListDir", {"path": self.root, "depth": 2})
        by = {e["name"]: e for e in j["entries"]}
        e = by[SHOWN]
        self.assertEqual(e["path"], self.root + "/" + SHOWN)
        # envd's EntryInfo has no field for the bytes: none is added.
        self.assertNotIn("nameBytes", e)
        self.assertEqual(by["in\ufffd"]["path"], self.root + "/dir\ufffd/in\ufffd")
        self.assertEqual(by["ln"]["symlinkTarget"], self.root + "/" + SHOWN)

    def test_stat_of_a_link_to_such_a_name(self):
        e = self.rpc("Stat", {"path": self.root + "/ln"})["entry"]
        self.assertEqual(e["symlinkTarget"], self.root + "/" + SHOWN)
        self.assertEqual(e["type"], "FILE_TYPE_FILE")

    def test_files_route_takes_the_bytes(self):
        # /files names a path in its query: percent-encoded bytes reach it,
        # and what its replies say of it is valid UTF-8.
        r = self.a.request("GET", "/files?path=" + q(self.broot + b"/" + BAD))
        self.assertEqual((r.status, r.body), (200, b"payload"))
        r = self.a.request("GET", "/files?path=" + q(self.broot + b"/nope\xff"))
        self.assertEqual(r.status, 404, r)
        self.assertIn("nope\ufffd", strict(r.body)["message"])
        body = (b"--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
                b"\r\nhello\r\n--XX--\r\n")
        r = self.a.request("POST", "/files?path=" + q(self.broot + b"/up\xff"), body=body,
                           headers={"Content-Type": "multipart/form-data; boundary=XX"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(strict(r.body), [{"path": self.root + "/up\ufffd", "name": "up\ufffd",
                                           "type": "file"}])
        self.assertIn(b"up\xff", os.listdir(self.broot))

    def frames(self, c, until, timeout=5.0):
        """Connect frames of a server stream, strictly decoded, until
        until(message) or the end."""
        out = []
        end = time.monotonic() + scaled(timeout)
        while time.monotonic() < end:
            head = c.read(5)
            self.assertEqual(len(head), 5, out)
            flag, n = head[0], struct.unpack(">I", head[1:])[0]
            m = strict(c.read(n))
            if flag & 2:
                break
            out.append(m)
            if until(m):
                return out
        raise AssertionError("not seen: %r" % out)

    def test_watch_dir_events(self):
        body = json.dumps({"path": self.root + "/w", "includeEntry": True}).encode()
        c = UnixHTTPConnection(self.a.sock, timeout=scaled(10))
        self.addCleanup(c.close)
        c.request("POST", FS + "WatchDir", body=b"\0" + struct.pack(">I", len(body)) + body,
                  headers={"Content-Type": "application/connect+json"})
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(self.frames(r, lambda m: "start" in m), [{"start": {}}])
        with open(os.path.join(self.broot, b"w", BAD), "wb") as f:
            f.write(b"x")
        msgs = self.frames(r, lambda m: m.get("filesystem", {}).get("type") ==
                           "EVENT_TYPE_WRITE")
        ev = msgs[-1]["filesystem"]
        self.assertEqual(ev["name"], SHOWN)
        self.assertEqual(ev["entry"]["path"], self.root + "/w/" + SHOWN)

    def test_polling_watcher_events(self):
        wid = self.rpc("CreateWatcher", {"path": self.root + "/w"})["watcherId"]
        with open(os.path.join(self.broot, b"w", BAD), "wb"):
            pass
        got = []
        poll(lambda: got.extend(self.rpc("GetWatcherEvents", {"watcherId": wid})["events"])
             or got)
        self.assertEqual(got[0], {"name": SHOWN, "type": "EVENT_TYPE_CREATE"})


class TestWatch(Utf8Case):
    def test_sse_events(self):
        w = self.root + "/w"
        c = UnixHTTPConnection(self.a.sock, timeout=scaled(10))
        self.addCleanup(c.close)
        c.request("GET", "/v1/watch?path=" + q(w))
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        with open(os.path.join(self.broot, b"w", BAD), "wb"):
            pass
        os.mkdir(os.path.join(w, "marker"))
        evs, data = [], []
        while not evs or evs[-1]["path"] != w + "/marker":
            line = r.readline()
            self.assertTrue(line, evs)
            text = line.decode("utf-8", "strict").rstrip("\r\n")
            if text.startswith("data:"):
                data.append(text[5:].lstrip(" "))
            elif text == "" and data:
                evs.append(json.loads("\n".join(data)))
                data = []
        self.assertEqual(evs[0]["type"], "create")
        self.assertEqual(evs[0]["path"], w + "/" + SHOWN)
        self.assertEqual(unb64(evs[0]["pathBytes"]), w.encode() + b"/" + BAD)
        self.assertNotIn("pathBytes", evs[-1])


    def test_cli_watch_json_keeps_the_bytes(self):
        w = os.path.join(self.root, "w")
        p = subprocess.Popen([TEND_BIN, "-S", self.a.sock, "watch", "--json", w],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        time.sleep(scaled(0.5))
        with open(os.path.join(self.broot, b"w", BAD), "wb"):
            pass
        time.sleep(scaled(0.3))
        shutil.rmtree(os.path.join(self.broot, b"w"))
        out, err = p.communicate(timeout=scaled(10))
        self.assertEqual(p.returncode, 0, err)
        evs = [json.loads(x) for x in out.decode("utf-8", "strict").splitlines()]
        self.assertEqual((evs[0]["type"], evs[0]["path"]), ("create", w + "/" + SHOWN))
        self.assertEqual(unb64(evs[0]["pathBytes"]), w.encode() + b"/" + BAD)


class CwdAgent(Agent):
    """An agent started in a directory whose name is not UTF-8: what it
    launches without a cwd runs there, and says so."""

    def __init__(self, cwd, **kw):
        self.cwd = cwd
        super().__init__(**kw)

    def start(self):
        here = os.getcwd()
        os.chdir(self.cwd)
        try:
            return super().start()
        finally:
            os.chdir(here)


class TestStatus(Utf8Case):
    def start_agent(self):
        self.cwd = os.path.join(self.top.encode(), b"cwd\xff")
        os.mkdir(self.cwd)
        a = CwdAgent(self.cwd, extra=["--files-root", self.root])
        self.addCleanup(a.close)
        a.wait_healthy()
        return a

    def check_cwd(self, j):
        self.assertEqual(j["cwd"], self.top + "/cwd\ufffd")
        self.assertEqual(unb64(j["cwdBytes"]), self.cwd)

    def test_process_status_and_its_files(self):
        st = self.a.launch_ok(["sh", "-c", "pwd; sleep 100"], id="p")
        self.check_cwd(st)
        self.assertNotIn("commandBytes", st)
        self.check_cwd(self.get_json("/v1/processes/p"))
        lst = self.get_json("/v1/processes")
        self.check_cwd([p for p in (lst if isinstance(lst, list) else lst["processes"])
                        if p["id"] == "p"][0])
        # It runs there, as its stdout tells.
        out = poll(lambda: self.a.get("/v1/processes/p/stdout").body)
        self.assertEqual(out, self.cwd + b"\n")
        # envd's List takes the text.
        r = self.a.request("POST", "/process.Process/List", body=b"{}",
                           headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r)
        cfg = [p["config"] for p in strict(r.body)["processes"] if p.get("tag") == "p"]
        self.assertEqual(cfg[0]["cwd"], self.top + "/cwd\ufffd")
        # The record's files on disk are valid UTF-8 too.
        self.a.request("POST", "/v1/processes/p/kill", body=b'{"signal":9}')
        self.a.wait_ended("p")
        boot = self.a.health()["bootId"]
        d = self.a.proc_dir(boot, "p")
        for name in ("meta.json", "status.json"):
            with open(os.path.join(d, name), "rb") as f:
                self.check_cwd(strict(f.read()))

    def test_terminal_status(self):
        r = self.a.post("/v1/terminals", {"id": "t", "argv": ["sleep", "100"]})
        self.assertEqual(r.status, 200, r)
        self.check_cwd(strict(r.body))
        self.check_cwd(self.get_json("/v1/terminals/t"))


class TestRequests(Utf8Case):
    def test_a_body_with_such_bytes_is_refused(self):
        # JSON cannot carry them: a launch naming such a cwd or argv is
        # refused whole, never run with the bytes cut or replaced.
        r = self.a.request("POST", "/v1/processes",
                           body=b'{"argv":["ls","' + BAD + b'"]}',
                           headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(strict(r.body)["code"], "invalid_request")
