"""Terminal resources: POST /v1/terminals and its REST routes, against an agent
as PID 1.  Output is read from the record on disk (boots/<boot>/terms/<id>/output),
which is what the agent stored; the connect route is another pass's."""
import json
import os
import pwd
import re
import time
import unittest

from harness import AgentTestCase, RFC3339_MS, poll, read_file, scaled

SHELL = ["/bin/bash", "--norc", "--noprofile", "-i"]
SHELL_ENV = {"PS1": "PROMPT> ", "HOME": "/tmp"}


class TermCase(AgentTestCase):
    def create(self, a, **body):
        r = a.post("/v1/terminals", body)
        self.assertEqual(r.status, 200, r)
        return r.json

    def shell(self, a, **body):
        body.setdefault("argv", SHELL)
        body.setdefault("env", SHELL_ENV)
        t = self.create(a, **body)
        self.wait_out(a, t, b"PROMPT> ")
        return t

    def term_dir(self, a, t):
        return os.path.join(a.boot_dir(t["bootId"]), "terms", t["id"])

    def output(self, a, t):
        try:
            return read_file(os.path.join(self.term_dir(a, t), "output"))
        except FileNotFoundError:
            return b""

    def wait_out(self, a, t, pattern, timeout=5.0, after=0):
        """The stored output (from offset after) once it matches pattern."""
        rx = re.compile(pattern if isinstance(pattern, bytes) else pattern.encode())
        got = poll(lambda: rx.search(self.output(a, t)[after:]), timeout)
        self.assertTrue(got, "no %r in the output: %r" % (pattern, self.output(a, t)[-400:]))
        return got

    def type(self, a, t, data):
        r = a.post("/v1/terminals/%s/input" % t["id"], data.encode() if isinstance(data, str) else data)
        self.assertEqual(r.status, 204, r)

    def wait_exited(self, a, t, timeout=5.0):
        def ended():
            r = a.get("/v1/terminals/%s" % t["id"])
            return r.json if r.status == 200 and r.json["status"] != "running" else None
        st = poll(ended, timeout)
        self.assertTrue(st, "terminal %s still running" % t["id"])
        return st

    def sleeps_in_ns(self, a):
        """Host pids of `sleep` processes under the agent."""
        found = []
        for pid in a.descendants():
            try:
                with open("/proc/%d/comm" % pid) as f:
                    if f.read().strip() == "sleep":
                        found.append(pid)
            except OSError:
                pass
        return found


class TestTermResource(TermCase):
    def test_create_snapshot_reattach_and_id_rules(self):
        a = self.agent()
        boot = a.health()["bootId"]
        t = self.create(a, argv=["/bin/sleep", "100"], id="dev", cols=90, rows=30, cwd="/tmp")
        self.assertEqual((t["id"], t["status"], t["command"], t["cwd"]),
                         ("dev", "running", ["/bin/sleep", "100"], "/tmp"))
        self.assertEqual((t["cols"], t["rows"], t["bootId"]), (90, 30, boot))
        self.assertIsInstance(t["pid"], int)
        self.assertRegex(t["createdAt"], RFC3339_MS)
        self.assertIsNone(t["endedAt"])
        self.assertEqual(t["outputBytes"], 0)
        self.assertNotIn("exit", t)
        self.assertEqual(a.health()["terminals"], 1)

        # A live ID is a reattach: the same terminal, whatever the body says.
        r = a.post("/v1/terminals", {"id": "dev", "argv": ["/bin/true"]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["pid"], r.json["command"]), (t["pid"], t["command"]))
        self.assertEqual(a.health()["terminals"], 1)

        lst = a.get("/v1/terminals")
        self.assertEqual(lst.status, 200, lst)
        self.assertEqual([x["id"] for x in lst.json], ["dev"])
        self.assertEqual(a.get("/v1/terminals/dev").json["pid"], t["pid"])
        self.assertError(a.get("/v1/terminals/nope"), 404, "not_found")

        # An ended terminal keeps its ID.
        e = self.create(a, argv=["/bin/sh", "-c", "exit 0"], id="gone")
        self.wait_exited(a, e)
        self.assertError(a.post("/v1/terminals", {"id": "gone"}), 409, "id_taken")

        # Generated IDs are valid and distinct.
        g1 = self.create(a, argv=["/bin/true"])
        g2 = self.create(a, argv=["/bin/true"])
        self.assertNotEqual(g1["id"], g2["id"])
        self.assertRegex(g1["id"], r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

        # The bridge's alias serves the same resources.
        r = a.get("/v1/sandbox/box-1/terminals/dev")
        self.assertEqual((r.status, r.json.get("pid")), (200, t["pid"]), r)
        r = a.post("/v1/sandbox/box-1/terminals", {"argv": ["/bin/sleep", "100"], "id": "viabridge"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(a.get("/v1/terminals/viabridge").status, 200)

    def test_validation(self):
        a = self.agent()
        bad = [
            ({"argv": []}, "argv"),
            ({"argv": "sh"}, "argv"),
            ({"argv": [1]}, "argv"),
            ({"argv": [""]}, "argv"),
            ({"cols": 0}, "cols"),
            ({"rows": 0}, "rows"),
            ({"cols": 10001}, "cols"),
            ({"cols": "80"}, "cols"),
            ({"rows": 2.5}, "rows"),
            ({"env": {"A": 1}}, "env"),
            ({"env": ["A=1"]}, "env"),
            ({"cwd": 3}, "cwd"),
            ({"id": "../x"}, "id"),
            ({"bufferSize": 0}, "bufferSize"),
            ({"user": "no-such-user-xyz"}, "user"),
        ]
        for body, field in bad:
            body.setdefault("argv", ["/bin/true"]) if field != "argv" else None
            j = self.assertError(a.post("/v1/terminals", body), 400, "invalid_request")
            self.assertEqual(j.get("field"), field, (body, j))
        self.assertError(a.post("/v1/terminals", b"[1,2"), 400, "invalid_request")
        self.assertError(a.post("/v1/terminals", [1]), 400, "invalid_request")
        j = self.assertError(a.post("/v1/terminals/nope/resize", {"cols": 0, "rows": 3}), 400)
        self.assertEqual(j.get("field"), "cols")
        self.assertEqual(a.get("/v1/terminals").json, [])
        self.assertEqual(a.health()["terminals"], 0)
        # A program that cannot run: the bridge's spawn error.
        self.assertError(a.post("/v1/terminals", {"argv": ["/no/such/prog"]}), 422, "spawn_failed")
        self.assertEqual(a.health()["terminals"], 0)

    def test_default_shell_and_term(self):
        a = self.agent()
        t = self.create(a, env={"PS1": "PROMPT> ", "HOME": "/tmp"})
        shell = pwd.getpwuid(os.getuid()).pw_shell
        want = shell if shell.startswith("/") and os.access(shell, os.X_OK) else "/bin/sh"
        self.assertEqual(t["command"], [want])
        self.type(a, t, "echo T=$TERM\n")
        self.wait_out(a, t, rb"T=xterm-256color")
        # A TERM of the request's own wins.
        u = self.shell(a, env=dict(SHELL_ENV, TERM="vt100"))
        self.type(a, u, "echo T=$TERM\n")
        self.wait_out(a, u, rb"T=vt100\r?\n")


class TestTermIO(TermCase):
    def test_stty_size_then_resize(self):
        a = self.agent()
        t = self.shell(a, cols=77, rows=19)
        self.type(a, t, "stty size\n")
        self.wait_out(a, t, rb"[\r\n]19 77\r?\n")
        mark = len(self.output(a, t))
        r = a.post("/v1/terminals/%s/resize" % t["id"], {"cols": 123, "rows": 45})
        self.assertEqual(r.status, 204, r)
        self.assertEqual(a.get("/v1/terminals/%s" % t["id"]).json["rows"], 45)
        self.type(a, t, "stty size\n")
        self.wait_out(a, t, rb"[\r\n]45 123\r?\n", after=mark)

    def test_echo_round_trip(self):
        a = self.agent()
        t = self.shell(a)
        # The echo of the input shows the quotes; only the output joins them.
        self.type(a, t, "echo round''trip-$((6*7))\n")
        self.wait_out(a, t, rb"roundtrip-42\r?\n")
        st = a.get("/v1/terminals/%s" % t["id"]).json
        self.assertEqual(st["outputBytes"], len(self.output(a, t)))

    def test_interrupt_returns_to_prompt(self):
        a = self.agent()
        t = self.shell(a)
        self.type(a, t, "sleep 100\n")
        poll(lambda: self.sleeps_in_ns(a), 5)
        self.assertTrue(self.sleeps_in_ns(a))
        mark = len(self.output(a, t))
        r = a.post("/v1/terminals/%s/interrupt" % t["id"], b"")
        self.assertEqual(r.status, 204, r)
        self.wait_out(a, t, rb"PROMPT> ", after=mark)
        self.type(a, t, "echo rc=$?\n")
        self.wait_out(a, t, rb"rc=130\r?\n", after=mark)
        self.assertEqual(a.get("/v1/terminals/%s" % t["id"]).json["status"], "running")
        self.assertFalse(poll(lambda: not self.sleeps_in_ns(a), 5) is False)

    def test_terminate_ends_shell_and_background_job(self):
        a = self.agent()
        t = self.shell(a)
        self.type(a, t, "sleep 1000 & echo bg=$!\n")
        self.wait_out(a, t, rb"bg=\d+")
        self.assertTrue(poll(lambda: self.sleeps_in_ns(a), 5))
        r = a.post("/v1/terminals/%s/terminate" % t["id"], b"")
        self.assertEqual(r.status, 204, r)
        st = self.wait_exited(a, t)
        self.assertEqual(st["status"], "exited")
        self.assertRegex(st["endedAt"], RFC3339_MS)
        self.assertIn("code", st["exit"])
        self.assertEqual(poll(lambda: not self.sleeps_in_ns(a), 5), True,
                         "left in the namespace: %r" % self.sleeps_in_ns(a))
        self.assertEqual(a.health()["terminals"], 0)
        self.assertError(a.post("/v1/terminals/%s/terminate" % t["id"], b""), 409, "not_running")
        self.assertError(a.post("/v1/terminals/%s/input" % t["id"], b"x"), 409)

    def test_last_bytes_before_exit(self):
        a = self.agent()
        for i in range(20):
            t = self.create(a, argv=["/bin/sh", "-c", "printf bye; exit 3"])
            st = self.wait_exited(a, t)
            out = self.output(a, t)
            self.assertTrue(out.endswith(b"bye"), (i, out))
            self.assertEqual(st["exit"], {"code": 3}, (i, st))
            self.assertEqual(st["outputBytes"], len(out), (i, st))
            a.delete("/v1/terminals/%s" % t["id"])

    def test_background_job_does_not_delay_end(self):
        # The leader's exit hangs the terminal up: the job's slave included.
        a = self.agent()
        t0 = time.monotonic()
        t = self.create(a, argv=["/bin/sh", "-c", "sleep 30 & printf held; exit 4"])
        st = self.wait_exited(a, t, timeout=5)
        self.assertLess(time.monotonic() - t0, scaled(4))
        self.assertEqual(st["exit"]["code"], 4)
        self.assertTrue(self.output(a, t).endswith(b"held"))
        a.post("/v1/terminals/%s/terminate" % t["id"], b"")

    def test_input_any_size(self):
        a = self.agent()
        t = self.create(a, argv=["/bin/sh", "-c", "stty -echo -icanon; head -c 300000 | wc -c"])
        time.sleep(0.2)
        r = a.post("/v1/terminals/%s/input" % t["id"], b"x" * 300000, timeout=20)
        self.assertEqual(r.status, 204, r)
        self.wait_out(a, t, rb"300000")

    def test_input_queue_bounded_when_not_read(self):
        a = self.agent()
        # Raw mode: the tty's input buffer fills (canonical mode drops).
        t = self.create(a, argv=["/bin/sh", "-c", "stty -icanon -echo; echo ready; sleep 1000"])
        self.wait_out(a, t, rb"ready")
        rss0 = a.rss_kib()
        # Nobody reads: the reply waits for room that never comes.
        with self.assertRaises(OSError):
            a.post("/v1/terminals/%s/input" % t["id"], b"y" * (6 << 20), timeout=2)
        self.assertLess(a.rss_kib() - rss0, 4096)
        # The queue stays full: the next writer waits for room too, or is
        # refused while the first is still held (its close not yet seen).
        try:
            r = a.post("/v1/terminals/%s/input" % t["id"], b"z", timeout=1)
            self.assertError(r, 409, "conflict")
        except OSError:
            pass
        self.assertEqual(a.health()["status"], "ok")
        self.assertEqual(a.delete("/v1/terminals/%s" % t["id"]).status, 204)


class TestTermLifecycle(TermCase):
    def test_delete(self):
        a = self.agent()
        t = self.shell(a, id="del1")
        self.type(a, t, "sleep 1000 &\n")
        self.assertTrue(poll(lambda: self.sleeps_in_ns(a), 5))
        d = self.term_dir(a, t)
        self.assertTrue(os.path.isdir(d))
        r = a.delete("/v1/terminals/del1")
        self.assertEqual(r.status, 204, r)
        self.assertError(a.get("/v1/terminals/del1"), 404, "not_found")
        self.assertFalse(os.path.exists(d))
        self.assertEqual(a.health()["terminals"], 0)
        self.assertEqual(poll(lambda: not self.sleeps_in_ns(a), 5), True)
        self.assertError(a.delete("/v1/terminals/del1"), 404, "not_found")
        # The ID is free again once removed.
        self.create(a, argv=["/bin/true"], id="del1")

    def test_live_limit(self):
        a = self.agent()
        for i in range(64):
            self.create(a, argv=["/bin/sleep", "1000"], id="l%d" % i)
        self.assertEqual(a.health()["terminals"], 64)
        self.assertError(a.post("/v1/terminals", {"argv": ["/bin/true"]}), 503, "busy")
        self.assertEqual(a.delete("/v1/terminals/l0").status, 204)
        self.create(a, argv=["/bin/sleep", "1000"], id="l64")
        self.assertEqual(a.health()["terminals"], 64)

    def test_lost_after_restart_readable_with_pin(self):
        a = self.agent()
        old = a.health()["bootId"]
        t = self.create(a, argv=["/bin/sh", "-c", "echo kept-bytes; sleep 1000"], id="keep1")
        self.wait_out(a, t, rb"kept-bytes")
        e = self.create(a, argv=["/bin/sh", "-c", "exit 5"], id="done1")
        self.wait_exited(a, e)
        a.kill()

        b = self.agent(state_dir=a.state)
        self.assertNotEqual(b.health()["bootId"], old)
        self.assertError(b.get("/v1/terminals/keep1"), 404, "not_found")
        r = b.get("/v1/terminals/keep1?boot=%s" % old)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["status"], r.json["error"]["code"]), ("error", "lost"))
        self.assertEqual(r.json["outputBytes"], len(b"kept-bytes\r\n"))
        self.assertRegex(r.json["endedAt"], RFC3339_MS)
        r = b.get("/v1/terminals/done1", headers={"Tend-Boot": old})
        self.assertEqual((r.status, r.json.get("status"), r.json.get("exit", {}).get("code")),
                         (200, "exited", 5), r)
        lst = b.get("/v1/terminals?boot=%s" % old)
        self.assertEqual(sorted(x["id"] for x in lst.json), ["done1", "keep1"])
        self.assertEqual(b.get("/v1/terminals").json, [])
        self.assertError(b.post("/v1/terminals/keep1/terminate", b"", headers={"Tend-Boot": old}),
                         410, "stale_boot")
        disk = json.loads(read_file(os.path.join(a.boot_dir(old), "terms", "keep1", "status.json")))
        self.assertEqual(disk["status"], "error")

    def test_shutdown_ends_terminals(self):
        a = self.agent()
        t = self.shell(a, id="sd")
        self.type(a, t, "sleep 1000 &\n")
        self.assertTrue(poll(lambda: self.sleeps_in_ns(a), 5))
        t0 = time.monotonic()
        self.assertEqual(a.stop(timeout=scaled(10)), 0)
        self.assertLess(time.monotonic() - t0, scaled(6))
        disk = json.loads(read_file(os.path.join(self.term_dir(a, t), "status.json")))
        self.assertEqual(disk["status"], "exited")


if __name__ == "__main__":
    unittest.main()
