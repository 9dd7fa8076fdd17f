"""Black-box tests of process output (DESIGN §3 bounded disk, §4 "Logs and
cursors", raw stdout/stderr, "Exec", metrics): byte-exact replay through the
SSE, JSON and raw routes, ordering, resuming from cursors, replay=false,
malformed cursors, follow to the terminal event, slow and vanishing readers,
many followers, curl, exec, the disk bound's `truncated` event, metrics.

Each test starts its own agent as PID 1 of a PID namespace (harness.Agent).
TEND_SLOW=1 (sanitizer builds) shrinks the big outputs and stretches timeouts.
"""
import base64
import hashlib
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (AgentTestCase, RFC3339_MS, SLOW, ResponseReader, poll, read_file,  # noqa: E402
                     request_bytes, scaled, strict_responses)

MB = 1000 * 1000
BIG = (8 if SLOW else 48) * MB          # the byte-exact replay
FLOOD = (50 if SLOW else 200) * MB      # the stalled-reader test
CHATTY_PIECES = 40 if SLOW else 100     # x 10000 bytes, the 100-follower test
CURSOR_RE = re.compile(r"^(0|[1-9][0-9]*)-[0-9a-f]{8}$")
DATA_TYPES = ("stdout", "stderr")


def sha(b):
    return hashlib.sha256(b).hexdigest()


def b64(b):
    return base64.b64encode(b).decode()


def unb64(s):
    return base64.b64decode(s.encode(), validate=True)


def cursor_seq(c):
    return int(c.split("-", 1)[0])


def collect(events):
    """{"stdout": bytes, "stderr": bytes} from data events, in order."""
    parts = {"stdout": [], "stderr": []}
    for e in events:
        j = e.get("json") or {}
        if j.get("type") in DATA_TYPES:
            parts[j["type"]].append(unb64(j["data"]))
    return {k: b"".join(v) for k, v in parts.items()}


class LiveStream:
    """A streaming GET on a bare socket, read piece by piece as it arrives:
    SSE events or chunked raw bytes.  Every read has a timeout."""

    def __init__(self, agent, path, headers=None, timeout=10.0, rcvbuf=None,
                 accept="text/event-stream"):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(scaled(timeout))
        self.sock.connect(agent.sock)
        h = {}
        if accept:
            h["Accept"] = accept
        h.update(headers or {})
        self.sock.sendall(request_bytes("GET", path, headers=h))
        self._rr = ResponseReader(self.sock)
        self.head = self._rr.read(head_only=True)
        self.status = self.head.status
        self.headers = self.head.headers
        self.buf = self._rr.buf
        self._rr.buf = b""
        self.closed = False
        self.comments = []
        self._scan = 0

    def _fill(self):
        if self.closed:
            return False
        try:
            data = self.sock.recv(262144)
        except ConnectionResetError:
            data = b""
        if not data:
            self.closed = True
            return False
        self.buf += data
        return True

    def next_event(self):
        """The next SSE event as {"id", "data", "json"}; None once the server
        closed.  Comments are collected in self.comments."""
        while True:
            i = self.buf.find(b"\n\n", self._scan)
            if i < 0:
                self._scan = max(0, len(self.buf) - 1)
                if not self._fill():
                    if self.buf.strip():
                        raise AssertionError("stream closed mid-event: %r" % self.buf[:200])
                    return None
                continue
            block, self.buf = self.buf[:i], self.buf[i + 2:]
            self._scan = 0
            ev = {}
            for line in block.decode("utf-8").split("\n"):
                line = line.rstrip("\r")
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
                    continue
                field, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if field in ev:
                    raise AssertionError("an event with two %r lines: %r" % (field, block[:200]))
                ev[field] = value
            if not ev:
                continue
            ev["json"] = json.loads(ev["data"]) if "data" in ev else None
            return ev

    def events_until_close(self, limit=1000000):
        out = []
        while len(out) < limit:
            ev = self.next_event()
            if ev is None:
                break
            out.append(ev)
        return out

    def next_chunk(self):
        """The next chunk of a chunked body; b"" at its end (the last chunk)."""
        def line():
            while b"\r\n" not in self.buf:
                if not self._fill():
                    raise EOFError("closed mid-chunk-header")
            ln, _, self.buf = self.buf.partition(b"\r\n")
            return ln
        size = int(line().split(b";")[0].strip(), 16)
        if size == 0:
            while line() != b"":
                pass
            return b""
        while len(self.buf) < size + 2:
            if not self._fill():
                raise EOFError("closed mid-chunk")
        data, self.buf = self.buf[:size], self.buf[size + 2:]
        return data

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class LogCase(AgentTestCase):

    def agent(self, **kw):
        a = super().agent(**kw)
        self.addCleanup(self.assertAlive, a)    # runs before close
        return a

    def assertAlive(self, a, settle=0.1):
        """The agent survived everything the test did to it (given a moment
        to die of what it was last asked)."""
        time.sleep(settle)
        if not a.running():
            self.fail("the agent died (rc=%s):\n%s" % (a.proc.returncode, a.log_text()[-3000:]))
        try:
            a.health()
        except (OSError, AssertionError) as e:
            self.fail("the agent does not answer: %r\n%s" % (e, a.log_text()[-3000:]))

    def live(self, a, path, **kw):
        s = LiveStream(a, path, **kw)
        self.addCleanup(s.close)
        return s


    def check_events(self, events, terminal=True):
        """Every event is well formed; cursors never go back; with terminal,
        exactly one terminal event and it is the last."""
        last = -1
        for e in events:
            j = e.get("json")
            self.assertIsInstance(j, dict, e)
            self.assertIn(j.get("type"), DATA_TYPES + ("truncated", "terminal"), j)
            self.assertRegex(j.get("cursor", ""), CURSOR_RE, j)
            self.assertRegex(j.get("timestamp", ""), RFC3339_MS, j)
            if "id" in e:
                self.assertEqual(e["id"], j["cursor"], e)
            if j["type"] in DATA_TYPES:
                self.assertIn("id", e, "a data event without an id line")
                self.assertGreater(cursor_seq(j["cursor"]), last, "cursor went back or repeated: %r" % j)
                self.assertTrue(unb64(j["data"]), "an empty data event")
            seq = cursor_seq(j["cursor"])
            self.assertGreaterEqual(seq, last, "cursor went back: %r" % j)
            last = seq
        types = [e["json"]["type"] for e in events]
        if terminal:
            self.assertEqual(types.count("terminal"), 1, types[-5:])
            self.assertEqual(types[-1], "terminal", types[-5:])
        else:
            self.assertNotIn("terminal", types)

    def sse_all(self, a, pid_id, query="", headers=None, timeout=60.0):
        """A whole SSE reply (harness reader), asserting it ended by itself."""
        s = a.sse("/v1/processes/%s/logs%s" % (pid_id, query), headers=headers, timeout=timeout)
        self.assertEqual(s.status, 200, s.body)
        self.assertTrue(s.headers.get("content-type", "").startswith("text/event-stream"), s.headers)
        self.assertTrue(s.closed and not s.timed_out, "the stream did not end by itself")
        return s

    def json_logs(self, a, pid_id, query=""):
        r = a.get("/v1/processes/%s/logs%s" % (pid_id, query), headers={"Accept": "application/json"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("content-type", "").startswith("application/json"), r.headers)
        j = r.json
        self.assertIsInstance(j, dict, r)
        for k in ("cursor", "ended", "stderr", "stdout"):
            self.assertIn(k, j)
        if "skippedBytes" in j:     # a tend addition of later versions
            self.assertIsInstance(j["skippedBytes"], int, j)
            self.assertGreaterEqual(j["skippedBytes"], 0, j)
        self.assertRegex(j["cursor"], CURSOR_RE)
        self.assertIsInstance(j["ended"], bool)
        return j

    def assertMatchesSource(self, events, src, stream="stdout", start=0):
        """Walk the events: each `stream` chunk must be src at the running
        position, each truncated event moves the position by skippedBytes,
        and the walk ends at the end of src.  Returns the bytes skipped."""
        pos, skipped = start, 0
        for e in events:
            j = e["json"]
            if j["type"] == "truncated":
                self.assertIsInstance(j["skippedBytes"], int, j)
                self.assertGreater(j["skippedBytes"], 0, j)
                pos += j["skippedBytes"]
                skipped += j["skippedBytes"]
            elif j["type"] == stream:
                d = unb64(j["data"])
                self.assertEqual(d, src[pos:pos + len(d)],
                                 "chunk %s does not match the output at offset %d" % (j["cursor"], pos))
                pos += len(d)
        self.assertEqual(pos, len(src), "delivered + skipped bytes do not add up to the output")
        return skipped

    def write_stdin(self, a, pid_id, data, close=False):
        r = a.post("/v1/processes/%s/stdin%s" % (pid_id, "?close=1" if close else ""), data)
        self.assertEqual(r.status, 204, r)

    def metrics(self, a):
        r = a.get("/v1/metrics")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("content-type", "").startswith("text/plain"), r.headers)
        out = {}
        for line in r.body.decode().splitlines():
            if not line or line.startswith("#"):
                continue
            name, _, value = line.partition(" ")
            out[name] = float(value)
        return out


# ---------------------------------------------------------------- replay

class TestReplay(LogCase):

    def test_big_random_output_byte_exact_on_every_route(self):
        """BIG bytes of random stdout (and some stderr) come back identical
        through SSE, the JSON poll (paged by cursor) and the raw routes."""
        a = self.agent()
        src, err = os.path.join(a.tmp, "src"), os.path.join(a.tmp, "err")
        nerr = BIG // 16
        a.launch_ok(["sh", "-c", "head -c %d /dev/urandom | tee %s; head -c %d /dev/urandom | tee %s >&2"
                     % (BIG, src, nerr, err)], id="big")
        st = a.wait_ended("big", 60000)
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertEqual((st["stdoutBytes"], st["stderrBytes"], st["droppedBytes"]), (BIG, nerr, 0), st)
        want_out, want_err = read_file(src), read_file(err)
        self.assertEqual(len(want_out), BIG)

        # The files an operator would cat.
        pdir = a.proc_dir(st["bootId"], "big")
        self.assertEqual(sha(read_file(os.path.join(pdir, "stdout"))), sha(want_out), "stored stdout file")

        # SSE, replay from the start.
        s = self.sse_all(a, "big", timeout=120)
        self.check_events(s.events)
        self.assertEqual(s.events[-1]["json"]["exit"], {"code": 0, "timedOut": False})
        self.assertEqual(s.events[-1]["json"]["state"], "exited")
        got = collect(s.events)
        self.assertEqual(len(got["stdout"]), BIG, "SSE stdout length")
        self.assertEqual(sha(got["stdout"]), sha(want_out), "SSE stdout differs")
        self.assertEqual(sha(got["stderr"]), sha(want_err), "SSE stderr differs")
        self.assertFalse(s.of_type("truncated"))
        nevents = len(s.events)
        del s, got

        # JSON poll, paged with cursor + limitBytes until ended.
        limit = 4 * 1024 * 1024
        parts = {"stdout": [], "stderr": []}
        cursor, pages = "", 0
        while True:
            j = self.json_logs(a, "big", "?since=%s&limitBytes=%d" % (cursor, limit))
            pages += 1
            o, e = unb64(j["stdout"]), unb64(j["stderr"])
            self.assertLessEqual(len(o) + len(e), limit, "a page over limitBytes")
            parts["stdout"].append(o)
            parts["stderr"].append(e)
            self.assertGreaterEqual(cursor_seq(j["cursor"]), cursor_seq(cursor) if cursor else 0)
            cursor = j["cursor"]
            if j["ended"]:
                break
            self.assertTrue(o or e, "an empty page that is not the end")
            self.assertLess(pages, 10000, "paging never ends")
        self.assertGreater(pages, BIG // limit, "limitBytes was not applied")
        self.assertEqual(sha(b"".join(parts["stdout"])), sha(want_out), "JSON stdout differs")
        self.assertEqual(sha(b"".join(parts["stderr"])), sha(want_err), "JSON stderr differs")
        last = self.json_logs(a, "big", "?since=%s" % cursor)
        self.assertEqual((last["stdout"], last["stderr"], last["ended"]), ("", "", True), "data after the end")
        del parts

        # Default limitBytes is 1 MiB of whole chunks.
        j = self.json_logs(a, "big")
        n = len(unb64(j["stdout"])) + len(unb64(j["stderr"]))
        self.assertGreater(n, 0)
        self.assertLessEqual(n, 1024 * 1024)
        self.assertFalse(j["ended"])
        self.assertLess(cursor_seq(j["cursor"]), nevents)

        # Raw routes.
        r = a.get("/v1/processes/big/stdout", timeout=120)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("content-type"), "application/octet-stream")
        self.assertEqual(sha(r.body), sha(want_out), "raw stdout differs")
        r = a.get("/v1/processes/big/stderr", timeout=60)
        self.assertEqual(sha(r.body), sha(want_err), "raw stderr differs")
        off = BIG - 12345
        r = a.get("/v1/processes/big/stdout?offset=%d" % off, timeout=60)
        self.assertEqual(r.body, want_out[off:], "raw offset")

    def test_json_limit_whole_chunks_at_least_one(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "for i in 1 2 3 4 5; do echo line$i; sleep 0.02; done"], id="p")
        a.wait_ended("p")
        pages, cursor = [], ""
        for _ in range(20):
            j = self.json_logs(a, "p", "?limitBytes=1&since=" + cursor)
            cursor = j["cursor"]
            pages.append(unb64(j["stdout"]))
            if j["ended"]:
                break
        self.assertEqual(b"".join(pages), b"".join(b"line%d\n" % i for i in range(1, 6)))
        # limitBytes=1 still returns one whole chunk per page, never a part.
        for p in pages:
            if p:
                self.assertRegex(p, rb"^(line\d\n)+$")
        self.assertGreaterEqual(len([p for p in pages if p]), 2, pages)
        for bad in ("0", "-1", "x", "1.5"):
            r = a.get("/v1/processes/p/logs?limitBytes=" + bad, headers={"Accept": "application/json"})
            self.assertError(r, 400, "invalid_request")

    def test_interleaved_order_kept(self):
        a = self.agent()
        n = 30
        a.launch_ok(["sh", "-c", "for i in $(seq %d); do echo o$i; sleep 0.01; echo e$i >&2; sleep 0.01; done" % n],
                    id="mix")
        a.wait_ended("mix", 30000)
        s = self.sse_all(a, "mix")
        self.check_events(s.events)
        seq = []
        for e in s.events:
            j = e["json"]
            if j["type"] in DATA_TYPES:
                for line in unb64(j["data"]).decode().splitlines():
                    self.assertEqual(line[0], {"stdout": "o", "stderr": "e"}[j["type"]],
                                     "a line on the wrong stream: %r" % j)
                    seq.append(line)
        want = []
        for i in range(1, n + 1):
            want += ["o%d" % i, "e%d" % i]
        self.assertEqual(seq, want)


# ---------------------------------------------------------------- cursors

class TestCursors(LogCase):

    def test_resume_from_the_middle(self):
        """since=C and Last-Event-ID: C give every later byte exactly once."""
        a = self.agent()
        src = os.path.join(a.tmp, "src")
        a.launch_ok(["sh", "-c", "for i in $(seq 12); do head -c 200000 /dev/urandom | tee -a %s; "
                     "echo err$i >&2; sleep 0.01; done" % src], id="r")
        a.wait_ended("r", 30000)
        full = self.sse_all(a, "r")
        self.check_events(full.events)
        data = [e for e in full.events if e["json"]["type"] in DATA_TYPES]
        self.assertGreater(len(data), 20, "expected many chunks")
        everything = collect(full.events)
        self.assertEqual(everything["stdout"], read_file(src))
        self.assertEqual(everything["stderr"], b"".join(b"err%d\n" % i for i in range(1, 13)))

        for k in (1, 2, len(data) // 3, len(data) // 2, len(data) - 1, len(data)):
            cur = data[k - 1]["id"]
            for how in ("since", "header"):
                if how == "since":
                    s = self.sse_all(a, "r", "?since=" + cur)
                else:
                    s = self.sse_all(a, "r", headers={"Last-Event-ID": cur})
                self.check_events(s.events)
                got = [e for e in s.events if e["json"]["type"] in DATA_TYPES]
                self.assertEqual([e["id"] for e in got], [e["id"] for e in data[k:]],
                                 "resume %s k=%d: wrong events" % (how, k))
                first, rest = collect(data[:k]), collect(got)
                for stream in DATA_TYPES:
                    self.assertEqual(first[stream] + rest[stream], everything[stream],
                                     "resume %s k=%d: %s is not exact" % (how, k, stream))
                self.assertEqual(s.events[-1]["json"]["type"], "terminal")
            # The JSON poll takes the same cursors.
            j = self.json_logs(a, "r", "?limitBytes=100000000&since=" + cur)
            self.assertEqual(unb64(j["stdout"]), collect(data[k:])["stdout"], "JSON since k=%d" % k)
            self.assertTrue(j["ended"])

        # The terminal event's cursor: nothing more to deliver but the end.
        tcur = full.events[-1]["id"]
        s = self.sse_all(a, "r", "?since=" + tcur)
        self.assertEqual([e["json"]["type"] for e in s.events], ["terminal"])

    def test_resume_live_with_follow(self):
        """A follower that reconnects with Last-Event-ID mid-run loses nothing."""
        a = self.agent()
        a.launch_ok(["sh", "-c", "read go; for i in $(seq 40); do echo line$i; sleep 0.01; done"],
                    id="lv", stdin="pipe")
        first = self.live(a, "/v1/processes/lv/logs?follow=1")
        self.assertEqual(first.status, 200)
        self.write_stdin(a, "lv", b"go\n", close=True)
        got1 = []
        while len(collect(got1)["stdout"].splitlines()) < 10:
            ev = first.next_event()
            self.assertIsNotNone(ev, "stream closed early")
            got1.append(ev)
        first.close()
        second = self.live(a, "/v1/processes/lv/logs?follow=1", headers={"Last-Event-ID": got1[-1]["id"]},
                           timeout=30)
        self.assertEqual(second.status, 200)
        got2 = second.events_until_close()
        self.check_events(got1, terminal=False)
        self.check_events(got2)
        self.assertGreater(cursor_seq(got2[0]["id"]), cursor_seq(got1[-1]["id"]))
        out = collect(got1)["stdout"] + collect(got2)["stdout"]
        self.assertEqual(out, b"".join(b"line%d\n" % i for i in range(1, 41)))

    def test_malformed_and_foreign_cursors_refused(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo one; sleep 0.05; echo two"], id="p")
        a.launch_ok(["sh", "-c", "echo other"], id="q")
        a.wait_ended("p")
        a.wait_ended("q")
        good = self.sse_all(a, "p").events[0]["id"]
        other = self.sse_all(a, "q").events[0]["id"]
        seq, tag = good.split("-")
        self.assertEqual(seq, "1")
        self.assertNotEqual(other.split("-")[1], tag, "two processes share a cursor tag")

        # A cursor of the same ID in another boot.
        b = self.agent()
        b.launch_ok(["sh", "-c", "echo one; sleep 0.05; echo two"], id="p")
        b.wait_ended("p")
        foreign_boot = self.sse_all(b, "p").events[0]["id"]
        self.assertNotEqual(foreign_boot, good)

        wrong_tag = "1-" + ("00000000" if tag != "00000000" else "11111111")
        vectors = ["zzz", wrong_tag, other, foreign_boot, "1-", "-1-" + tag, "1", "-" + tag,
                   "1-" + tag.upper() if tag.upper() != tag else "1-" + tag + "0",
                   "01-" + tag, "+1-" + tag, "1-" + tag + "x", "1-" + tag[:7], "x-" + tag,
                   " 1-" + tag, "1.0-" + tag, "99999999999999999999999-" + tag,
                   "1-" + tag + "-" + tag, "1-" + "a" * 100, "9" * 60 + "-" + tag]
        bad = []
        for v in vectors:
            q = "?since=" + v.replace(" ", "%20").replace("+", "%2B")
            r = a.get("/v1/processes/p/logs" + q, headers={"Accept": "text/event-stream"})
            if r.status != 400 or (r.json or {}).get("code") != "invalid_request":
                bad.append(("since", v, r.status, r.body[:80]))
            r = a.get("/v1/processes/p/logs" + q, headers={"Accept": "application/json"})
            if r.status != 400 or (r.json or {}).get("code") != "invalid_request":
                bad.append(("json since", v, r.status, r.body[:80]))
            if v.strip() == v:
                r = a.get("/v1/processes/p/logs", headers={"Accept": "text/event-stream", "Last-Event-ID": v})
                if r.status != 400 or (r.json or {}).get("code") != "invalid_request":
                    bad.append(("Last-Event-ID", v, r.status, r.body[:80]))
        self.assertEqual(bad, [], "cursors not refused with 400 invalid_request:\n" +
                         "\n".join(repr(b) for b in bad))
        # The good cursor still works, on both forms.
        s = self.sse_all(a, "p", "?since=" + good)
        self.assertEqual(collect(s.events)["stdout"], b"two\n")
        s = self.sse_all(a, "p", headers={"Last-Event-ID": good})
        self.assertEqual(collect(s.events)["stdout"], b"two\n")
        for q in ("?follow=maybe", "?replay=2"):
            r = a.get("/v1/processes/p/logs" + q, headers={"Accept": "text/event-stream"})
            self.assertError(r, 400, "invalid_request")
        self.assertError(a.get("/v1/processes/nope/logs"), 404, "not_found")

    def test_overlong_query_values_refused(self):
        """A query value too long to be valid is refused, not ignored (an
        ignored since= would replay everything from the start)."""
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo one; sleep 0.05; echo two"], id="p")
        a.wait_ended("p")
        sse = {"Accept": "text/event-stream"}
        bad = []
        for path, headers in (("logs?follow=" + "true" * 5, sse), ("logs?replay=" + "false" * 5, sse),
                              ("logs?limitBytes=" + "x" * 30, {"Accept": "application/json"}),
                              ("stdout?offset=" + "x" * 30, None), ("stdout?follow=" + "1" * 30, None)):
            r = a.get("/v1/processes/p/" + path, headers=headers)
            if r.status != 400 or (r.json or {}).get("code") != "invalid_request":
                bad.append((path, r.status, r.body[:60]))
        # An offset past 2^64: refused, or past the end (empty); never offset 0.
        r = a.get("/v1/processes/p/stdout?offset=" + "1" * 30)
        if r.status != 400 and (r.status, r.body) != (200, b""):
            bad.append(("stdout?offset=" + "1" * 30, r.status, r.body[:60]))
        self.assertEqual(bad, [], "overlong values not refused:\n" + "\n".join(repr(b) for b in bad))

    def test_replay_false_only_new_output(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo old; read x; echo new; read y; echo newer"], id="rf", stdin="pipe")
        self.assertTrue(poll(lambda: a.status("rf").json["stdoutBytes"] == 4), "old never stored")
        s = self.live(a, "/v1/processes/rf/logs?follow=1&replay=false")
        self.assertEqual(s.status, 200)
        self.write_stdin(a, "rf", b"x\n")
        ev = s.next_event()
        self.assertEqual(ev["json"]["type"], "stdout", ev)
        self.assertEqual(unb64(ev["json"]["data"]), b"new\n", "replay=false delivered old output")
        self.write_stdin(a, "rf", b"y\n", close=True)
        rest = s.events_until_close()
        self.check_events([ev] + rest)
        self.assertEqual(collect([ev] + rest)["stdout"], b"new\nnewer\n")
        self.assertEqual(rest[-1]["json"]["exit"]["code"], 0)

        # replay=false on an ended process: nothing but the terminal event;
        # without follow on a running process: no terminal, and it ends.
        s2 = self.sse_all(a, "rf", "?replay=false")
        self.assertEqual([e["json"]["type"] for e in s2.events], ["terminal"])
        a.launch_ok(["sh", "-c", "echo here; exec sleep 30"], id="run")
        self.assertTrue(poll(lambda: a.status("run").json["stdoutBytes"] == 5))
        t0 = time.monotonic()
        s3 = self.sse_all(a, "run", timeout=5)
        self.assertLess(time.monotonic() - t0, scaled(3), "a non-follow read waited for the process")
        self.check_events(s3.events, terminal=False)
        self.assertEqual(collect(s3.events)["stdout"], b"here\n")
        s4 = self.sse_all(a, "run", "?replay=0&follow=0", timeout=5)
        self.assertEqual(s4.events, [])
        j = self.json_logs(a, "run")
        self.assertEqual((unb64(j["stdout"]), j["ended"]), (b"here\n", False))


# ---------------------------------------------------------------- following

class TestFollow(LogCase):

    def test_follow_ends_with_terminal(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "for i in $(seq 10); do echo tick$i; echo tock$i >&2; sleep 0.1; done; exit 7"],
                    id="f")
        s = self.live(a, "/v1/processes/f/logs?follow=true", timeout=15)
        self.assertEqual(s.status, 200)
        self.assertTrue(s.headers.get("content-type", "").startswith("text/event-stream"), s.headers)
        self.assertNotIn("chunked", s.headers.get("transfer-encoding", ""))
        events = s.events_until_close()
        self.assertTrue(s.closed)
        self.check_events(events)
        got = collect(events)
        self.assertEqual(got["stdout"], b"".join(b"tick%d\n" % i for i in range(1, 11)))
        self.assertEqual(got["stderr"], b"".join(b"tock%d\n" % i for i in range(1, 11)))
        term = events[-1]["json"]
        self.assertEqual(term["state"], "exited")
        self.assertEqual(term["exit"], {"code": 7, "timedOut": False})
        st = a.status("f").json
        self.assertEqual(st["state"], "exited", "terminal event before the process ended")
        self.assertEqual(cursor_seq(term["cursor"]), cursor_seq(events[-2]["id"]))

    def test_follow_terminal_for_killed_process(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo up; exec sleep 30"], id="k")
        s = self.live(a, "/v1/processes/k/logs?follow=1", timeout=15)
        ev = s.next_event()
        self.assertEqual(unb64(ev["json"]["data"]), b"up\n")
        r = a.post("/v1/processes/k/kill", {"signal": 9})
        self.assertEqual(r.status, 204, r)
        rest = s.events_until_close()
        self.assertTrue(rest, "no terminal event")
        self.assertEqual(rest[-1]["json"]["type"], "terminal")
        self.assertEqual(rest[-1]["json"]["exit"], {"code": 137, "signal": 9, "timedOut": False})

    def test_follow_waits_for_output_after_the_root_exits(self):
        """The terminal event comes after every byte, even bytes a background
        child writes after the root exited (in its group or in another)."""
        a = self.agent()
        for pid_id, cmd in (("grp", "echo a; (sleep 0.4; echo b) &"),
                            ("sid", "echo a; setsid sh -c 'sleep 0.4; echo b; echo c >&2' &")):
            a.launch_ok(["sh", "-c", cmd], id=pid_id)
            s = self.live(a, "/v1/processes/%s/logs?follow=1" % pid_id, timeout=10)
            events = s.events_until_close()
            self.check_events(events)
            got = collect(events)
            self.assertEqual(got["stdout"], b"a\nb\n", pid_id)
            self.assertEqual(got["stderr"], b"c\n" if pid_id == "sid" else b"", pid_id)
            self.assertEqual(events[-1]["json"]["exit"]["code"], 0)
            # Replays after the end agree.
            self.assertEqual(collect(self.sse_all(a, pid_id).events), got)

    def test_removing_the_process_ends_its_followers(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo x; exec sleep 30"], id="d")
        s = self.live(a, "/v1/processes/d/logs?follow=1", timeout=10)
        raw = self.live(a, "/v1/processes/d/stdout?follow=1", accept=None, timeout=10)
        self.assertEqual(unb64(s.next_event()["json"]["data"]), b"x\n")
        self.assertEqual(raw.next_chunk(), b"x\n")
        self.assertEqual(a.delete("/v1/processes/d?force=1").status, 204)
        t0 = time.monotonic()
        after = s.events_until_close()
        self.assertNotIn("terminal", [e["json"]["type"] for e in after],
                         "a removed record's stream ends without a terminal event")
        try:
            while raw.next_chunk():
                pass
        except EOFError:
            pass
        self.assertLess(time.monotonic() - t0, scaled(5))
        self.assertTrue(poll(lambda: self.metrics(a)["tend_followers"] == 0))
        self.assertError(a.get("/v1/processes/d/logs"), 404, "not_found")

    def test_bridge_prefix(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo via-bridge"], id="br")
        a.wait_ended("br")
        s = a.sse("/v1/sandbox/box-1/processes/br/logs")
        self.assertEqual(s.status, 200)
        self.assertEqual(collect(s.events)["stdout"], b"via-bridge\n")
        self.assertEqual(a.get("/v1/sandbox/box-1/processes/br/stdout").body, b"via-bridge\n")
        # The bridge's exec is its stable line's SSE, not tend's JSON exec.
        r = a.post("/v1/sandbox/box-1/exec", {"argv": ["echo", "x"]})
        self.assertEqual((r.status, r.header("content-type")), (200, "text/event-stream"))
        self.assertIn(b"event: stdout\ndata: eAo=\n\n", r.body)
        self.assertTrue(r.body.endswith(b'event: exit\ndata: {"exit_code":0}\n\n'), r.body)

    def test_raw_offset_and_follow(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "printf abc; read x; printf def; read y; printf ghi"], id="raw", stdin="pipe")
        self.assertTrue(poll(lambda: a.status("raw").json["stdoutBytes"] == 3))
        # Without follow the raw read ends at the current end, running or not.
        t0 = time.monotonic()
        r = a.get("/v1/processes/raw/stdout", timeout=5)
        self.assertEqual((r.status, r.body), (200, b"abc"))
        self.assertLess(time.monotonic() - t0, scaled(3))
        self.assertEqual(a.get("/v1/processes/raw/stdout?offset=1").body, b"bc")
        self.assertEqual(a.get("/v1/processes/raw/stdout?offset=3").body, b"")
        self.assertEqual(a.get("/v1/processes/raw/stdout?offset=99").body, b"")
        self.assertEqual(a.get("/v1/processes/raw/stderr").body, b"")
        self.assertError(a.get("/v1/processes/raw/stdout?offset=-1"), 400, "invalid_request")
        self.assertError(a.get("/v1/processes/raw/stdout?offset=abc"), 400, "invalid_request")

        s = self.live(a, "/v1/processes/raw/stdout?offset=2&follow=1", accept=None, timeout=10)
        self.assertEqual(s.status, 200)
        self.assertEqual(s.headers.get("content-type"), "application/octet-stream")
        self.assertIn("chunked", s.headers.get("transfer-encoding", "").lower())
        got = s.next_chunk()
        self.assertEqual(got, b"c")
        self.write_stdin(a, "raw", b"x\n")
        while len(got) < 4:
            got += s.next_chunk()
        self.assertEqual(got, b"cdef")
        self.write_stdin(a, "raw", b"y\n", close=True)
        while True:
            c = s.next_chunk()
            if c == b"":
                break
            got += c
        self.assertEqual(got, b"cdefghi")
        self.assertEqual(a.status("raw").json["state"], "exited")

    def test_stalled_reader_does_not_slow_the_process(self):
        """FLOOD bytes to stdout take about as long with a follower that never
        reads as with none; the agent does not buffer the backlog in memory."""
        a = self.agent()
        script = ("read go; s=$(date +%s%N); head -c " + str(FLOOD) + " /dev/zero; e=$(date +%s%N); "
                  "echo $(( (e - s) / 1000000 )) > ")

        def run(pid_id, followers):
            ms_file = os.path.join(a.tmp, pid_id + ".ms")
            a.launch_ok(["sh", "-c", script + ms_file], id=pid_id, stdin="pipe")
            streams = []
            if followers:
                streams.append(self.live(a, "/v1/processes/%s/logs?follow=1" % pid_id, rcvbuf=4096))
                streams.append(self.live(a, "/v1/processes/%s/stdout?follow=1" % pid_id, accept=None,
                                         rcvbuf=4096))
                for s in streams:
                    self.assertEqual(s.status, 200)
                self.assertEqual(self.metrics(a)["tend_followers"], 2)
            rss0 = a.rss_kib()
            t0 = time.monotonic()
            self.write_stdin(a, pid_id, b"go\n", close=True)
            st = a.wait_ended(pid_id, 30000)
            wall = time.monotonic() - t0
            self.assertEqual(st["exit"]["code"], 0, st)
            self.assertEqual(st["stdoutBytes"], FLOOD, st)
            return int(read_file(ms_file)), wall, streams, a.rss_kib() - rss0

        base_ms, base_wall, _, _ = run("base", False)
        slow_ms, slow_wall, streams, rss_growth = run("stalled", True)
        if os.environ.get("TEND_VERBOSE"):
            print("\n  alone %d ms (%.2fs wall), stalled %d ms (%.2fs wall), RSS +%d KiB"
                  % (base_ms, base_wall, slow_ms, slow_wall, rss_growth), file=sys.stderr)
        self.assertLessEqual(slow_ms, 3 * base_ms + 1000,
                             "a stalled follower slowed the writer: %d ms vs %d ms alone" % (slow_ms, base_ms))
        self.assertLessEqual(slow_wall, 3 * base_wall + 1.0)
        # The stalled followers are still there (paused, not dropped) and
        # still deliver valid output once read.
        self.assertEqual(self.metrics(a)["tend_followers"], 2)
        ev = streams[0].next_event()
        self.assertEqual(ev["json"]["type"], "stdout")
        self.assertEqual(set(unb64(ev["json"]["data"])), {0})
        self.assertEqual(set(streams[1].next_chunk()), {0})
        if not SLOW:
            self.assertLess(rss_growth, 16 * 1024, "agent RSS grew %d KiB behind a stalled follower" % rss_growth)
        for s in streams:
            s.close()
        self.assertTrue(poll(lambda: self.metrics(a)["tend_followers"] == 0), "closed followers linger")

    def test_hundred_followers_get_identical_bytes(self):
        a = self.agent()
        src = os.path.join(a.tmp, "src")
        a.launch_ok(["sh", "-c", "read go; for i in $(seq %d); do head -c 10000 /dev/urandom | tee -a %s; "
                     "sleep 0.005; done; echo bye >&2" % (CHATTY_PIECES, src)], id="chat", stdin="pipe")
        n = 100
        streams = [self.live(a, "/v1/processes/chat/logs?follow=1", timeout=60) for _ in range(n)]
        self.assertEqual([s.status for s in streams], [200] * n)
        self.assertTrue(poll(lambda: self.metrics(a)["tend_followers"] == n), "followers not all registered")
        results = [None] * n
        errors = []

        def reader(i):
            try:
                results[i] = streams[i].events_until_close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append((i, repr(e)))

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        self.write_stdin(a, "chat", b"go\n", close=True)
        for t in threads:
            t.join(scaled(90))
        self.assertFalse([t for t in threads if t.is_alive()], "some followers never ended")
        self.assertEqual(errors, [])
        want = read_file(src)
        self.assertEqual(len(want), CHATTY_PIECES * 10000)
        raw = a.get("/v1/processes/chat/stdout").body
        self.assertEqual(sha(raw), sha(want))
        bad = []
        for i, events in enumerate(results):
            got = collect(events)
            term = events[-1]["json"] if events else {}
            if sha(got["stdout"]) != sha(want) or got["stderr"] != b"bye\n" or term.get("type") != "terminal" \
                    or term.get("exit", {}).get("code") != 0:
                bad.append((i, len(got["stdout"]), got["stderr"], term.get("type")))
        self.assertEqual(bad, [], "followers that did not get the exact output")
        self.assertTrue(poll(lambda: self.metrics(a)["tend_followers"] == 0))

    def test_closing_streams_leaves_process_running(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "while :; do echo tick; sleep 0.02; done"], id="t")
        for path, accept in (("logs?follow=1", "text/event-stream"), ("stdout?follow=1", None),
                             ("logs?follow=1&replay=false", "text/event-stream")):
            s = LiveStream(a, "/v1/processes/t/" + path, accept=accept)
            self.assertEqual(s.status, 200)
            if accept:
                self.assertIsNotNone(s.next_event())
            else:
                self.assertTrue(s.next_chunk())
            s.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        # Also a reader that closes before reading anything.
        raw = a.connect()
        raw.sendall(request_bytes("GET", "/v1/processes/t/logs?follow=1", headers={"Accept": "text/event-stream"}))
        raw.close()
        time.sleep(0.2)
        st1 = a.status("t").json
        self.assertEqual(st1["state"], "running", st1)
        time.sleep(0.3)
        st2 = a.status("t").json
        self.assertEqual(st2["state"], "running", st2)
        self.assertGreater(st2["stdoutBytes"], st1["stdoutBytes"], "output stopped growing after a reader left")
        self.assertTrue(poll(lambda: self.metrics(a)["tend_followers"] == 0), "closed followers linger")
        self.assertTrue(a.health())
        self.assertEqual(a.post("/v1/processes/t/kill", {}).status, 204)
        self.assertEqual(a.wait_ended("t")["exit"]["signal"], 15)

    @unittest.skipUnless(shutil.which("curl"), "curl is not installed")
    def test_curl_follows_raw_stream(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo first; sleep 2; echo second"], id="c")
        cmd = ["curl", "-sS", "-N", "-f", "--max-time", str(scaled(20)), "--unix-socket", a.sock,
               "http://x/v1/processes/c/stdout?follow=1"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        out = b""
        end = time.monotonic() + scaled(5)
        while b"first\n" not in out and time.monotonic() < end:
            r, _, _ = select.select([p.stdout], [], [], 0.1)
            if r:
                chunk = os.read(p.stdout.fileno(), 4096)
                if not chunk:
                    break
                out += chunk
        self.assertEqual(out, b"first\n", "curl did not stream the first line promptly")
        self.assertEqual(a.status("c").json["state"], "running", "the first line came only at the end")
        self.assertIsNone(p.poll(), "curl ended before the process")
        rest, err = p.communicate(timeout=scaled(15))
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out + rest, b"first\nsecond\n")
        self.assertEqual(a.status("c").json["state"], "exited")


# ---------------------------------------------------------------- heartbeat

class TestHeartbeat(LogCase):

    def test_ping_comments_on_an_idle_stream(self):
        """An idle follow stream carries `: ping` comments (at least every 15 s)."""
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo hi; exec sleep 60"], id="idle")
        s = self.live(a, "/v1/processes/idle/logs?follow=1", timeout=16)
        t0 = time.monotonic()
        ev = s.next_event()
        self.assertEqual(unb64(ev["json"]["data"]), b"hi\n")
        while b"\n\n" not in s.buf:
            self.assertLess(time.monotonic() - t0, 15.5, "no heartbeat within 15 s")
            self.assertTrue(s._fill(), "the idle stream was closed")
        block = s.buf[:s.buf.index(b"\n\n")]
        self.assertEqual(block.strip(), b": ping", "an idle stream sent %r" % block)
        self.assertEqual(a.status("idle").json["state"], "running")


# ---------------------------------------------------------------- exec

class TestExec(LogCase):

    def exec_ok(self, a, body, timeout=20):
        t0 = time.monotonic()
        r = a.post("/v1/exec", body, timeout=timeout)
        wall = time.monotonic() - t0
        self.assertEqual(r.status, 200, r)
        j = r.json
        self.assertIsInstance(j, dict, r)
        for k in ("id", "exit", "stdout", "stderr", "truncated", "durationMs"):
            self.assertIn(k, j)
        self.assertIsInstance(j["durationMs"], int)
        self.assertGreaterEqual(j["durationMs"], 0)
        return j, wall

    def test_stdin_round_trip(self):
        a = self.agent()
        data = os.urandom(200000) + b"\x00\r\n\xff end"
        j, _ = self.exec_ok(a, {"argv": ["sh", "-c", "cat; echo done >&2"], "stdin": b64(data), "id": "cat"})
        self.assertEqual(j["id"], "cat")
        self.assertEqual(j["exit"], {"code": 0, "timedOut": False})
        self.assertEqual(unb64(j["stdout"]), data)
        self.assertEqual(unb64(j["stderr"]), b"done\n")
        self.assertIs(j["truncated"], False)
        # It is an ordinary process in the table, its logs readable.
        st = a.status("cat").json
        self.assertEqual((st["state"], st["stdoutBytes"]), ("exited", len(data)))
        self.assertEqual(a.get("/v1/processes/cat/stdout").body, data)
        # Without stdin data the process reads EOF (it does not hang).
        j, _ = self.exec_ok(a, {"argv": ["wc", "-c"]})
        self.assertEqual(unb64(j["stdout"]).strip(), b"0")
        self.assertError(a.post("/v1/exec", {"argv": ["cat"], "stdin": "not base64!"}), 400, "invalid_request")
        self.assertError(a.post("/v1/exec", {"argv": ["cat"], "stdin": 5}), 400, "invalid_request")

    def test_timeout(self):
        a = self.agent()
        j, wall = self.exec_ok(a, {"argv": ["sleep", "10"], "timeout": 300})
        self.assertEqual(j["exit"], {"code": 143, "signal": 15, "timedOut": True})
        self.assertLess(j["durationMs"], 5000)
        self.assertGreaterEqual(j["durationMs"], 250)
        self.assertLess(wall, scaled(5))

    def test_background_descendant_does_not_hold_reply(self):
        a = self.agent()
        j, wall = self.exec_ok(a, {"argv": ["sh", "-c", "sleep 30 & echo done"], "id": "bg"})
        self.assertLess(wall, scaled(5), "exec waited for the background child")
        self.assertEqual(unb64(j["stdout"]), b"done\n")
        self.assertEqual(j["exit"]["code"], 0)
        self.assertLess(j["durationMs"], 5000)
        # The same through SSE: the terminal event comes when the root exited.
        t0 = time.monotonic()
        r = a.post("/v1/exec", {"argv": ["sh", "-c", "sleep 30 & echo done2"], "id": "bg2"},
                   headers={"Accept": "text/event-stream"}, timeout=20)
        self.assertLess(time.monotonic() - t0, scaled(5), "exec SSE waited for the background child")
        self.assertEqual(r.status, 200, r)
        events = parse_sse(r.body)
        self.check_events(events)
        self.assertEqual(collect(events)["stdout"], b"done2\n")
        self.assertEqual(events[-1]["json"]["exit"]["code"], 0)

    def test_exec_sse(self):
        a = self.agent()
        r = a.post("/v1/exec", {"argv": ["sh", "-c", "echo out; sleep 0.05; echo err >&2; sleep 0.05; "
                                         "head -c 300000 /dev/zero; exit 5"], "id": "sse"},
                   headers={"Accept": "text/event-stream"}, timeout=20)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("content-type", "").startswith("text/event-stream"), r.headers)
        events = parse_sse(r.body)
        self.check_events(events)
        got = collect(events)
        self.assertEqual(got["stdout"], b"out\n" + b"\x00" * 300000)
        self.assertEqual(got["stderr"], b"err\n")
        self.assertEqual(events[0]["json"]["type"], "stdout")
        self.assertEqual(unb64(events[0]["json"]["data"]), b"out\n")
        self.assertEqual(events[1]["json"]["type"], "stderr")
        term = events[-1]["json"]
        self.assertEqual((term["state"], term["exit"]), ("exited", {"code": 5, "timedOut": False}))
        # The stream's cursors are the process's cursors.
        s = self.sse_all(a, "sse", "?since=" + events[0]["id"])
        self.assertEqual(collect(s.events)["stderr"], b"err\n")

    def test_max_output_bytes(self):
        a = self.agent()
        src = os.path.join(a.tmp, "src")
        j, _ = self.exec_ok(a, {"argv": ["sh", "-c", "head -c 10000 /dev/urandom | tee %s; echo e >&2" % src],
                                "maxOutputBytes": 100, "id": "m"})
        out, full = unb64(j["stdout"]), read_file(src)
        self.assertEqual(len(out), 100)
        self.assertIn(out, (full[:100], full[-100:]))
        self.assertEqual(unb64(j["stderr"]), b"e\n")
        self.assertIs(j["truncated"], True)
        # The full output stays in the logs.
        self.assertEqual(a.get("/v1/processes/m/stdout").body, full)
        # Exactly at the limit is not truncated; the default is 1 MiB per stream.
        j, _ = self.exec_ok(a, {"argv": ["head", "-c", "100", "/dev/zero"], "maxOutputBytes": 100})
        self.assertEqual((len(unb64(j["stdout"])), j["truncated"]), (100, False))
        j, _ = self.exec_ok(a, {"argv": ["head", "-c", "1500000", "/dev/zero"]}, timeout=30)
        self.assertEqual((len(unb64(j["stdout"])), j["truncated"]), (1024 * 1024, True))
        self.assertError(a.post("/v1/exec", {"argv": ["true"], "maxOutputBytes": -1}), 400, "invalid_request")
        self.assertError(a.post("/v1/exec", {"argv": ["true"], "maxOutputBytes": "9"}), 400, "invalid_request")

    def test_exec_sse_many_in_a_row(self):
        """Short exec streams, one after the other: each complete, and the
        agent still alive after each (a use-after-free here kills an ASan
        build)."""
        a = self.agent()
        for i in range(10):
            r = a.post("/v1/exec", {"argv": ["echo", "hi%d" % i]}, headers={"Accept": "text/event-stream"})
            self.assertEqual(r.status, 200, r)
            events = parse_sse(r.body)
            self.check_events(events)
            self.assertEqual(collect(events)["stdout"], b"hi%d\n" % i)
            self.assertAlive(a, settle=0.05)

    def test_exec_sse_timeout_and_stdin(self):
        a = self.agent()
        r = a.post("/v1/exec", {"argv": ["sh", "-c", "cat; exec sleep 10"], "timeout": 300,
                                "stdin": b64(b"fed\n")},
                   headers={"Accept": "text/event-stream"}, timeout=20)
        self.assertEqual(r.status, 200, r)
        events = parse_sse(r.body)
        self.check_events(events)
        self.assertEqual(collect(events)["stdout"], b"fed\n")
        self.assertEqual(events[-1]["json"]["exit"], {"code": 143, "signal": 15, "timedOut": True})

    def test_closing_an_exec_connection_leaves_the_process(self):
        a = self.agent()
        for accept in ("application/json", "text/event-stream"):
            pid_id = "x" + accept[:4]
            sock = a.connect()
            body = json.dumps({"argv": ["sh", "-c", "sleep 0.5; echo finished"], "id": pid_id}).encode()
            sock.sendall(request_bytes("POST", "/v1/exec", body, {"Content-Type": "application/json",
                                                                  "Accept": accept}))
            self.assertTrue(poll(lambda: a.status(pid_id).status == 200), "exec never started")
            sock.close()
            self.assertEqual(a.status(pid_id).json["state"], "running")
            st = a.wait_ended(pid_id)
            self.assertEqual(st["exit"]["code"], 0, st)
            self.assertEqual(a.get("/v1/processes/%s/stdout" % pid_id).body, b"finished\n")

    def test_spawn_failure(self):
        a = self.agent()
        r = a.post("/v1/exec", {"argv": ["/nonexistent/binary"], "id": "nx"})
        j = self.assertError(r, 422, "spawn_failed")
        self.assertEqual(j.get("errno"), "ENOENT", j)
        self.assertError(a.status("nx"), 404, "not_found")
        r = a.post("/v1/exec", {"argv": ["true"], "cwd": "/nonexistent/dir", "id": "nd"})
        self.assertError(r, 422, "spawn_failed")
        self.assertError(a.status("nd"), 404, "not_found")
        r = a.post("/v1/exec", {"argv": ["/nonexistent/binary"]}, headers={"Accept": "text/event-stream"})
        self.assertError(r, 422, "spawn_failed")
        self.assertError(a.post("/v1/exec", {"argv": []}), 400, "invalid_request")


def parse_sse(body):
    """Events of a whole SSE body."""
    out = []
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        ev = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if field in ev:
                raise AssertionError("an event with two %r lines: %r" % (field, block[:200]))
            ev[field] = value[1:] if value.startswith(" ") else value
        if ev:
            ev["json"] = json.loads(ev["data"]) if "data" in ev else None
            out.append(ev)
    return out


# ---------------------------------------------------------------- disk bound, metrics

class TestBoundAndMetrics(LogCase):

    def test_truncated_event_after_disk_bound(self):
        a = self.agent()
        src = os.path.join(a.tmp, "src")
        bound, n = 65536, 1000000
        a.launch_ok(["sh", "-c", "head -c %d /dev/urandom | tee %s; echo tail >&2" % (n, src)],
                    id="tr", maxLogBytes=bound)
        st = a.wait_ended("tr")
        full = read_file(src)
        self.assertEqual((st["stdoutBytes"], st["stderrBytes"]), (n, 5), st)
        self.assertEqual(st["droppedBytes"], 0, "the disk bound is not a storage failure")

        s = self.sse_all(a, "tr")
        self.check_events(s.events)
        types = [e["json"]["type"] for e in s.events]
        self.assertIn("truncated", types)
        first = s.events[0]["json"]
        self.assertEqual(first["type"], "truncated", types[:5])
        self.assertIsInstance(first["skippedBytes"], int)
        self.assertGreater(first["skippedBytes"], 0)
        kept = collect(s.events)["stdout"]
        self.assertGreater(len(kept), 0)
        self.assertLessEqual(len(kept), bound, "more than maxLogBytes retained")
        self.assertEqual(kept, full[-len(kept):], "retained bytes are not the newest")
        skipped = sum(e["json"]["skippedBytes"] for e in s.events if e["json"]["type"] == "truncated")
        self.assertEqual(skipped + len(kept), n, "skippedBytes does not account for the dropped bytes")
        self.assertEqual(collect(s.events)["stderr"], b"tail\n")
        self.assertMatchesSource(s.events, full)

        # Offsets stay absolute on the raw route.
        self.assertEqual(a.get("/v1/processes/tr/stdout?offset=%d" % (n - 100)).body, full[-100:])
        raw = a.get("/v1/processes/tr/stdout").body
        self.assertEqual(raw, full[-len(raw):])
        self.assertLessEqual(len(raw), bound)
        # The JSON poll returns a suffix too.
        j = self.json_logs(a, "tr", "?limitBytes=100000000")
        o = unb64(j["stdout"])
        self.assertEqual(o, full[-len(o):] if o else b"")
        self.assertTrue(j["ended"])
        if "skippedBytes" in j:
            self.assertEqual(j["skippedBytes"] + len(o), n, "JSON skippedBytes does not account for the drop")
        # The stored file holds no more than the bound (holes punched).
        blocks = os.stat(os.path.join(a.proc_dir(st["bootId"], "tr"), "stdout")).st_blocks * 512
        self.assertLess(blocks, n // 2, "the dropped bytes still take disk space")

    def test_since_pointing_at_dropped_bytes(self):
        """A cursor taken before the bound dropped what follows it resumes
        with a truncated event, then the retained bytes."""
        a = self.agent()
        src1, src2 = os.path.join(a.tmp, "src1"), os.path.join(a.tmp, "src2")
        a.launch_ok(["sh", "-c", "head -c 10000 /dev/urandom | tee %s; read go; "
                     "head -c 1000000 /dev/urandom | tee %s" % (src1, src2)],
                    id="sd", maxLogBytes=65536, stdin="pipe")
        self.assertTrue(poll(lambda: a.status("sd").json["stdoutBytes"] == 10000))
        early = self.sse_all(a, "sd", timeout=5)
        self.assertEqual(collect(early.events)["stdout"], read_file(src1))
        cur = early.events[-1]["id"]
        self.write_stdin(a, "sd", b"go\n", close=True)
        a.wait_ended("sd")
        after = read_file(src2)
        for headers, query in ((None, "?since=" + cur), ({"Last-Event-ID": cur}, "")):
            s = self.sse_all(a, "sd", query, headers=headers)
            self.check_events(s.events)
            self.assertEqual(s.events[0]["json"]["type"], "truncated", s.events[:2])
            skipped = self.assertMatchesSource(s.events, after)
            self.assertGreaterEqual(skipped, len(after) - 65536 - 65536)

    def test_stalled_follower_overtaken_by_the_bound(self):
        """A follower too slow for the bound gets truncated events where its
        bytes were dropped, and every byte it does get is in place."""
        a = self.agent()
        src = os.path.join(a.tmp, "src")
        n = 3 * MB
        a.launch_ok(["sh", "-c", "read go; head -c %d /dev/urandom | tee %s" % (n, src)],
                    id="ov", maxLogBytes=65536, stdin="pipe")
        s = self.live(a, "/v1/processes/ov/logs?follow=1", rcvbuf=4096, timeout=30)
        self.assertEqual(s.status, 200)
        self.write_stdin(a, "ov", b"go\n", close=True)
        st = a.wait_ended("ov")
        self.assertEqual(st["stdoutBytes"], n)
        events = s.events_until_close()
        self.check_events(events)
        self.assertTrue([e for e in events if e["json"]["type"] == "truncated"], "no truncated event")
        skipped = self.assertMatchesSource(events, read_file(src))
        self.assertGreater(skipped, n // 2)

    def test_metrics_counters_move(self):
        a = self.agent()
        m0 = self.metrics(a)
        for k in ("tend_processes_started_total", "tend_processes_running", "tend_processes_exited_total",
                  "tend_orphans_reaped_total", "tend_bytes_stored_total", "tend_bytes_dropped_total",
                  "tend_connections", "tend_followers"):
            self.assertIn(k, m0)
            self.assertGreaterEqual(m0[k], 0)
        self.assertGreaterEqual(m0["tend_connections"], 1)
        a.launch_ok(["sh", "-c", "head -c 100000 /dev/zero; read x"], id="m", stdin="pipe")
        m1 = self.metrics(a)
        self.assertEqual(m1["tend_processes_started_total"], m0["tend_processes_started_total"] + 1)
        self.assertEqual(m1["tend_processes_running"], m0["tend_processes_running"] + 1)
        s = self.live(a, "/v1/processes/m/logs?follow=1")
        self.assertEqual(s.status, 200)
        m2 = self.metrics(a)
        self.assertEqual(m2["tend_followers"], m0["tend_followers"] + 1)
        self.assertGreaterEqual(m2["tend_connections"], 2)
        self.write_stdin(a, "m", b"x\n", close=True)
        s.events_until_close()
        a.wait_ended("m")
        m3 = poll(lambda: (lambda m: m if m["tend_followers"] == m0["tend_followers"] else None)(self.metrics(a)))
        self.assertTrue(m3, "the follower gauge did not come back down")
        self.assertEqual(m3["tend_processes_exited_total"], m0["tend_processes_exited_total"] + 1)
        self.assertEqual(m3["tend_processes_running"], m0["tend_processes_running"])
        self.assertGreaterEqual(m3["tend_bytes_stored_total"] - m0["tend_bytes_stored_total"], 100000)
        self.assertEqual(m3["tend_bytes_dropped_total"], 0)
        # An orphan: a daemonized grandchild reparented to the agent (PID 1).
        a.launch_ok(["sh", "-c", "(sleep 0.2 &) ; exit 0"], id="orph")
        self.assertTrue(poll(lambda: self.metrics(a)["tend_orphans_reaped_total"] > m3["tend_orphans_reaped_total"],
                             timeout=5), "orphan reaping not counted")


class TestRawFromFile(LogCase):
    """An ended record's raw stream goes from its file to the socket by the
    kernel (sendfile), in chunks that a full socket breaks off and the
    next turn finishes."""

    SIZE = 5 * 1024 * 1024 + 9         # no multiple of a pump's share

    def ended(self, a, pid_id):
        a.launch_ok(["sh", "-c", "head -c %d /dev/urandom; printf err >&2" % self.SIZE], id=pid_id)
        st = a.wait_ended(pid_id, timeout_ms=30000)
        want = read_file(os.path.join(a.proc_dir(st["bootId"], pid_id), "stdout"))
        self.assertEqual(len(want), self.SIZE)
        return want

    def test_slow_reader_gets_every_byte_and_the_connection_goes_on(self):
        a = self.agent()
        want = self.ended(a, "big")
        s = a.connect(timeout=scaled(30))
        self.addCleanup(s.close)
        # Pipelined: the stream from an odd offset, stderr, then one that
        # closes.  Nothing is read for a moment: the socket fills inside
        # a chunk, and the rest of it comes turns later.
        s.sendall(request_bytes("GET", "/v1/processes/big/stdout?offset=7") +
                  request_bytes("GET", "/v1/processes/big/stderr") +
                  request_bytes("GET", "/v1/processes/big/stdout?offset=%d" % (self.SIZE - 3),
                                headers={"Connection": "close"}))
        time.sleep(scaled(0.3))
        data = []
        while True:
            b = s.recv(16384)
            if not b:
                break
            data.append(b)
            if len(data) % 64 == 0:
                time.sleep(0.01)
        rs = strict_responses(b"".join(data))
        self.assertEqual([r[0] for r in rs], [200, 200, 200])
        self.assertEqual(rs[0][1].get("transfer-encoding"), "chunked")
        self.assertEqual(sha(rs[0][2]), sha(want[7:]))
        self.assertEqual(rs[1][2], b"err")
        self.assertEqual(rs[2][2], want[-3:])

    def test_http10_reader_gets_it_delimited_by_the_close(self):
        a = self.agent()
        want = self.ended(a, "big")
        s = a.connect(timeout=scaled(30))
        self.addCleanup(s.close)
        s.sendall(b"GET /v1/processes/big/stdout?offset=1 HTTP/1.0\r\n\r\n")
        data = []
        while True:
            b = s.recv(1 << 20)
            if not b:
                break
            data.append(b)
        (st, hd, body), = strict_responses(b"".join(data))
        self.assertEqual(st, 200)
        self.assertNotIn("transfer-encoding", hd)
        self.assertEqual(sha(body), sha(want[1:]))

    def test_reader_gone_mid_stream_is_let_go(self):
        # It had shut its sending half (nothing is read from it any more),
        # then it goes with the socket full: the failed sendfile ends the
        # stream and the follower, at once.
        a = self.agent()
        self.ended(a, "big")
        s = self.live(a, "/v1/processes/big/stdout", accept=None, rcvbuf=4096)
        s.sock.shutdown(socket.SHUT_WR)
        s.sock.recv(4096)
        self.assertEqual(self.metrics(a)["tend_followers"], 1)
        s.sock.close()
        s.closed = True
        gone = poll(lambda: self.metrics(a)["tend_followers"] == 0, 5)
        self.assertTrue(gone, self.metrics(a))

    def test_stuck_reader_of_an_ended_record_is_dropped(self):
        a = self.agent(extra=("--stuck-timeout", "1"))
        self.ended(a, "big")
        s = self.live(a, "/v1/processes/big/stdout", accept=None, rcvbuf=4096)
        self.assertEqual(s.status, 200)
        self.assertEqual(self.metrics(a)["tend_followers"], 1)
        gone = poll(lambda: self.metrics(a)["tend_followers"] == 0, 10)
        self.assertTrue(gone, self.metrics(a))
        self.assertIn("reason=stuck", a.log_text())


if __name__ == "__main__":
    unittest.main()


class TestStuckReader(LogCase):

    def test_reader_stuck_past_the_timeout_is_dropped(self):
        # A follower whose socket stays full is paused, then dropped after
        # --stuck-timeout; the process it watched is untouched.
        a = self.agent(extra=("--stuck-timeout", "1"))
        a.launch_ok(["sh", "-c", "head -c 8000000 /dev/urandom; sleep 3; echo done"], id="chatty")
        s = LiveStream(a, "/v1/processes/chatty/stdout?follow=1", accept=None, rcvbuf=4096)
        self.addCleanup(s.sock.close)
        self.assertEqual(s.status, 200)
        self.assertEqual(self.metrics(a)["tend_followers"], 1)
        # Never read: the agent's output stops moving and the reader goes.
        gone = poll(lambda: self.metrics(a)["tend_followers"] == 0, 10)
        self.assertTrue(gone, self.metrics(a))
        self.assertIn("reason=stuck", a.log_text())
        st = a.wait_ended("chatty", timeout_ms=20000)
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertEqual(st["stdoutBytes"], 8000005, st)
