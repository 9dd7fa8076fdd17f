"""Black-box tests of the process table (DESIGN §2 boots, §3 state dir, §4
Processes): launch, status, list, validation, kill, timeouts, stdin, IDs,
spawn failures, the records on disk, secrets, restarts and stale boots,
large output and a full disk."""
import hashlib
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (AgentTestCase, HEX32, ID_RE, RFC3339_MS, SLOW, ResponseReader, UnixHTTPConnection,  # noqa: E402
                     group_members, poll, read_file, request_bytes, scaled, strict_responses)

STATUS_FIELDS = ("id", "pid", "command", "cwd", "startedAt", "state", "bootId",
                 "stdoutBytes", "stderrBytes", "droppedBytes", "tags")


class ProcCase(AgentTestCase):

    def assertExit(self, st, code, sig=None, timed_out=False):
        self.assertEqual(st.get("state"), "exited", st)
        e = st.get("exit")
        self.assertIsInstance(e, dict, st)
        self.assertEqual(e.get("code"), code, st)
        if sig is None:
            self.assertIsNone(e.get("signal"), st)
        else:
            self.assertEqual(e.get("signal"), sig, st)
        self.assertIs(e.get("timedOut"), timed_out, st)

    def ids(self, r):
        self.assertEqual(r.status, 200, r)
        self.assertIsInstance(r.json, list, r)
        return sorted(p["id"] for p in r.json)

    def stdout(self, a, pid_id, stream="stdout", headers=None):
        r = a.get("/v1/processes/%s/%s" % (pid_id, stream), headers=headers)
        self.assertEqual(r.status, 200, r)
        return r.body


def contains_value(obj, target):
    """True if target equals obj or any value nested inside it."""
    if obj == target:
        return True
    if isinstance(obj, dict):
        return any(contains_value(v, target) for v in obj.values())
    if isinstance(obj, list):
        return any(contains_value(v, target) for v in obj)
    return False


# ---------------------------------------------------------------- launch, status, list

class TestLaunch(ProcCase):

    def test_launch_status_list(self):
        a = self.agent()
        boot = a.health()["bootId"]
        r = a.launch(["sleep", "100"], id="s1", tags={"k": "v"})
        self.assertEqual(r.status, 200, r)
        st = r.json
        for k in STATUS_FIELDS:
            self.assertIn(k, st)
        self.assertEqual(st["id"], "s1")
        self.assertEqual(st["state"], "running")
        self.assertEqual(st["command"], ["sleep", "100"])
        self.assertEqual(st["bootId"], boot)
        self.assertEqual(st["tags"], {"k": "v"})
        self.assertIs(type(st["pid"]), int)
        self.assertGreater(st["pid"], 1)
        self.assertRegex(st["startedAt"], RFC3339_MS)
        self.assertIsInstance(st["cwd"], str)
        for k in ("stdoutBytes", "stderrBytes", "droppedBytes"):
            self.assertIs(type(st[k]), int, k)
        g = a.status("s1")
        self.assertEqual(g.status, 200, g)
        self.assertEqual((g.json["id"], g.json["pid"], g.json["state"]), ("s1", st["pid"], "running"))

        a.launch_ok(["sh", "-c", "echo out; echo err >&2; exit 3"], id="e1")
        e1 = a.wait_ended("e1")
        self.assertExit(e1, 3)
        self.assertRegex(e1.get("endedAt", ""), RFC3339_MS)
        self.assertEqual((e1["stdoutBytes"], e1["stderrBytes"], e1["droppedBytes"]), (4, 4, 0))
        self.assertEqual(e1["tags"], {})

        self.assertEqual(self.ids(a.get("/v1/processes")), ["e1", "s1"])
        self.assertEqual(self.ids(a.get("/v1/processes?state=running")), ["s1"])
        self.assertEqual(self.ids(a.get("/v1/processes?state=exited")), ["e1"])
        self.assertEqual(self.ids(a.get("/v1/processes?state=error")), [])
        self.assertError(a.get("/v1/processes?state=bogus"), 400, "invalid_request")
        procs = a.health()["processes"]
        self.assertEqual((procs["running"], procs["total"]), (1, 2), procs)
        self.assertError(a.status("nope"), 404, "not_found")

    def test_exit_codes_and_signals(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "exit 255"], id="c255")
        a.launch_ok(["sh", "-c", "exit 0"], id="c0")
        a.launch_ok(["sh", "-c", "kill -USR1 $$"], id="usr1")
        self.assertExit(a.wait_ended("c255"), 255)
        self.assertExit(a.wait_ended("c0"), 0)
        self.assertExit(a.wait_ended("usr1"), 138, sig=10)

    def test_cwd_and_path_lookup(self):
        a = self.agent()
        st = a.launch_ok(["pwd"], id="pwd", cwd="/usr")
        self.assertEqual(st["cwd"], "/usr")
        self.assertExit(a.wait_ended("pwd"), 0)
        self.assertEqual(self.stdout(a, "pwd"), b"/usr\n")

    def test_validation(self):
        a = self.agent()
        vectors = [
            {"argv": []},
            {"argv": ["echo", 123]},
            {"argv": [""]},
            {"argv": ["echo", None]},
            {"argv": ["ec\u0000ho"]},
            {"argv": "echo hi"},
            {"argv": None},
            {},
            {"id": "noargv"},
            {"argv": ["true"], "timeout": "1000"},
            {"argv": ["true"], "timeout": 0},
            {"argv": ["true"], "timeout": -1},
            {"argv": ["true"], "timeout": None},
            {"argv": ["true"], "env": ["A=B"]},
            {"argv": ["true"], "env": {"A": 1}},
            {"argv": ["true"], "env": {"A": None}},
            {"argv": ["true"], "env": {"A=B": "x"}},
            {"argv": ["true"], "env": {"": "x"}},
            {"argv": ["true"], "env": "A=B"},
            {"argv": ["true"], "id": "bad/id"},
            {"argv": ["true"], "id": "x" * 129},
            {"argv": ["true"], "id": ""},
            {"argv": ["true"], "id": 5},
            {"argv": ["true"], "stdin": "bogus"},
            {"argv": ["true"], "stdin": True},
            {"argv": ["true"], "cwd": 7},
            {"argv": ["true"], "killGrace": -5},
            {"argv": ["true"], "killGrace": "5"},
            [],
            ["true"],
            "argv",
            42,
            None,
        ]
        bad = []
        for v in vectors:
            r = a.post("/v1/processes", json.dumps(v).encode(), headers={"Content-Type": "application/json"})
            j = r.json if isinstance(r.json, dict) else {}
            if r.status != 400 or j.get("code") != "invalid_request" or not isinstance(j.get("error"), str):
                bad.append((v if len(json.dumps(v)) < 80 else json.dumps(v)[:80], r.status, r.body[:120]))
        for raw in (b"{not json", b"{\"argv\": [\"true\"]} trailing", b"", b"\xff\xfe",
                    b"{\"argv\": [\"tr\xffue\"]}"):
            r = a.post("/v1/processes", raw, headers={"Content-Type": "application/json"})
            j = r.json if isinstance(r.json, dict) else {}
            if r.status != 400 or j.get("code") != "invalid_request":
                bad.append((raw, r.status, r.body[:120]))
        self.assertEqual(bad, [], "vectors not refused with 400 invalid_request")
        self.assertEqual(a.get("/v1/processes").json, [], "a refused launch left a record")
        self.assertEqual(a.health()["processes"]["total"], 0)

    def test_argv_reaches_program_untouched(self):
        a = self.agent()
        arg = "$(id) ; | & `x` \"q\" 'q' \\ * ~ \n\t end"
        a.launch_ok(["printf", "%s", arg], id="shell")
        self.assertExit(a.wait_ended("shell"), 0)
        self.assertEqual(self.stdout(a, "shell"), arg.encode())
        utf = "h\u00e9llo \u2603 \U0001F600"
        a.launch_ok(["printf", "%s", utf], id="utf")
        a.wait_ended("utf")
        self.assertEqual(self.stdout(a, "utf"), utf.encode())

    def test_many_quick_processes(self):
        a = self.agent()
        for i in range(100):
            a.launch_ok(["sh", "-c", "exit %d" % (i % 7)], id="q%d" % i)
        for i in range(100):
            self.assertExit(a.wait_ended("q%d" % i), i % 7)
        self.assertEqual(poll(lambda: not a.zombies(), 2), True, a.zombies())
        procs = a.health()["processes"]
        self.assertEqual((procs["running"], procs["total"]), (0, 100), procs)


# ---------------------------------------------------------------- the child's world

class TestChild(ProcCase):

    def test_isolation(self):
        """Own session and group, clean signal state, only fds 0-2, stdin /dev/null."""
        a = self.agent()
        # Each probe is exec'd by the agent itself: a shell in between would
        # show its own transient masks (dash blocks every signal around fork).
        a.launch_ok(["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"], id="sig")
        a.launch_ok(["ls", "/proc/self/fd"], id="fds")       # 0-2 plus ls's own directory fd 3
        a.launch_ok(["readlink", "/proc/self/fd/0"], id="stdin")
        st = a.launch_ok(["sleep", "100"], id="iso")
        host = poll(lambda: a.host_pid_of(st["pid"]), 3)
        self.assertTrue(host, "no host pid for ns pid %s" % st["pid"])
        with open("/proc/%d/status" % host) as f:
            status = dict(ln.split(":", 1) for ln in f.read().splitlines() if ":" in ln)
        self.assertEqual(int(status["NSpgid"].split()[-1]), st["pid"], "not its own process group")
        self.assertEqual(int(status["NSsid"].split()[-1]), st["pid"], "not its own session")
        self.assertEqual(int(status["SigBlk"], 16), 0, "blocked signals: %s" % status["SigBlk"])
        self.assertEqual(int(status["SigIgn"], 16), 0, "ignored signals: %s" % status["SigIgn"])
        for i in ("sig", "fds", "stdin"):
            self.assertExit(a.wait_ended(i), 0)
        sig = dict(ln.split(":") for ln in self.stdout(a, "sig").decode().splitlines())
        self.assertEqual(int(sig["SigBlk"], 16), 0, "child inherited a blocked signal mask: %s" % sig)
        self.assertEqual(int(sig["SigIgn"], 16), 0, "child inherited ignored signals: %s" % sig)
        self.assertEqual(self.stdout(a, "fds").split(), [b"0", b"1", b"2", b"3"], "agent fds leaked into the child")
        self.assertEqual(self.stdout(a, "stdin"), b"/dev/null\n", "stdin is /dev/null by default")

    def test_child_env(self):
        a = self.agent(env={"TEND_LEAK": "1", "BASE_ONLY": "base", "BASE_OVER": "base"})
        a.launch_ok(["env"], id="env", env={"MINE": "m i n e", "BASE_OVER": "mine", "EMPTY": ""})
        self.assertExit(a.wait_ended("env"), 0)
        lines = self.stdout(a, "env").decode().splitlines()
        self.assertIn("MINE=m i n e", lines)
        self.assertIn("EMPTY=", lines)
        self.assertIn("BASE_ONLY=base", lines, "the agent's own environment is the base")
        self.assertIn("BASE_OVER=mine", lines, "a request's env overrides the base")
        self.assertNotIn("BASE_OVER=base", lines)
        self.assertEqual([ln for ln in lines if ln.startswith("TEND_")], [], "TEND_* leaked to the child")

    def test_user(self):
        try:
            import pwd
            pwd.getpwnam("nobody")
        except (ImportError, KeyError):
            self.skipTest("no user 'nobody'")
        a = self.agent()
        a.launch_ok(["sh", "-c", "id -u; id -g"], id="u1", user="nobody")
        a.launch_ok(["id", "-u"], id="u2", user="65534")
        self.assertExit(a.wait_ended("u1"), 0)
        self.assertExit(a.wait_ended("u2"), 0)
        self.assertEqual(self.stdout(a, "u1").split()[0], b"65534")
        self.assertEqual(self.stdout(a, "u2"), b"65534\n")
        r = a.launch(["true"], id="u3", user="no-such-user-xyz")
        self.assertIn(r.status, (400, 422), r)


# ---------------------------------------------------------------- kill, timeouts, groups

class TestKill(ProcCase):

    def test_kill_default_and_explicit(self):
        a = self.agent()
        for i in range(3):
            a.launch_ok(["sleep", "100"], id="k%d" % i)
        r0 = a.post("/v1/processes/k0/kill")          # no body at all
        r1 = a.post("/v1/processes/k1/kill", {})
        r2 = a.post("/v1/processes/k2/kill", {"signal": 9})
        for r in (r0, r1, r2):
            self.assertEqual(r.status, 204, r)
            self.assertEqual(r.body, b"")
        self.assertExit(a.wait_ended("k0"), 143, sig=15)
        self.assertExit(a.wait_ended("k1"), 143, sig=15)
        self.assertExit(a.wait_ended("k2"), 137, sig=9)

    def test_kill_bad_signal(self):
        a = self.agent()
        a.launch_ok(["sleep", "100"], id="k")
        bad = []
        for body in ({"signal": 0}, {"signal": 65}, {"signal": 1.5}, {"signal": "TERM"}, {"signal": None},
                     {"signal": -9}, {"signal": True}, {"signal": 9e99}, [], [9], "x", 9, None):
            r = a.post("/v1/processes/k/kill", json.dumps(body).encode(),
                       headers={"Content-Type": "application/json"})
            j = r.json if isinstance(r.json, dict) else {}
            if r.status != 400 or j.get("code") != "invalid_request":
                bad.append((body, r.status, r.body[:100]))
        r = a.post("/v1/processes/k/kill", b"{\"signal\":", headers={"Content-Type": "application/json"})
        if r.status != 400:
            bad.append(("malformed", r.status, r.body[:100]))
        self.assertEqual(bad, [], "bad kill bodies not refused with 400 invalid_request")
        time.sleep(0.1)
        self.assertEqual(a.status("k").json["state"], "running", "a refused kill signalled the process")
        self.assertEqual(a.post("/v1/processes/k/kill", {"signal": 64}).status, 204)

    def test_kill_after_exit_and_unknown(self):
        a = self.agent()
        a.launch_ok(["true"], id="t")
        a.wait_ended("t")
        self.assertError(a.post("/v1/processes/t/kill", b""), 409, "not_running")
        self.assertError(a.post("/v1/processes/nope/kill", b""), 404, "not_found")

    def test_no_interrupt_or_terminate(self):
        a = self.agent()
        a.launch_ok(["sleep", "100"], id="x")
        self.assertError(a.post("/v1/processes/x/interrupt", b""), 404, "not_found")
        self.assertError(a.post("/v1/processes/x/terminate", b""), 404, "not_found")
        self.assertEqual(a.status("x").json["state"], "running")

    def test_group_settles_before_exited(self):
        a = self.agent()
        t0 = time.monotonic()
        a.launch_ok(["sh", "-c", "sleep 1 & exit 0"], id="bg")
        time.sleep(0.3)
        self.assertEqual(a.status("bg").json["state"], "running",
                         "the root exited but a member of its group lives: still running")
        st = a.wait_ended("bg")
        took = time.monotonic() - t0
        self.assertExit(st, 0)
        self.assertGreaterEqual(took, 0.8, "exited before the group settled (%.2f s)" % took)

    def test_kill_reaches_whole_group(self):
        a = self.agent()
        st = a.launch_ok(["sh", "-c", "sleep 100 & sleep 100 & wait"], id="grp")
        host = poll(lambda: a.host_pid_of(st["pid"]), 3)
        self.assertTrue(host)
        self.assertTrue(poll(lambda: len(group_members(host)) == 3, 3),
                        "group %d: %s" % (host, group_members(host)))
        self.assertEqual(a.post("/v1/processes/grp/kill", b"").status, 204)
        self.assertEqual(poll(lambda: group_members(host) == [], 3), True,
                         "processes left in the killed group: %s" % group_members(host))
        st = a.wait_ended("grp")
        self.assertEqual(st["exit"]["signal"], 15)

    def test_timeout_ignoring_term(self):
        a = self.agent()
        t0 = time.monotonic()
        a.launch_ok(["sh", "-c", "trap '' TERM; sleep 100"], id="stub", timeout=300, killGrace=300)
        st = a.wait_ended("stub", 5000)
        took = time.monotonic() - t0
        self.assertExit(st, 137, sig=9, timed_out=True)
        self.assertGreaterEqual(took, 0.55, "KILL came before timeout + killGrace (%.2f s)" % took)
        self.assertLess(took, scaled(1.5), "timeout + grace took %.2f s" % took)

    def test_timeout_respecting_term(self):
        a = self.agent()
        t0 = time.monotonic()
        a.launch_ok(["sleep", "100"], id="pol", timeout=300)
        st = a.wait_ended("pol", 5000)
        took = time.monotonic() - t0
        self.assertExit(st, 143, sig=15, timed_out=True)
        self.assertGreaterEqual(took, 0.25)
        self.assertLess(took, scaled(1.5))

    def test_timeout_not_reached(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "exit 4"], id="fast", timeout=5000)
        self.assertExit(a.wait_ended("fast"), 4)

    def test_wait_timeout_returns_running(self):
        a = self.agent()
        a.launch_ok(["sleep", "5"], id="w")
        t0 = time.monotonic()
        r = a.post("/v1/processes/w/wait?timeout=200", b"")
        took = time.monotonic() - t0
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["state"], "running")
        self.assertGreaterEqual(took, 0.15)
        self.assertLess(took, scaled(2))
        self.assertError(a.post("/v1/processes/nope/wait?timeout=10", b""), 404, "not_found")


# ---------------------------------------------------------------- IDs and spawn failures

class TestIds(ProcCase):

    def test_taken(self):
        a = self.agent()
        a.launch_ok(["sleep", "100"], id="dup")
        self.assertError(a.launch(["true"], id="dup"), 409, "id_taken")
        a.launch_ok(["true"], id="done")
        a.wait_ended("done")
        self.assertError(a.launch(["true"], id="done"), 409, "id_taken")
        self.assertEqual(a.status("done").json["command"], ["true"], "the taken record was replaced")

    def test_generated(self):
        a = self.agent()
        seen = set()
        for _ in range(5):
            st = a.launch_ok(["true"])
            self.assertRegex(st["id"], ID_RE)
            seen.add(st["id"])
        self.assertEqual(len(seen), 5, "generated IDs repeat")
        for i in seen:
            self.assertEqual(a.status(i).status, 200)

    def test_valid_and_invalid(self):
        a = self.agent()
        for good in ("a", "Z", "0", "A.b_c-9", "a" * 128, "x..y", "web-1.2_3"):
            r = a.launch(["true"], id=good)
            self.assertEqual(r.status, 200, (good, r))
            self.assertEqual(r.json["id"], good)
            self.assertEqual(a.status(good).status, 200)
        for bad in (".x", "-x", "_x", "x y", "x/y", "x\\y", "..", "x" * 129, "\u00e9", "x\ny", "x%2Fy"):
            self.assertError(a.launch(["true"], id=bad), 400, "invalid_request")

    def test_spawn_failed(self):
        a = self.agent()
        j = self.assertError(a.launch(["/no/such/bin"], id="s1"), 422, "spawn_failed")
        self.assertEqual(j.get("errno"), "ENOENT", j)
        j = self.assertError(a.launch(["no-such-command-xyz"], id="s2"), 422, "spawn_failed")
        self.assertEqual(j.get("errno"), "ENOENT", j)
        j = self.assertError(a.launch(["true"], id="s3", cwd="/no/such/dir"), 422, "spawn_failed")
        self.assertEqual(j.get("errno"), "ENOENT", j)
        path = os.path.join(a.tmp, "noexec")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(path, 0o644)
        j = self.assertError(a.launch([path], id="s4"), 422, "spawn_failed")
        self.assertEqual(j.get("errno"), "EACCES", j)
        for i in ("s1", "s2", "s3", "s4"):
            self.assertError(a.status(i), 404, "not_found")
        self.assertEqual(a.get("/v1/processes").json, [], "a failed spawn left a record")
        boot = a.health()["bootId"]
        self.assertFalse(os.path.exists(a.proc_dir(boot, "s1")), "a failed spawn left files")
        st = a.launch_ok(["true"], id="s1")
        self.assertEqual(st["id"], "s1", "an ID is free again after a spawn failure")
        self.assertExit(a.wait_ended("s1"), 0)
        self.assertEqual(poll(lambda: not a.zombies(), 2), True)


# ---------------------------------------------------------------- stdin

class TestStdin(ProcCase):

    def test_pipe_round_trip(self):
        a = self.agent()
        a.launch_ok(["cat"], id="cat", stdin="pipe")
        self.assertEqual(a.post("/v1/processes/cat/stdin", b"hello\n").status, 204)
        self.assertEqual(a.post("/v1/processes/cat/stdin?close=1", b"\x00world\xff\n").status, 204)
        self.assertExit(a.wait_ended("cat"), 0)
        self.assertEqual(self.stdout(a, "cat"), b"hello\n\x00world\xff\n")
        self.assertError(a.post("/v1/processes/cat/stdin", b"late"), 409)

    def test_after_close_while_running(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "cat; echo eof; sleep 100"], id="c", stdin="pipe")
        self.assertEqual(a.post("/v1/processes/c/stdin?close=1", b"x\n").status, 204)
        self.assertTrue(poll(lambda: self.stdout(a, "c") == b"x\neof\n", 3), self.stdout(a, "c"))
        self.assertEqual(a.status("c").json["state"], "running")
        self.assertError(a.post("/v1/processes/c/stdin", b"more"), 409)

    def test_without_pipe(self):
        a = self.agent()
        a.launch_ok(["sleep", "100"], id="np")
        self.assertError(a.post("/v1/processes/np/stdin", b"x"), 409)
        self.assertError(a.post("/v1/processes/nope/stdin", b"x"), 404, "not_found")

    def test_chunked_and_large(self):
        a = self.agent()
        a.launch_ok(["sha256sum"], id="sum", stdin="pipe")
        data = os.urandom(3 * 1024 * 1024 + 17)
        s = a.connect(timeout=20)
        self.addCleanup(s.close)
        head = (b"POST /v1/processes/sum/stdin?close=1 HTTP/1.1\r\nHost: x\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + 100000]), data[i:i + 100000])
                          for i in range(0, len(data), 100000))
        s.sendall(head + chunks + b"0\r\n\r\n")
        r = ResponseReader(s).read()
        self.assertEqual(r.status, 204, r)
        self.assertExit(a.wait_ended("sum"), 0)
        self.assertEqual(self.stdout(a, "sum").split()[0].decode(), hashlib.sha256(data).hexdigest())


# ---------------------------------------------------------------- records on disk

class TestRecords(ProcCase):

    def test_files_byte_exact(self):
        a = self.agent()
        boot = a.health()["bootId"]
        argv = ["sh", "-c", "printf 'a\\000b\\377\\n'; printf 'e\\001\\n' >&2; exit 2"]
        a.launch_ok(argv, id="bytes", env={"SOME_NAME": "some-value"})
        st = a.wait_ended("bytes")
        self.assertExit(st, 2)
        self.assertEqual((st["stdoutBytes"], st["stderrBytes"]), (5, 3))
        d = a.proc_dir(boot, "bytes")
        self.assertEqual(read_file(os.path.join(d, "stdout")), b"a\x00b\xff\n")
        self.assertEqual(read_file(os.path.join(d, "stderr")), b"e\x01\n")
        r = a.get("/v1/processes/bytes/stdout")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"a\x00b\xff\n")
        self.assertIn("application/octet-stream", r.header("content-type", ""))
        self.assertEqual(self.stdout(a, "bytes", "stderr"), b"e\x01\n")
        meta = json.loads(read_file(os.path.join(d, "meta.json")))
        self.assertIsInstance(meta, dict)
        self.assertTrue(contains_value(meta, argv), "meta.json lacks the argv: %r" % meta)
        self.assertIn("SOME_NAME", json.dumps(meta), "meta.json keeps env names")
        self.assertNotIn("some-value", json.dumps(meta), "meta.json keeps an env value")
        status = json.loads(read_file(os.path.join(d, "status.json")))
        self.assertEqual(status.get("state"), "exited")
        self.assertEqual(status.get("exit", {}).get("code"), 2)
        self.assertEqual(status.get("id"), "bytes")
        self.assertGreater(os.path.getsize(os.path.join(d, "index")), 0, "index is empty after output")

    def test_secrets_never_stored(self):
        secret = "s3cr3t-v4lue-xyz"
        a = self.agent()
        a.launch_ok(["true"], id="sec", env={"SECRET_TOKEN": secret})
        a.launch_ok(["sleep", "100"], id="sec2", env={"SECRET_TOKEN": secret}, stdin="pipe")
        self.assertExit(a.wait_ended("sec"), 0)
        for r in (a.status("sec"), a.status("sec2"), a.get("/v1/processes")):
            self.assertNotIn(secret.encode(), r.body)
        a.post("/v1/processes/sec2/kill", b"")
        a.wait_ended("sec2")
        found_name = False
        for root, _, files in os.walk(a.state):
            for name in files:
                try:
                    data = read_file(os.path.join(root, name))
                except FileNotFoundError:
                    continue    # the pool's child moved it meanwhile (.spares/new)
                self.assertNotIn(secret.encode(), data, "secret stored in %s" % os.path.join(root, name))
                if name == "meta.json" and b"SECRET_TOKEN" in data:
                    found_name = True
        self.assertTrue(found_name, "meta.json should record env names")
        self.assertNotIn(secret, a.log_text(), "secret in the agent's log")

    def test_delete(self):
        a = self.agent()
        boot = a.health()["bootId"]
        st = a.launch_ok(["sh", "-c", "sleep 100 & wait"], id="run")
        a.launch_ok(["true"], id="done")
        a.wait_ended("done")
        self.assertError(a.delete("/v1/processes/run"), 409)
        self.assertEqual(a.status("run").json["state"], "running")
        self.assertEqual(a.delete("/v1/processes/done").status, 204)
        self.assertError(a.status("done"), 404, "not_found")
        self.assertFalse(os.path.exists(a.proc_dir(boot, "done")), "record directory left behind")
        self.assertError(a.delete("/v1/processes/done"), 404, "not_found")
        host = a.host_pid_of(st["pid"])
        self.assertTrue(host)
        self.assertEqual(a.delete("/v1/processes/run?force=1").status, 204)
        self.assertError(a.status("run"), 404, "not_found")
        self.assertEqual(poll(lambda: group_members(host) == [], 3), True, "forced delete left its group alive")
        self.assertTrue(poll(lambda: not os.path.exists(a.proc_dir(boot, "run")), 3),
                        "record directory left behind after a forced delete")
        self.assertEqual(a.get("/v1/processes").json, [])

    def test_keep_exited(self):
        a = self.agent(extra=["--keep-exited", "2"])
        boot = a.health()["bootId"]
        a.launch_ok(["sleep", "100"], id="live")
        for i in range(1, 5):
            a.launch_ok(["true"], id="e%d" % i)
            a.wait_ended("e%d" % i)
            time.sleep(0.02)
        ok = poll(lambda: self.ids(a.get("/v1/processes?state=exited")) == ["e3", "e4"], 3)
        self.assertTrue(ok, self.ids(a.get("/v1/processes")))
        self.assertEqual(a.status("live").json["state"], "running")
        for gone in ("e1", "e2"):
            self.assertError(a.status(gone), 404, "not_found")
            self.assertFalse(os.path.exists(a.proc_dir(boot, gone)), "pruned record %s left files" % gone)
        self.assertTrue(os.path.exists(a.proc_dir(boot, "e4")))


# ---------------------------------------------------------------- restarts and boots

class TestBoots(ProcCase):

    def test_restart_marks_lost_and_pins_old_boot(self):
        a = self.agent()
        old = a.health()["bootId"]
        a.launch_ok(["sleep", "100"], id="run1")
        a.launch_ok(["sh", "-c", "echo hi; echo err >&2; exit 3"], id="done1")
        self.assertExit(a.wait_ended("done1"), 3)
        a.kill()                               # a crash: no final status for run1

        b = self.agent(state_dir=a.state)
        new = b.health()["bootId"]
        self.assertNotEqual(new, old)
        pin = {"Tend-Boot": old}

        r = b.status("run1", headers=pin)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["state"], "error")
        self.assertEqual(r.json["error"]["code"], "lost")
        self.assertIsInstance(r.json["error"].get("message"), str)
        self.assertEqual(r.json["bootId"], old)
        self.assertRegex(r.json.get("endedAt", ""), RFC3339_MS)
        disk = json.loads(read_file(os.path.join(a.proc_dir(old, "run1"), "status.json")))
        self.assertEqual((disk.get("state"), disk.get("error", {}).get("code")), ("error", "lost"))

        r = b.get("/v1/processes/done1?boot=%s" % old)
        self.assertEqual(r.status, 200, r)
        self.assertExit(r.json, 3)
        self.assertEqual(r.json["stdoutBytes"], 3)
        self.assertEqual(self.stdout(b, "done1", headers=pin), b"hi\n")
        self.assertEqual(self.stdout(b, "done1", "stderr", headers=pin), b"err\n")

        self.assertError(b.post("/v1/processes/done1/kill", b"", headers=pin), 410, "stale_boot")
        self.assertError(b.post("/v1/processes/run1/kill", b"", headers=pin), 410, "stale_boot")
        self.assertError(b.delete("/v1/processes/done1", headers=pin), 410, "stale_boot")
        r = b.post("/v1/processes", {"argv": ["true"]}, headers=pin)
        self.assertError(r, 410, "stale_boot")
        self.assertEqual(b.status("done1", headers=pin).status, 200, "a refused call changed the old record")

        self.assertError(b.status("done1", headers={"Tend-Boot": "f" * 32}), 410, "stale_boot")
        self.assertError(b.get("/v1/processes/done1?boot=%s" % ("0" * 32)), 410, "stale_boot")

        # Without a pin, or pinned to the current boot: the new boot only.
        self.assertError(b.status("done1"), 404, "not_found")
        self.assertError(b.status("done1", headers={"Tend-Boot": new}), 404, "not_found")
        self.assertEqual(b.get("/v1/processes").json, [])
        st = b.launch_ok(["true"], id="done1")
        self.assertEqual(st["bootId"], new)
        b.launch_ok(["true"], id="run1")
        self.assertEqual(b.status("done1", headers={"Tend-Boot": new}).status, 200)

    def test_restart_after_graceful_stop_keeps_final_status(self):
        a = self.agent()
        old = a.health()["bootId"]
        a.launch_ok(["sleep", "100"], id="r")
        self.assertEqual(a.stop(signal.SIGTERM), 0)
        b = self.agent(state_dir=a.state)
        r = b.status("r", headers={"Tend-Boot": old})
        self.assertEqual(r.status, 200, r)
        self.assertExit(r.json, 143, sig=15)


# ---------------------------------------------------------------- volume and a full disk

class TestVolume(ProcCase):

    def test_50mb_random_stored_byte_exact(self):
        a = self.agent()
        boot = a.health()["bootId"]
        rss0 = a.rss_kib()
        n = 50 * 1000 * 1000
        script = 'head -c %d /dev/urandom > "$T/x"; cat "$T/x"; sha256sum "$T/x" >&2; rm -f "$T/x"' % n
        t0 = time.monotonic()
        a.launch_ok(["sh", "-c", script], id="big", env={"T": a.tmp})
        st = a.wait_ended("big", 60000)
        took = time.monotonic() - t0
        self.assertExit(st, 0)
        self.assertEqual((st["stdoutBytes"], st["droppedBytes"]), (n, 0))
        want = self.stdout(a, "big", "stderr").split()[0].decode()
        self.assertRegex(want, "^[0-9a-f]{64}$")
        h = hashlib.sha256()
        with open(os.path.join(a.proc_dir(boot, "big"), "stdout"), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        self.assertEqual(h.hexdigest(), want, "the stdout file differs from what the process wrote")
        rss1 = a.rss_kib()
        print("\n  50 MB stored in %.2f s; agent RSS %s -> %s KiB" % (took, rss0, rss1), file=sys.stderr)
        if not SLOW:
            self.assertLess(rss1 - rss0, 16 * 1024, "agent RSS grew by %d KiB storing 50 MB" % (rss1 - rss0))

        # Over HTTP, streamed.
        c = UnixHTTPConnection(a.sock, timeout=scaled(30))
        self.addCleanup(c.close)
        c.request("GET", "/v1/processes/big/stdout")
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        h2, total = hashlib.sha256(), 0
        for block in iter(lambda: r.read(1 << 20), b""):
            h2.update(block)
            total += len(block)
        self.assertEqual((total, h2.hexdigest()), (n, want))
        tail = a.get("/v1/processes/big/stdout?offset=%d" % (n - 10))
        self.assertEqual(tail.status, 200, tail)
        with open(os.path.join(a.proc_dir(boot, "big"), "stdout"), "rb") as f:
            f.seek(n - 10)
            self.assertEqual(tail.body, f.read())

        # Readers that vanish mid-reply do not hurt the agent.
        for _ in range(5):
            s = a.connect()
            s.sendall(request_bytes("GET", "/v1/processes/big/stdout"))
            s.recv(1024)
            s.close()
        self.assertEqual(a.health()["status"], "ok")

    def test_output_never_blocks_without_readers(self):
        a = self.agent()
        t0 = time.monotonic()
        a.launch_ok(["sh", "-c", "head -c 20000000 /dev/zero; head -c 20000000 /dev/zero >&2"], id="flood")
        st = a.wait_ended("flood", 30000)
        self.assertExit(st, 0)
        self.assertEqual((st["stdoutBytes"], st["stderrBytes"]), (20000000, 20000000))
        self.assertLess(time.monotonic() - t0, scaled(10))

    def test_full_disk(self):
        mnt = tempfile.mkdtemp(prefix="tend-bb-tmpfs-")
        self.addCleanup(shutil.rmtree, mnt, True)
        rc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if rc != 0:
            self.skipTest("cannot mount a tmpfs (needs root)")
        self.addCleanup(subprocess.run, ["umount", "-l", mnt], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        a = self.agent(state_dir=mnt)
        n = 10 * 1000 * 1000
        a.launch_ok(["head", "-c", str(n), "/dev/zero"], id="fill")
        st = a.wait_ended("fill", 20000)
        self.assertExit(st, 0)
        self.assertGreater(st["droppedBytes"], 0, st)
        self.assertEqual(st["stdoutBytes"] + st["droppedBytes"], n, st)
        self.assertEqual(a.health()["status"], "ok")
        self.assertTrue(a.running())


# ---------------------------------------------------------------- pinned boot syntax

class TestBootPin(ProcCase):

    def test_pin_current_boot(self):
        a = self.agent()
        boot = a.health()["bootId"]
        self.assertRegex(boot, HEX32)
        a.launch_ok(["true"], id="p")
        a.wait_ended("p")
        self.assertEqual(a.status("p", headers={"Tend-Boot": boot}).status, 200)
        self.assertEqual(a.get("/v1/processes/p?boot=%s" % boot).status, 200)
        r = a.post("/v1/processes", {"argv": ["true"], "id": "p2"}, headers={"Tend-Boot": boot})
        self.assertEqual(r.status, 200, r)
        self.assertError(a.post("/v1/processes", {"argv": ["true"], "id": "p3"},
                                headers={"Tend-Boot": "a" * 32}), 410, "stale_boot")
        self.assertError(a.status("p3"), 404, "not_found")


if __name__ == "__main__":
    unittest.main()


# ---------------------------------------------------------------- review findings

class TestEdges(ProcCase):
    """Behaviours found in review: each once broke or was missing."""

    def test_script_without_shebang_runs_with_sh(self):
        d = tempfile.mkdtemp(prefix="tend-nosb-")
        self.addCleanup(shutil.rmtree, d, True)
        script = os.path.join(d, "nosb")
        with open(script, "w") as f:
            f.write("echo from-sh \"$1\"\n")
        os.chmod(script, 0o755)
        a = self.agent()
        a.launch_ok([script, "arg1"], id="nosb")
        self.assertExit(a.wait_ended("nosb"), 0)
        self.assertEqual(self.stdout(a, "nosb"), b"from-sh arg1\n")

    def test_relative_path_entry_is_relative_to_cwd(self):
        d = tempfile.mkdtemp(prefix="tend-rel-")
        self.addCleanup(shutil.rmtree, d, True)
        os.mkdir(os.path.join(d, "bin"))
        tool = os.path.join(d, "bin", "mytool")
        with open(tool, "w") as f:
            f.write("#!/bin/sh\necho mine\n")
        os.chmod(tool, 0o755)
        a = self.agent()
        a.launch_ok(["mytool"], id="rel", cwd=d, env={"PATH": "bin:/usr/bin:/bin"})
        self.assertExit(a.wait_ended("rel"), 0)
        self.assertEqual(self.stdout(a, "rel"), b"mine\n")

    def test_timeout_bounds_the_group_after_the_root_exits(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "sleep 100 & exit 0"], id="bg", timeout=300, killGrace=300)
        t0 = time.monotonic()
        st = a.wait_ended("bg", timeout_ms=5000)
        self.assertLess(time.monotonic() - t0, scaled(3.0), st)
        # The root exited on its own; the timeout then ended its group.
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertIs(st["exit"]["timedOut"], True, st)
        self.assertEqual(group_members(a.host_pid_of(st["pid"]) or -1), [], st)

    def test_half_closed_client_gets_a_late_reply(self):
        a = self.agent()
        a.launch_ok(["sleep", "0.3"], id="hc")
        # nc -N style: the request, then shutdown(SHUT_WR); the reply of
        # wait comes later and must still arrive.
        r = a.raw_response(request_bytes("POST", "/v1/processes/hc/wait?timeout=5000"),
                           timeout=scaled(5), shut_wr=True)
        self.assertIsNotNone(r)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["state"], "exited", r)
        self.assertEqual(a.health()["status"], "ok")

    def test_half_closed_client_gets_every_pipelined_reply(self):
        a = self.agent()
        a.launch_ok(["sleep", "0.3"], id="hc")
        # Three requests, a fourth cut short, then shutdown(SHUT_WR): the
        # three are answered in order (the first only once the process
        # ends), then the connection closes.
        data = (request_bytes("POST", "/v1/processes/hc/wait?timeout=5000") +
                request_bytes("GET", "/v1/processes/hc") +
                request_bytes("GET", "/v1/processes/nobody") +
                b"GET /v1/heal")
        out, closed = a.raw(data, timeout=scaled(5), shut_wr=True)
        self.assertTrue(closed, "the connection stayed open after the client's end")
        rs = strict_responses(out)
        self.assertEqual([r[0] for r in rs], [200, 200, 404], out[:600])
        self.assertEqual(json.loads(rs[0][2])["state"], "exited")
        self.assertEqual(json.loads(rs[1][2])["id"], "hc")
        self.assertEqual(a.health()["status"], "ok")

    def test_half_closed_client_of_a_big_reply_is_closed_after_it(self):
        a = self.agent()
        # The reply (1 MB of output, base64) outgrows the output queue's
        # mark: the close comes when it has drained, not at the idle timeout.
        body = json.dumps({"argv": ["head", "-c", "1000000", "/dev/zero"]}).encode()
        t0 = time.monotonic()
        out, closed = a.raw(request_bytes("POST", "/v1/exec", body,
                                          {"Content-Type": "application/json"}),
                            timeout=scaled(10), shut_wr=True)
        self.assertTrue(closed, "a half-closed connection stayed open after its reply")
        self.assertLess(time.monotonic() - t0, scaled(8))
        (st, _, reply), = strict_responses(out)
        self.assertEqual(st, 200)
        self.assertEqual(len(base64.b64decode(json.loads(reply)["stdout"])), 1000000)

    def test_status_file_of_a_short_process_is_its_final_one(self):
        a = self.agent()
        st = a.launch_ok(["true"], id="short")
        a.wait_ended("short")
        path = os.path.join(a.proc_dir(st["bootId"], "short"), "status.json")
        on_disk = json.loads(read_file(path))
        self.assertEqual(on_disk["state"], "exited", on_disk)
        # A process that wrote nothing has no output files (lazy store).
        for name in ("stdout", "stderr", "index"):
            self.assertFalse(os.path.exists(os.path.join(os.path.dirname(path), name)), name)
        self.assertEqual(self.stdout(a, "short"), b"")
        # Long-running ones get a running status within a moment.
        st = a.launch_ok(["sleep", "5"], id="long")
        path = os.path.join(a.proc_dir(st["bootId"], "long"), "status.json")
        self.assertTrue(poll(lambda: os.path.exists(path), 2.0), path)
        self.assertEqual(json.loads(read_file(path))["state"], "running")
        a.post("/v1/processes/long/kill", {"signal": 9})

    def test_connection_limit_reply_is_exact(self):
        import socket as _socket
        a = self.agent(extra=("--max-conns", "2"))
        held = []
        for _ in range(2):
            # A reply on each proves the agent has accepted it.
            h = a.connect()
            h.sendall(request_bytes("GET", "/v1/health"))
            self.assertEqual(ResponseReader(h).read().status, 200)
            held.append(h)
        self.addCleanup(lambda: [h.close() for h in held])
        s = a.connect()
        data = b""
        s.settimeout(scaled(3))
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (_socket.timeout, ConnectionResetError):
            pass
        s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 503"), data)
        length = [int(ln.split(b":")[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
        self.assertEqual(length, [len(body)], data)
        self.assertEqual(json.loads(body)["code"], "busy")

    def test_chunked_trailers_are_ignored(self):
        a = self.agent()
        a.launch_ok(["sleep", "30"], id="tr")
        r = a.raw_response(b"POST /v1/processes/tr/kill HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                           b"0\r\nX-Trailer: abc\r\nTend-Boot: " + b"f" * 32 + b"\r\n\r\n")
        # The trailer is no header: the kill is not pinned to another boot.
        self.assertEqual(r.status, 204, r)
        self.assertEqual(a.health()["status"], "ok")

    def test_held_stdin_request_that_turns_malformed(self):
        # A stdin body large enough to be held (reading paused while the
        # process is slow), then broken chunk framing: the request ends
        # with 400, and the process releasing the hold later must not
        # touch the freed connection.
        a = self.agent()
        a.launch_ok(["sh", "-c", "sleep 1; cat >/dev/null"], id="held", stdin="pipe")
        n = (1 << 20) + 65536 + 64
        out, _ = a.raw(b"POST /v1/processes/held/stdin HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                       + b"%x\r\n" % n + b"a" * n + b"\r\nZZ\r\n", timeout=scaled(5))
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out[:80])
        time.sleep(scaled(2))
        self.assertEqual(a.health()["status"], "ok")
        self.assertTrue(a.running())

    def test_head_reply_has_no_body(self):
        # A body after a reply to HEAD would be read as the next reply.
        a = self.agent()
        out, _ = a.raw(b"HEAD /v1/health HTTP/1.1\r\n\r\nGET /v1/health HTTP/1.1\r\nConnection: close\r\n\r\n")
        first, _, rest = out.partition(b"\r\n\r\n")
        self.assertTrue(first.startswith(b"HTTP/1.1 405"), out[:200])
        self.assertTrue(rest.startswith(b"HTTP/1.1 200"), out[:400])

    def test_final_status_counts_output_after_settle(self):
        # A descendant outside the group (setsid) writes after the group
        # settled; a follower is there when the output ends.  status.json
        # must still get the final byte counts.
        a = self.agent()
        st = a.launch_ok(["sh", "-c", "setsid sh -c 'sleep 0.5; echo late' & echo early"], id="esc")
        events = a.sse("/v1/processes/esc/logs?follow=1", timeout=scaled(10),
                       until=lambda e: (e.get("json") or {}).get("type") == "terminal")
        self.assertEqual((events.events[-1].get("json") or {}).get("type"), "terminal", events.events)
        path = os.path.join(a.proc_dir(st["bootId"], "esc"), "status.json")
        on_disk = poll(lambda: json.loads(read_file(path)).get("stdoutBytes") == 11 and json.loads(read_file(path)), 3)
        self.assertTrue(on_disk, read_file(path))
        self.assertEqual(on_disk["state"], "exited")
        self.assertNotIn("status_write_failed", a.log_text())

    def test_second_stdin_writer_is_refused_not_buffered(self):
        # One writer fills the queue and is held; a second concurrent one
        # must not grow the agent's memory without bound.
        a = self.agent()
        a.launch_ok(["sleep", "30"], id="si", stdin="pipe")
        first = a.connect()
        self.addCleanup(first.close)
        n = 3 << 20
        first.sendall(b"POST /v1/processes/si/stdin HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % n)
        first.settimeout(scaled(5))
        try:
            first.sendall(b"a" * n)
        except (socket.timeout, BlockingIOError):
            pass    # held: the agent stopped reading, as it should
        rss0 = a.rss_kib()
        second = a.raw_response(b"POST /v1/processes/si/stdin HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (64 << 20)
                                + b"b" * (64 << 20), timeout=scaled(20))
        self.assertIsNotNone(second)
        self.assertEqual(second.status, 409, second)
        self.assertIn("busy", second.json["error"], second.json)
        self.assertLess(a.rss_kib() - rss0, 16 * 1024, "agent grew by %d KiB" % (a.rss_kib() - rss0))
        self.assertEqual(a.health()["status"], "ok")
        a.post("/v1/processes/si/kill", {"signal": 9})

    def test_http10_raw_stream_is_not_chunked(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "echo hello"], id="h10")
        a.wait_ended("h10")
        out, closed = a.raw(b"GET /v1/processes/h10/stdout HTTP/1.0\r\n\r\n")
        head, _, body = out.partition(b"\r\n\r\n")
        self.assertTrue(closed)
        self.assertNotIn(b"chunked", head.lower(), head)
        self.assertEqual(body, b"hello\n")

    def test_tiny_writes_do_not_grow_the_index_per_write(self):
        # A byte at a time, nobody reading: records merge (20 ms each at
        # most), so the index stays small while the data is bounded.
        a = self.agent()
        st = a.launch_ok(["sh", "-c", "while :; do printf x; done"], id="tiny", maxLogBytes=4096)
        time.sleep(scaled(2))
        a.post("/v1/processes/tiny/kill", {"signal": 9})
        st = a.wait_ended("tiny")
        index = os.path.join(a.proc_dir(st["bootId"], "tiny"), "index")
        size = os.path.getsize(index)
        self.assertGreater(st["stdoutBytes"], 10000, st)
        # 50 records a second at most: 2 s is ~100 records (3.2 KB); one
        # record per write would be tens of thousands.
        self.assertLess(size, 64 * 1024, "index %d bytes for %d bytes of output" % (size, st["stdoutBytes"]))
