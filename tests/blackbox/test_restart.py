"""Restart policy: one record, numbered runs.

on-failure with a doubling backoff, always, the breaker (maxRestarts and
the crash-loop window), the backoff reset after a long run, kill during a
backoff, a timeout per run, signals tend sent never restarting, the
output one stream with each run's offsets, status and events per run,
stdin per run, a record lost by an agent restart that never relaunches,
and refused bodies.
"""
import base64
import json
import os
import signal
import subprocess
import time
import unittest

from harness import AgentTestCase, RFC3339_MS, SLOW, TEND_BIN, poll, scaled
from test_upgrade import UpgradeCase


def policy(p="on-failure", **kw):
    r = {"policy": p}
    r.update(kw)
    return r


class RestartTest(AgentTestCase):

    def events(self, a, pid_id, types="process."):
        out, since = [], ""
        for _ in range(1000):
            r = a.get("/v1/events?follow=0&types=%s&id=%s%s" % (types, pid_id, since))
            self.assertEqual(r.status, 200, r)
            j = r.json
            if not j["events"]:
                return out
            out += j["events"]
            since = "&since=" + j["next"]
        self.fail("events never end")

    def until_state(self, a, pid_id, fn, timeout=10.0):
        st = poll(lambda: (lambda s: s if fn(s) else None)(a.status(pid_id).json), timeout)
        self.assertIsNotNone(st, "%s: condition never met: %r" % (pid_id, a.status(pid_id).json))
        return st

    # ---------------------------------------------------------------- policies

    def test_on_failure_backoff_then_gives_up(self):
        a = self.agent()
        p = a.launch_ok(["sh", "-c", "echo run; exit 3"],
                        restart=policy(maxRestarts=3, backoffMs=100, maxBackoffMs=250))
        self.assertEqual(p["run"], 1)
        self.assertEqual(p["restarts"], 0)
        self.assertEqual(p["restart"]["policy"], "on-failure")
        self.assertEqual(p["restart"]["maxRestarts"], 3)
        t0 = time.monotonic()
        st = a.wait_ended(p["id"])
        took = time.monotonic() - t0
        self.assertEqual(st["state"], "exited")
        self.assertEqual(st["exit"]["code"], 3)
        self.assertEqual(st["run"], 4)
        self.assertEqual(st["restarts"], 3)
        self.assertEqual(st["restart"]["state"], "gave_up")
        self.assertEqual(st["restart"]["reason"], "maxRestarts")
        self.assertEqual(st["restart"]["lastExit"]["code"], 3)
        # 100 + 200 + 250 (capped) ms of backoff at least.
        self.assertGreaterEqual(took, 0.5)
        runs = st["runs"]
        self.assertEqual([r["run"] for r in runs], [1, 2, 3, 4])
        self.assertEqual(len({r["pid"] for r in runs}), 4)
        for r in runs:
            self.assertEqual(r["exit"]["code"], 3)
            self.assertRegex(r["startedAt"], RFC3339_MS)
        # The output is one stream; each run's offset is where it begins.
        out = a.get("/v1/processes/%s/stdout" % p["id"])
        self.assertEqual(out.status, 200, out)
        self.assertEqual(out.body, b"run\n" * 4)
        self.assertEqual([r["stdoutOffset"] for r in runs], [0, 4, 8, 12])
        ev = self.events(a, p["id"])
        types = [e["type"] for e in ev]
        self.assertEqual(types.count("process.exited"), 4, types)
        self.assertEqual(types.count("process.restarting"), 3, types)
        self.assertEqual(types.count("process.gave_up"), 1, types)
        self.assertEqual(types.count("process.started"), 4, types)
        self.assertEqual([e["run"] for e in ev if e["type"] == "process.exited"], [1, 2, 3, 4])
        rs = [e for e in ev if e["type"] == "process.restarting"]
        self.assertEqual([e["delayMs"] for e in rs], [100, 200, 250])
        self.assertEqual([e["stdoutOffset"] for e in rs], [4, 8, 12])
        started = [e for e in ev if e["type"] == "process.started"]
        self.assertEqual([e.get("run") for e in started], [None, 2, 3, 4])
        for e in started:
            self.assertEqual((e["argv0"], e["tags"]), ("sh", {}))
        self.assertEqual([e["stdoutOffset"] for e in started[1:]], [4, 8, 12])
        # gave_up before the last process.exited: the record's end is last.
        self.assertEqual(types[-1], "process.exited")

    def test_on_failure_success_ends(self):
        a = self.agent()
        p = a.launch_ok(["sh", "-c", "exit 0"], restart=policy(backoffMs=50))
        st = a.wait_ended(p["id"])
        self.assertEqual(st["run"], 1)
        self.assertEqual(st["restart"]["state"], "stopped")
        self.assertEqual(st["restart"]["reason"], "succeeded")

    def test_always_restarts_success(self):
        a = self.agent()
        p = a.launch_ok(["true"], restart=policy("always", maxRestarts=2, backoffMs=20))
        st = a.wait_ended(p["id"])
        self.assertEqual(st["run"], 3)
        self.assertEqual(st["restart"]["state"], "gave_up")
        self.assertEqual(st["exit"]["code"], 0)

    def test_signal_death_restarts(self):
        """A crash by a signal tend did not send is a failure."""
        a = self.agent()
        p = a.launch_ok(["sh", "-c", "kill -SEGV $$"], restart=policy(maxRestarts=1, backoffMs=20))
        st = a.wait_ended(p["id"])
        self.assertEqual(st["run"], 2)
        self.assertEqual(st["exit"]["signal"], "SIGSEGV" if isinstance(st["exit"]["signal"], str) else 11)

    def test_crash_loop_breaker(self):
        """No maxRestarts: more than 10 restarts within 5 minutes gives up."""
        a = self.agent()
        p = a.launch_ok(["false"], restart=policy("always", backoffMs=1, maxBackoffMs=1))
        st = a.wait_ended(p["id"], timeout_ms=15000)
        self.assertEqual(st["restart"]["state"], "gave_up")
        self.assertEqual(st["restart"]["reason"], "crashLoop")
        self.assertEqual(st["restarts"], 10)
        self.assertEqual(st["run"], 11)
        self.assertNotIn("maxRestarts", st["restart"])
        self.assertEqual(len(st["runs"]), 11)

    def test_runs_list_is_bounded(self):
        a = self.agent()
        p = a.launch_ok(["false"], restart=policy(maxRestarts=20, backoffMs=1, maxBackoffMs=1))
        st = a.wait_ended(p["id"], timeout_ms=15000)
        self.assertEqual(st["run"], 21)
        self.assertEqual([r["run"] for r in st["runs"]], list(range(6, 22)))

    def test_backoff_resets_after_long_run(self):
        a = self.agent()
        # A file counts the runs: the third stays up past the reset.
        d = self.tmpdir()
        script = ("n=$(cat %s/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s/n; "
                  "if [ $n = 3 ]; then sleep 10.5; fi; exit 1") % (d, d)
        p = a.launch_ok(["sh", "-c", script],
                        restart=policy(maxRestarts=3, backoffMs=200, maxBackoffMs=5000))
        st = a.wait_ended(p["id"], timeout_ms=30000)
        delays = [e["delayMs"] for e in self.events(a, p["id"]) if e["type"] == "process.restarting"]
        # 200, 400, then run 3 stayed up over 10 s: back to 200.
        self.assertEqual(delays, [200, 400, 200])
        self.assertEqual(st["run"], 4)

    def test_next_run_that_cannot_start_gives_up(self):
        a = self.agent()
        script = os.path.join(self.tmpdir(), "once.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nrm -f \"$0\"\nexit 1\n")
        os.chmod(script, 0o755)
        p = a.launch_ok([script], restart=policy("always", backoffMs=50))
        st = a.wait_ended(p["id"])
        self.assertEqual(st["restart"]["state"], "gave_up")
        self.assertEqual(st["restart"]["reason"], "spawnFailed")
        self.assertEqual(st["run"], 1)
        self.assertEqual(st["exit"]["code"], 1)
        types = [e["type"] for e in self.events(a, p["id"])]
        self.assertEqual(types[-2:], ["process.gave_up", "process.exited"], types)

    # ---------------------------------------------------------------- tend's own signals

    def test_kill_is_not_restarted(self):
        a = self.agent()
        p = a.launch_ok(["sleep", "30"], restart=policy("always", backoffMs=20))
        r = a.post("/v1/processes/%s/kill" % p["id"], {"signal": 15})
        self.assertIn(r.status, (200, 202, 204), r)
        st = a.wait_ended(p["id"])
        self.assertEqual(st["run"], 1)
        self.assertEqual(st["restart"]["state"], "stopped")
        self.assertEqual(st["restart"]["reason"], "signal")

    def test_harmless_signal_then_crash_restarts(self):
        """A signal tend sent that the run survives does not stop the policy."""
        a = self.agent()
        p = a.launch_ok(["sh", "-c", "trap 'exit 5' USR1; while :; do sleep 0.05; done"],
                        restart=policy(maxRestarts=1, backoffMs=20))
        time.sleep(0.3)
        r = a.post("/v1/processes/%s/kill" % p["id"], {"signal": 10})
        self.assertIn(r.status, (200, 202, 204), r)
        self.until_state(a, p["id"], lambda s: s["run"] == 2)
        a.post("/v1/processes/%s/kill" % p["id"], {"signal": 9})
        st = a.wait_ended(p["id"])
        self.assertEqual(st["run"], 2)
        self.assertEqual(st["runs"][0]["exit"]["code"], 5)
        self.assertEqual(st["restart"]["reason"], "signal")

    def test_kill_during_backoff_cancels(self):
        a = self.agent()
        p = a.launch_ok(["false"], restart=policy(backoffMs=60000))
        st = self.until_state(a, p["id"], lambda s: s.get("restart", {}).get("state") == "waiting")
        self.assertEqual(st["state"], "running")
        self.assertRegex(st["restart"]["nextRestartAt"], RFC3339_MS)
        self.assertEqual(st["restart"]["lastExit"]["code"], 1)
        r = a.post("/v1/processes/%s/kill" % p["id"], {"signal": 15})
        self.assertIn(r.status, (200, 202, 204), r)
        st = a.wait_ended(p["id"], timeout_ms=3000)
        self.assertEqual(st["state"], "exited")
        self.assertEqual(st["restart"]["state"], "stopped")
        self.assertEqual(st["restart"]["reason"], "cancelled")
        self.assertEqual(st["exit"]["code"], 1)
        self.assertEqual(st["run"], 1)

    def test_wait_returns_only_at_the_end(self):
        a = self.agent()
        p = a.launch_ok(["false"], restart=policy(backoffMs=60000))
        self.until_state(a, p["id"], lambda s: s["restart"]["state"] == "waiting")
        st = a.wait_proc(p["id"], timeout_ms=300)
        self.assertEqual(st["state"], "running")
        r = a.delete("/v1/processes/%s" % p["id"])
        self.assertEqual(r.status, 409, r)
        r = a.delete("/v1/processes/%s?force=1" % p["id"])
        self.assertIn(r.status, (200, 204), r)
        self.assertEqual(a.status(p["id"]).status, 404)

    def test_timeout_applies_per_run_and_is_not_restarted(self):
        a = self.agent()
        p = a.launch_ok(["sh", "-c", "if [ -e %s/once ]; then sleep 30; fi; touch %s/once; exit 1"
                         % (self.tmpdir(), self.tmpdir())],
                        timeout=400, restart=policy(backoffMs=20))
        t0 = time.monotonic()
        st = a.wait_ended(p["id"])
        self.assertEqual(st["run"], 2)
        self.assertTrue(st["exit"]["timedOut"])
        self.assertEqual(st["restart"]["reason"], "signal")
        self.assertGreaterEqual(time.monotonic() - t0, 0.38)

    def tmpdir(self):
        if not hasattr(self, "_tmp"):
            import tempfile
            self._tmp = tempfile.mkdtemp(prefix="tend-restart-")
            self.addCleanup(lambda: __import__("shutil").rmtree(self._tmp, ignore_errors=True))
        return self._tmp

    def test_shutdown_ends_policy(self):
        a = self.agent()
        p = a.launch_ok(["sleep", "30"], restart=policy("always", backoffMs=10))
        q = a.launch_ok(["false"], restart=policy(backoffMs=60000))
        self.until_state(a, q["id"], lambda s: s["restart"]["state"] == "waiting")
        a.stop()
        for rid in (p["id"], q["id"]):
            with open(os.path.join(a.proc_dir(p["bootId"], rid), "status.json")) as f:
                st = json.load(f)
            self.assertEqual(st["state"], "exited", st)
            self.assertEqual(st["restart"]["state"], "stopped", st)
            self.assertEqual(st["restart"]["reason"], "shutdown", st)
            self.assertEqual(st["run"], 1)

    def test_lost_record_is_not_relaunched(self):
        a = self.agent()
        state = a.state
        p = a.launch_ok(["false"], restart=policy(backoffMs=60000))
        self.until_state(a, p["id"], lambda s: s["restart"]["state"] == "waiting")
        time.sleep(0.2)
        a.kill()
        b = self.agent(state_dir=state)
        r = b.get("/v1/processes/%s" % p["id"], headers={"Tend-Boot": p["bootId"]})
        self.assertEqual(r.status, 200, r)
        st = r.json
        self.assertEqual(st["state"], "error", st)
        self.assertEqual(st["restart"]["policy"], "on-failure")
        self.assertEqual(st["restart"]["state"], "lost")
        # Nothing runs it in the new boot.
        self.assertEqual(b.get("/v1/processes/%s" % p["id"]).status, 404)

    # ---------------------------------------------------------------- stdin, output

    def test_stdin_per_run(self):
        a = self.agent()
        p = a.launch_ok(["sh", "-c", "read x; echo got $x; exit 1"], stdin="pipe",
                        restart=policy(maxRestarts=1, backoffMs=20))
        r = a.post("/v1/processes/%s/stdin" % p["id"], b"one\n",
                   headers={"Content-Type": "application/octet-stream"})
        self.assertIn(r.status, (200, 204), r)
        self.until_state(a, p["id"], lambda s: s["run"] == 2 and s["restart"]["state"] == "running")
        r = a.post("/v1/processes/%s/stdin" % p["id"], b"two\n",
                   headers={"Content-Type": "application/octet-stream"})
        self.assertIn(r.status, (200, 204), r)
        st = a.wait_ended(p["id"])
        self.assertEqual(st["run"], 2)
        out = a.get("/v1/processes/%s/stdout" % p["id"])
        self.assertEqual(out.body, b"got one\ngot two\n")

    def test_follower_spans_runs(self):
        """An SSE follower of the output sees every run's bytes, in order, once."""
        a = self.agent()
        p = a.launch_ok(["sh", "-c", "for i in 1 2 3; do echo line$i; done; exit 1"],
                        restart=policy(maxRestarts=2, backoffMs=50))
        ev = a.sse("/v1/processes/%s/logs?follow=1" % p["id"], timeout=10)
        self.assertTrue(ev.closed, ev.events[-3:] if ev.events else ev)
        chunks = [e["json"] for e in ev.events if e.get("json") and e["json"].get("type") == "stdout"]
        data = b"".join(base64.b64decode(c["data"]) for c in chunks)
        self.assertEqual(data, b"line1\nline2\nline3\n" * 3)
        self.assertEqual(ev.events[-1]["json"]["type"], "terminal")
        st = a.status(p["id"]).json
        self.assertEqual(st["run"], 3)

    # ---------------------------------------------------------------- bodies

    def test_bad_bodies(self):
        a = self.agent()
        for bad in ({"policy": "sometimes"}, {"policy": 3}, "always", {},
                    {"policy": "always", "maxRestarts": -1},
                    {"policy": "always", "maxRestarts": 1.5},
                    {"policy": "always", "backoffMs": -5},
                    {"policy": "always", "maxBackoffMs": "x"}):
            r = a.launch(["true"], restart=bad)
            self.assertError(r, 400, "invalid_request")
        r = a.post("/v1/exec", {"argv": ["true"], "restart": {"policy": "always"}})
        self.assertError(r, 400, "invalid_request")

    def test_no_policy_has_no_fields(self):
        a = self.agent()
        p = a.launch_ok(["true"])
        st = a.wait_ended(p["id"])
        for k in ("run", "restarts", "restart", "runs"):
            self.assertNotIn(k, st)
        p = a.launch_ok(["true"], restart={"policy": "no"})
        st = a.wait_ended(p["id"])
        self.assertNotIn("restart", st)

    def test_meta_records_policy(self):
        a = self.agent()
        p = a.launch_ok(["true"], restart=policy("always", maxRestarts=0))
        a.wait_ended(p["id"])
        with open(os.path.join(a.proc_dir(p["bootId"], p["id"]), "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["options"]["restart"]["policy"], "always")
        self.assertEqual(meta["options"]["restart"]["maxRestarts"], 0)


class RestartCliTest(AgentTestCase):

    def tend(self, a, *args, timeout=20):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEND_")}
        return subprocess.run([TEND_BIN] + list(args[:1]) + ["-S", a.sock] + list(args[1:]),
                              capture_output=True, timeout=scaled(timeout), env=env)

    def test_start_restart_then_wait(self):
        a = self.agent()
        r = self.tend(a, "start", "--id", "svc", "--restart", "on-failure", "--max-restarts", "2",
                      "--backoff", "0.05", "--max-backoff", "0.1", "--", "sh", "-c", "echo x; exit 4")
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stdout.strip(), b"svc")
        r = self.tend(a, "wait", "svc")
        self.assertEqual(r.returncode, 4, r)
        r = self.tend(a, "status", "--json", "svc")
        st = json.loads(r.stdout)
        self.assertEqual(st["run"], 3)
        self.assertEqual(st["restart"], {"policy": "on-failure", "maxRestarts": 2, "backoffMs": 50,
                                         "maxBackoffMs": 100, "state": "gave_up",
                                         "reason": "maxRestarts",
                                         "lastExit": st["exit"]})
        r = self.tend(a, "logs", "svc")
        self.assertEqual(r.stdout, b"x\n" * 3)

    def test_ps_shows_waiting_and_kill_cancels(self):
        a = self.agent()
        r = self.tend(a, "start", "--id", "w", "--restart", "always", "--backoff", "60", "--", "true")
        self.assertEqual(r.returncode, 0, r)
        poll(lambda: a.status("w").json["restart"]["state"] == "waiting")
        r = self.tend(a, "ps")
        self.assertEqual(r.returncode, 0, r)
        row = [l for l in r.stdout.decode().splitlines() if l.startswith("w ")]
        self.assertEqual(len(row), 1, r.stdout)
        self.assertIn(" waiting ", row[0])
        r = self.tend(a, "kill", "w")
        self.assertEqual(r.returncode, 0, r)
        r = self.tend(a, "wait", "--json", "w")
        st = json.loads(r.stdout)
        self.assertEqual(st["restart"]["reason"], "cancelled")

    def test_usage_errors(self):
        a = self.agent()
        for args in (["--backoff", "1"], ["--max-restarts", "3"], ["--restart", "sometimes"],
                     ["--restart", "always", "--max-restarts", "-1"]):
            r = self.tend(a, "start", *args, "--", "true")
            self.assertEqual(r.returncode, 2, (args, r))
            self.assertIn(b"usage", r.stderr.lower() + r.stdout.lower(), r)
        self.assertEqual(a.get("/v1/processes?all=1").json, [])


class RestartUpgradeTest(UpgradeCase):
    """The policy's state and a pending readiness cross a live upgrade."""

    def test_policy_and_readiness_cross_an_upgrade(self):
        a = self.agent()
        w = a.launch_ok(["sh", "-c", "echo w; exit 3"], id="w",
                        restart=policy(maxRestarts=1, backoffMs=1500))
        s = a.launch_ok(["sleep", "100"], id="s", restart=policy("always", backoffMs=10))
        r = a.launch_ok(["sh", "-c", "sleep 1.5; echo READY; sleep 100"], id="r",
                        ready={"log": "READY", "timeoutMs": 20000})
        st = poll(lambda: (lambda j: j if j["restart"]["state"] == "waiting" else None)(
            a.status("w").json))
        self.assertTrue(st)
        t_fail = time.monotonic()
        self.upgrade(a, self.next_bin, 1, self.next_version)
        st = a.status("w").json
        self.assertEqual(st["restart"]["state"], "waiting", st)
        self.assertEqual(st["run"], 1)
        self.assertEqual(a.status("r").json["readiness"], "waiting")
        # The next run comes at the deadline the old agent set.
        st = a.wait_ended("w", timeout_ms=10000)
        self.assertEqual(st["run"], 2, st)
        self.assertEqual(st["restart"]["state"], "gave_up")
        self.assertEqual([x["run"] for x in st["runs"]], [1, 2])
        self.assertEqual([x["stdoutOffset"] for x in st["runs"]], [0, 2])
        self.assertGreaterEqual(st["runs"][1]["startedAt"], st["runs"][0]["endedAt"])
        out = a.get("/v1/processes/w/stdout")
        self.assertEqual(out.body, b"w\nw\n")
        # The policy still holds, and tend's kill still ends it.
        self.assertEqual(a.status("s").json["restart"]["state"], "running")
        self.assertEqual(a.post("/v1/processes/s/kill", {"signal": 15}).status, 204)
        st = a.wait_ended("s")
        self.assertEqual((st["run"], st["restart"]["reason"]), (1, "signal"))
        # The readiness the old agent watched is settled by the new one.
        st = a.post("/v1/processes/r/wait?for=ready", b"", timeout=15)
        self.assertEqual(st.status, 200, st)
        self.assertTrue(st.json["ready"], st.json)
        self.assertGreaterEqual(time.monotonic() - t_fail, 1.0)


if __name__ == "__main__":
    unittest.main()
