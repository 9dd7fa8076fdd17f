"""Black-box tests of the command line (`tend ps`, `run`, `logs`, ...): the
client subcommands of $TEND_BIN against a live agent, PID 1 of its own PID
namespace.  What is checked is what an operator or an exec-driven program
sees: stdout, stderr and the exit code (0 ok, 1 refused by the agent, 2
usage, 3 agent unreachable, 4 no such process, 5 ID taken, 6 ended before
ready, 124 timeout; run and wait pass the process's exit code through), and
with --json the route's own reply, compared with what the agent answers."""
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import HEX32, ID_RE, Agent, poll, scaled, TEND_BIN  # noqa: E402

COMMANDS = ("health", "ps", "start", "run", "logs", "status", "wait", "kill", "send", "rm",
            "freeze", "thaw")

# Every option each command's --help must list (besides --socket and --help).
OPTIONS = {
    "health": ("--json",),
    "ps": ("--all", "--json", "--boot", "--resources"),
    "start": ("--id", "--cwd", "--env", "--user", "--timeout", "--stdin",
              "--memory", "--memory-high", "--pids", "--cpus"),
    "run": ("--id", "--cwd", "--env", "--user", "--timeout", "--stdin",
            "--memory", "--memory-high", "--pids", "--cpus"),
    "logs": ("--follow", "--stdout", "--stderr", "--since", "--boot"),
    "status": ("--boot",),
    "wait": ("--timeout",),
    "kill": ("--signal",),
    "send": ("--close",),
    "rm": ("--force",),
    "freeze": ("--json",),
    "thaw": ("--json",),
}


def client_env(extra=None):
    """The caller's environment without TEND_* settings that would steer the client."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEND_")}
    env.update(extra or {})
    return env


class CliCase(unittest.TestCase):
    """One agent for the class; each test uses its own process IDs."""

    agent = None

    @classmethod
    def setUpClass(cls):
        if not os.access(TEND_BIN, os.X_OK):
            raise unittest.SkipTest("TEND_BIN %s is not an executable" % TEND_BIN)
        cls.agent = Agent()
        try:
            cls.agent.wait_healthy()
        except Exception:
            cls.agent.close()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.agent is not None:
            cls.agent.close()

    def tend(self, *args, input=None, timeout=20, env=None, sock=True):
        """Run the client to completion: CompletedProcess with bytes."""
        argv = [TEND_BIN] + (["-S", self.agent.sock] if sock else []) + list(args)
        return subprocess.run(argv, input=input, capture_output=True, timeout=scaled(timeout),
                              env=client_env(env), stdin=None if input is not None else subprocess.DEVNULL)

    def popen(self, *args, **kw):
        argv = [TEND_BIN, "-S", self.agent.sock] + list(args)
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=client_env(), **kw)

    def ok(self, *args, **kw):
        r = self.tend(*args, **kw)
        self.assertEqual(r.returncode, 0, r)
        return r

    def start(self, pid_id, *argv, opts=()):
        r = self.ok("start", "--id", pid_id, *opts, "--", *argv)
        self.assertEqual(r.stdout, pid_id.encode() + b"\n", r)
        return pid_id

    def assertOneLineError(self, r, code):
        """One line on stderr, "tend: ...", and the exit code."""
        self.assertEqual(r.returncode, code, r)
        err = r.stderr.decode()
        self.assertTrue(err.startswith("tend: "), r)
        self.assertTrue(err.endswith("\n"), r)
        self.assertEqual(err.count("\n"), 1, r)
        return err[len("tend: "):-1]

    def assertUsage(self, r):
        self.assertEqual(r.returncode, 2, r)
        self.assertIn(b"usage: tend", r.stderr, r)
        self.assertEqual(r.stdout, b"", r)


class TestRun(CliCase):

    def test_stdout_and_stderr_split(self):
        r = self.tend("run", "--", "sh", "-c", "printf 'to out\\n'; printf 'to err\\n' >&2")
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stdout, b"to out\n")
        self.assertEqual(r.stderr, b"to err\n")

    def test_exit_code_passed_through(self):
        r = self.tend("run", "--", "sh", "-c", "echo bye; exit 3")
        self.assertEqual(r.returncode, 3, r)
        self.assertEqual(r.stdout, b"bye\n")

    def test_killed_by_signal_is_128_plus_n(self):
        r = self.tend("run", "--", "sh", "-c", "kill -9 $$")
        self.assertEqual(r.returncode, 137, r)

    def test_binary_output_exact(self):
        data = bytes(range(256)) * 300
        # Bytes that are no text, and more than one chunk: through base64 and back unchanged.
        r = self.tend("run", "--stdin", "--", "cat", input=data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, data)

    def test_line_arrives_before_process_ends(self):
        p = self.popen("run", "--", "sh", "-c", "echo first; sleep 3; echo second")
        try:
            t0 = time.monotonic()
            line = p.stdout.readline()
            took = time.monotonic() - t0
            self.assertEqual(line, b"first\n")
            self.assertLess(took, scaled(2.5), "the first line waited for the process to end")
            self.assertIsNone(p.poll(), "tend run ended before its process")
            rest, _ = p.communicate(timeout=scaled(10))
            self.assertEqual(rest, b"second\n")
            self.assertEqual(p.returncode, 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def test_sigint_and_sigterm_forwarded(self):
        script = ('trap "echo got INT; exit 42" INT; trap "echo got TERM; exit 43" TERM; '
                  'echo ready; while :; do sleep 0.1; done')
        for sig, code, word in ((signal.SIGINT, 42, b"INT"), (signal.SIGTERM, 43, b"TERM")):
            with self.subTest(sig=sig):
                p = self.popen("run", "--", "sh", "-c", script)
                try:
                    self.assertEqual(p.stdout.readline(), b"ready\n")
                    p.send_signal(sig)
                    out, err = p.communicate(timeout=scaled(10))
                    self.assertEqual(out, b"got " + word + b"\n", err)
                    self.assertEqual(p.returncode, code, err)
                finally:
                    if p.poll() is None:
                        p.kill()
                        p.wait()

    def test_given_id_and_logs_kept(self):
        r = self.ok("run", "--id", "run-kept", "--", "sh", "-c", "echo kept")
        self.assertEqual(r.stdout, b"kept\n")
        r = self.ok("logs", "run-kept")
        self.assertEqual(r.stdout, b"kept\n")

    def test_generated_id_in_table(self):
        self.ok("run", "--", "sh", "-c", "exit 0")
        r = self.ok("ps", "-a", "--json")
        ids = [s["id"] for s in json.loads(r.stdout)]
        self.assertTrue(any(i.startswith("run-") and ID_RE.match(i) for i in ids), ids)

    def test_env_cwd_stdin(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.tend("run", "-e", "GREETING=hello there", "--cwd", d, "--stdin", "--",
                          "sh", "-c", 'echo "$GREETING"; pwd; cat', input=b"from stdin\n")
            self.assertEqual(r.returncode, 0, r)
            self.assertEqual(r.stdout, b"hello there\n" + os.path.realpath(d).encode() + b"\nfrom stdin\n")

    def test_timeout(self):
        r = self.tend("run", "--timeout", "0.3", "--", "sleep", "30")
        self.assertIn(r.returncode, (143, 137), r)

    def test_spawn_failure_is_refusal(self):
        msg = self.assertOneLineError(self.tend("run", "--", "/nonexistent/binary"), 1)
        self.assertTrue(msg, msg)


class TestStartLogs(CliCase):

    def test_start_prints_generated_id(self):
        r = self.ok("start", "--", "true")
        pid_id = r.stdout.decode().strip()
        self.assertRegex(pid_id, ID_RE)
        self.assertEqual(r.stdout.count(b"\n"), 1)

    def test_start_taken_id_refused(self):
        self.start("taken", "true")
        # 5: the ID is someone else's (claim-once is one exec).
        self.assertOneLineError(self.tend("start", "--id", "taken", "--", "true"), 5)

    def test_logs_follow_until_end(self):
        self.start("follow", "sh", "-c",
                   "for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.3; done")
        r = self.ok("logs", "-f", "follow", timeout=20)
        self.assertEqual(r.stdout, b"out1\nout2\nout3\n")
        self.assertEqual(r.stderr, b"err1\nerr2\nerr3\n")

    def test_logs_streams_filtered(self):
        self.start("filter", "sh", "-c", "echo o; echo e >&2")
        self.ok("wait", "filter")
        r = self.ok("logs", "--stdout", "filter")
        self.assertEqual((r.stdout, r.stderr), (b"o\n", b""))
        r = self.ok("logs", "--stderr", "filter")
        self.assertEqual((r.stdout, r.stderr), (b"", b"e\n"))
        self.assertUsage(self.tend("logs", "--stdout", "--stderr", "filter"))

    def test_logs_without_follow_returns_while_running(self):
        self.start("still", "sh", "-c", "echo early; sleep 30")
        poll(lambda: self.tend("logs", "still").stdout == b"early\n")
        r = self.ok("logs", "still", timeout=10)
        self.assertEqual(r.stdout, b"early\n")
        self.ok("kill", "-s", "KILL", "still")

    def test_logs_since_cursor(self):
        self.start("since", "sh", "-c", "echo one; sleep 0.3; echo two")
        self.ok("wait", "since")
        s = self.agent.sse("/v1/processes/since/logs")
        outs = s.of_type("stdout")
        self.assertTrue(outs, s.events)
        first = [e for e in s.events if e.get("json", {}).get("type") == "stdout"][0]
        r = self.ok("logs", "--since", first["id"], "since")
        whole = self.ok("logs", "since").stdout
        self.assertTrue(whole.endswith(r.stdout), (whole, r.stdout))
        self.assertLess(len(r.stdout), len(whole))

    def test_logs_boot_pin(self):
        self.start("pinned", "sh", "-c", "echo pinned")
        self.ok("wait", "pinned")
        boot = self.agent.get("/v1/health").json["bootId"]
        self.assertEqual(self.ok("logs", "--boot", boot, "pinned").stdout, b"pinned\n")
        self.assertEqual(json.loads(self.ok("status", "--boot", boot, "pinned").stdout)["id"], "pinned")
        self.ok("ps", "--boot", boot)
        self.assertOneLineError(self.tend("logs", "--boot", "0" * 32, "pinned"), 1)


class TestPs(CliCase):

    def test_table_and_json(self):
        self.start("ps-run", "sleep", "30")
        self.start("ps-done", "sh", "-c", "exit 5")
        self.assertEqual(self.tend("wait", "ps-done").returncode, 5)
        r = self.ok("ps")
        lines = r.stdout.decode().splitlines()
        self.assertEqual(lines[0].split(), ["ID", "PID", "STATE", "EXIT", "AGE", "COMMAND"])
        rows = {ln.split()[0]: ln.split() for ln in lines[1:]}
        self.assertIn("ps-run", rows)
        self.assertNotIn("ps-done", rows, "ps without -a lists only running processes")
        self.assertEqual(rows["ps-run"][2], "running")
        self.assertEqual(rows["ps-run"][-2:], ["sleep", "30"])

        r = self.ok("ps", "-a")
        rows = {ln.split()[0]: ln.split() for ln in r.stdout.decode().splitlines()[1:]}
        self.assertEqual(rows["ps-done"][2:4], ["exited", "5"])

        arr = json.loads(self.ok("ps", "--json").stdout)
        self.assertIsInstance(arr, list)
        self.assertIn("ps-run", [s["id"] for s in arr])
        self.assertTrue(all(s["state"] == "running" for s in arr), arr)
        arr = json.loads(self.ok("ps", "-a", "--json").stdout)
        self.assertIn("ps-done", [s["id"] for s in arr])
        self.ok("kill", "-s", "KILL", "ps-run")


class TestKillWait(CliCase):

    def test_kill_default_term_then_wait(self):
        self.start("kw-term", "sleep", "30")
        r = self.ok("kill", "kw-term")
        self.assertEqual(r.stdout, b"")
        r = self.tend("wait", "kw-term")
        self.assertEqual(r.returncode, 143, r)

    def test_kill_signal_spellings(self):
        for i, spelling in enumerate(("KILL", "SIGKILL", "9", "kill")):
            with self.subTest(signal=spelling):
                pid_id = self.start("kw-sig%d" % i, "sleep", "30")
                self.ok("kill", "-s", spelling, pid_id)
                self.assertEqual(self.tend("wait", pid_id).returncode, 137)

    def test_kill_usr1_reaches_process(self):
        self.start("kw-usr1", "sh", "-c", 'trap "exit 7" USR1; while :; do sleep 0.1; done')
        time.sleep(0.3)
        self.ok("kill", "--signal", "USR1", "kw-usr1")
        self.assertEqual(self.tend("wait", "kw-usr1").returncode, 7)

    def test_wait_exit_code_and_timeout(self):
        self.start("kw-exit", "sh", "-c", "sleep 0.2; exit 9")
        self.assertEqual(self.tend("wait", "kw-exit").returncode, 9)
        self.start("kw-long", "sleep", "30")
        t0 = time.monotonic()
        r = self.tend("wait", "--timeout", "0.5", "kw-long")
        self.assertEqual(r.returncode, 124, r)
        self.assertLess(time.monotonic() - t0, scaled(5))
        self.ok("kill", "-s", "KILL", "kw-long")

    def test_kill_ended_refused(self):
        self.start("kw-ended", "true")
        self.ok("wait", "kw-ended")
        self.assertOneLineError(self.tend("kill", "kw-ended"), 1)

    def test_bad_signal_is_usage(self):
        for bad in ("NOPE", "0", "65", "-1", "1.5"):
            with self.subTest(signal=bad):
                self.assertUsage(self.tend("kill", "-s", bad, "whatever"))


class TestSend(CliCase):

    def test_send_then_close(self):
        self.start("cat", "cat", opts=("--stdin",))
        r = self.ok("send", "cat", input=b"hello\n")
        self.assertEqual(r.stdout, b"")
        self.ok("send", "--close", "cat", input=b"world\n")
        self.assertEqual(self.tend("wait", "cat").returncode, 0)
        self.assertEqual(self.ok("logs", "cat").stdout, b"hello\nworld\n")

    def test_close_with_empty_input(self):
        self.start("cat-empty", "sh", "-c", "cat; echo eof", opts=("--stdin",))
        self.ok("send", "--close", "cat-empty", input=b"")
        self.assertEqual(self.tend("wait", "cat-empty").returncode, 0)
        self.assertEqual(self.ok("logs", "cat-empty").stdout, b"eof\n")

    def test_large_input_streamed(self):
        data = os.urandom(3 * 1024 * 1024)
        self.start("cat-big", "sh", "-c", "wc -c", opts=("--stdin",))
        self.ok("send", "--close", "cat-big", input=data, timeout=60)
        self.ok("wait", "cat-big")
        self.assertEqual(self.ok("logs", "cat-big").stdout.split(), [str(len(data)).encode()])

    def test_send_without_pipe_refused(self):
        self.start("no-pipe", "sleep", "30")
        self.assertOneLineError(self.tend("send", "no-pipe", input=b"x"), 1)
        self.ok("kill", "-s", "KILL", "no-pipe")


class TestStatusRm(CliCase):

    def test_status_json(self):
        self.start("st", "sh", "-c", "exit 4")
        self.assertEqual(self.tend("wait", "st").returncode, 4)
        st = json.loads(self.ok("status", "st").stdout)
        self.assertEqual(st["id"], "st")
        self.assertEqual(st["state"], "exited")
        self.assertEqual(st["exit"]["code"], 4)

    def test_rm(self):
        self.start("rm-me", "sleep", "30")
        self.assertOneLineError(self.tend("rm", "rm-me"), 1)
        self.ok("rm", "-f", "rm-me")
        self.assertOneLineError(self.tend("status", "rm-me"), 4)


class TestErrors(CliCase):

    def test_unknown_id(self):
        want = self.agent.get("/v1/processes/nosuch").json["error"]
        for cmd in (("status",), ("logs",), ("wait",), ("kill",), ("rm",)):
            with self.subTest(cmd=cmd):
                r = self.tend(*cmd, "nosuch")
                self.assertEqual(self.assertOneLineError(r, 4), want)
                self.assertEqual(r.stdout, b"")

    def test_no_agent(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tend.sock")
            for cmd in (("health",), ("ps",), ("status", "x"), ("run", "--", "true")):
                with self.subTest(cmd=cmd):
                    r = self.tend("-S", path, *cmd, sock=False)
                    msg = self.assertOneLineError(r, 3)
                    self.assertIn("cannot connect to " + path, msg)
                    self.assertIn("No such file or directory", msg)
            # The socket after the command, and from the environment.
            msg = self.assertOneLineError(self.tend("ps", "-S", path, sock=False), 3)
            self.assertIn(path, msg)
            msg = self.assertOneLineError(self.tend("ps", sock=False, env={"TEND_SOCKET": path}), 3)
            self.assertIn(path, msg)

    def test_socket_from_environment(self):
        r = self.tend("health", sock=False, env={"TEND_SOCKET": self.agent.sock})
        self.assertEqual(r.returncode, 0, r)

    def test_bad_usage(self):
        cases = (
            ("ps", "--bogus"),
            ("ps", "extra"),
            ("nosuchcommand",),
            ("logs",),
            ("status",),
            ("run",),
            ("run", "--"),
            ("start", "--timeout", "abc", "--", "true"),
            ("run", "--timeout", "-1", "--", "true"),
            ("wait", "--timeout"),
            ("run", "-e", "=x", "--", "true"),
            ("kill", "-s"),
            ("--bogus-global", "ps"),
        )
        for args in cases:
            with self.subTest(args=args):
                self.assertUsage(self.tend(*args))
        r = self.tend(sock=False)
        self.assertEqual(r.returncode, 2, r)


class TestHelpHealth(CliCase):

    def test_main_help(self):
        r = self.ok("--help", sock=False)
        out = r.stdout.decode()
        for cmd in COMMANDS:
            self.assertRegex(out, r"(?m)^\s+%s\s" % cmd)
        self.assertIn("--socket", out)
        self.assertIn("Exit codes", out)

    def test_command_help_lists_every_option(self):
        for cmd, opts in OPTIONS.items():
            with self.subTest(cmd=cmd):
                r = self.ok(cmd, "--help", sock=False)
                out = r.stdout.decode()
                self.assertTrue(out.startswith("usage: tend %s" % cmd), out)
                for opt in opts + ("--socket", "--help"):
                    self.assertIn(opt, out)
                self.assertIn("Exit codes", out)

    def test_health(self):
        boot = self.agent.get("/v1/health").json["bootId"]
        self.assertRegex(boot, HEX32)
        out = self.ok("health").stdout.decode()
        self.assertIn(boot, out)
        j = json.loads(self.ok("health", "--json").stdout)
        self.assertEqual(j["bootId"], boot)



# ---------------------------------------------------------------- the CLI as an API

def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """A TCP port nothing listens on right now."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ApiCase(CliCase):
    """Helpers to compare the client's --json output with the route's reply."""

    def route(self, method, path, body=None, headers=None):
        r = self.agent.request(method, path, body=body, headers=headers)
        return r

    def ended(self, pid_id, *argv):
        self.start(pid_id, *argv)
        self.agent.wait_ended(pid_id)
        return pid_id

    def assertRaw(self, r, route_body):
        """stdout is the route's body as it came, and a newline."""
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stdout, route_body + b"\n")
        return json.loads(r.stdout)

    def assertJsonError(self, r, code, route=None, err_code=None):
        """The exit code, nothing on stdout, one JSON error object on stderr
        (the route's own, when given)."""
        self.assertEqual(r.returncode, code, r)
        self.assertEqual(r.stdout, b"", r)
        self.assertTrue(r.stderr.endswith(b"\n") and r.stderr.count(b"\n") == 1, r)
        j = json.loads(r.stderr)
        self.assertIsInstance(j.get("error"), str, j)
        self.assertIsInstance(j.get("code"), str, j)
        if route is not None:
            self.assertEqual(r.stderr, route.body + b"\n")
        if err_code is not None:
            self.assertEqual(j["code"], err_code, j)
        return j


class TestJson(ApiCase):
    """Every command's --json is the route's reply, byte for byte."""

    def test_health(self):
        r = self.ok("health", "--json")
        self.assertEqual(r.stdout.count(b"\n"), 1, "one line, as the agent sent it")
        got = json.loads(r.stdout)
        want = self.agent.health()
        self.assertGreaterEqual(got.pop("uptimeMs"), 0)
        want.pop("uptimeMs")
        self.assertEqual(got, want)

    def test_ps(self):
        self.start("js-ps-run", "sleep", "30")
        self.ended("js-ps-done", "sh", "-c", "exit 2")
        self.addCleanup(self.tend, "kill", "-s", "KILL", "js-ps-run")
        for args, path in ((("ps", "--json"), "/v1/processes?state=running"),
                           (("ps", "-a", "--json"), "/v1/processes")):
            with self.subTest(args=args):
                want = self.route("GET", path).body
                arr = self.assertRaw(self.ok(*args), want)
                self.assertIn("js-ps-run", [p["id"] for p in arr])
                self.assertEqual("js-ps-done" in [p["id"] for p in arr], "-a" in args)

    def test_ps_terminals_is_the_route_reply(self):
        # The terminals route's reply as it came, exit 0.
        r = self.agent.post("/v1/terminals", {"argv": ["sleep", "30"], "id": "js-term"})
        self.assertEqual(r.status, 200, r)
        self.addCleanup(self.agent.delete, "/v1/terminals/js-term")
        want = self.route("GET", "/v1/terminals")
        self.assertEqual(want.status, 200)
        arr = self.assertRaw(self.ok("ps", "--terminals", "--json"), want.body)
        self.assertIn("js-term", [t["id"] for t in arr])

    def test_start_status_wait(self):
        r = self.ok("start", "--id", "js-st", "--json", "--", "sh", "-c", "echo out; exit 3")
        st = json.loads(r.stdout)
        self.assertEqual(r.stdout.count(b"\n"), 1)
        self.assertEqual((st["id"], st["command"], st["bootId"]),
                         ("js-st", ["sh", "-c", "echo out; exit 3"], self.agent.health()["bootId"]))
        self.assertIn(st["state"], ("running", "exited"))
        # wait --json: the final status, exit 0 although the process exited 3.
        wait = self.route("POST", "/v1/processes/js-st/wait?timeout=10000", b"")
        got = self.assertRaw(self.ok("wait", "--json", "js-st"), wait.body)
        self.assertEqual(got["exit"]["code"], 3)
        self.assertRaw(self.ok("status", "--json", "js-st"),
                       self.route("GET", "/v1/processes/js-st").body)
        # Without --json, wait still exits with the process's code.
        self.assertEqual(self.tend("wait", "js-st").returncode, 3)

    def test_wait_timeout_prints_the_running_status(self):
        self.start("js-wt", "sleep", "30")
        self.addCleanup(self.tend, "kill", "-s", "KILL", "js-wt")
        r = self.tend("wait", "--json", "--timeout", "0.3", "js-wt")
        self.assertEqual(r.returncode, 124, r)
        st = json.loads(r.stdout)
        self.assertEqual((st["id"], st["state"]), ("js-wt", "running"))
        self.assertEqual(st, json.loads(self.route("GET", "/v1/processes/js-wt").body))

    def test_logs_poll(self):
        self.ended("js-logs", "sh", "-c", "echo one; echo two >&2; echo three")
        accept = {"Accept": "application/json"}
        want = self.route("GET", "/v1/processes/js-logs/logs", headers=accept).body
        j = self.assertRaw(self.ok("logs", "--json", "js-logs"), want)
        self.assertEqual(base64.b64decode(j["stdout"]), b"one\nthree\n")
        self.assertEqual(base64.b64decode(j["stderr"]), b"two\n")
        self.assertTrue(j["ended"])
        # --limit-bytes and --since are the route's limitBytes and since.
        first = self.route("GET", "/v1/processes/js-logs/logs?limitBytes=1", headers=accept)
        c = first.json["cursor"]
        self.assertRaw(self.ok("logs", "--json", "--limit-bytes", "1", "js-logs"), first.body)
        self.assertRaw(self.ok("logs", "--json", "--since", c, "js-logs"),
                       self.route("GET", "/v1/processes/js-logs/logs?since=" + c,
                                  headers=accept).body)

    def test_run_is_the_exec_reply(self):
        argv = ["sh", "-c", "printf 'a\\0b'; echo err >&2; exit 3"]
        r = self.ok("run", "--json", "--", *argv)
        got = json.loads(r.stdout)
        want = self.route("POST", "/v1/exec", {"argv": argv}).json
        self.assertEqual(set(got), set(want))
        for k in ("exit", "stdout", "stderr", "truncated"):
            self.assertEqual(got[k], want[k], k)
        self.assertEqual(base64.b64decode(got["stdout"]), b"a\0b")
        self.assertEqual(got["exit"]["code"], 3)
        # The run is a record like any other.
        self.assertEqual(self.route("GET", "/v1/processes/" + got["id"]).status, 200)

    def test_run_stdin_json(self):
        r = self.tend("run", "--json", "--stdin", "--", "wc", "-c", input=b"12345")
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(base64.b64decode(json.loads(r.stdout)["stdout"]).split(), [b"5"])

    def test_kill_send_rm_print_nothing(self):
        self.start("js-quiet", "cat", opts=("--stdin",))
        for args in (("send", "--json", "js-quiet"), ("send", "--json", "--close", "js-quiet")):
            r = self.tend(*args, input=b"x")
            self.assertEqual((r.returncode, r.stdout, r.stderr), (0, b"", b""), r)
        self.agent.wait_ended("js-quiet")
        self.start("js-quiet2", "sleep", "30")
        for args in (("kill", "--json", "js-quiet2"), ("rm", "--json", "js-quiet")):
            r = self.tend(*args)
            self.assertEqual((r.returncode, r.stdout, r.stderr), (0, b"", b""), r)
        self.agent.wait_ended("js-quiet2")

    def test_errors_are_the_routes_json(self):
        want = self.route("GET", "/v1/processes/nosuch")
        for args in (("status", "--json", "nosuch"), ("wait", "--json", "nosuch"),
                     ("logs", "--json", "nosuch"), ("kill", "--json", "nosuch"),
                     ("rm", "--json", "nosuch")):
            with self.subTest(args=args):
                self.assertJsonError(self.tend(*args), 4, route=want)
        self.ended("js-err", "true")
        want = self.route("POST", "/v1/processes/js-err/kill", {})
        self.assertEqual(want.status, 409)
        self.assertJsonError(self.tend("kill", "--json", "js-err"), 1, route=want)

    def test_unreachable_is_json_too(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.tend("-S", os.path.join(d, "none"), "status", "--json", "x", sock=False)
            j = self.assertJsonError(r, 3, err_code="unreachable")
            self.assertIn("cannot connect", j["error"])


class TestExitCodes(ApiCase):
    """One test per exit code of the table in README and `tend help`."""

    def test_0_ok(self):
        self.assertEqual(self.tend("health").returncode, 0)
        self.assertRaw(self.ok("status", "--json", self.ended("ec-0", "true")),
                       self.route("GET", "/v1/processes/ec-0").body)

    def test_1_refused(self):
        self.start("ec-1", "true")
        self.agent.wait_ended("ec-1")
        r = self.tend("kill", "ec-1")
        self.assertEqual(r.returncode, 1, r)
        self.assertJsonError(self.tend("kill", "--json", "ec-1"), 1, err_code="not_running")

    def test_2_usage(self):
        for args, why in ((("start", "--ready-port", "0", "--", "true"), b"bad --ready-port"),
                          (("start", "--ready-port", "4294967376", "--", "true"),
                           b"bad --ready-port"),
                          (("start", "--ready-log", "(", "--", "true"), b"bad --ready-log"),
                          (("start", "--ready-timeout", "1", "--", "true"), b"needs --ready-"),
                          (("logs", "--json", "-f", "x"), b"--follow"),
                          (("logs", "--limit-bytes", "5", "x"), b"goes with --json")):
            with self.subTest(args=args):
                r = self.tend(*args)
                self.assertUsage(r)
                self.assertIn(why, r.stderr)

    def test_3_unreachable(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.tend("-S", os.path.join(d, "none"), "ps", sock=False)
            self.assertEqual(r.returncode, 3, r)
            r = self.tend("-S", os.path.join(d, "none"), "logs", "--json", "x", sock=False)
            self.assertJsonError(r, 3, err_code="unreachable")

    def test_4_no_such_process(self):
        for args in (("status", "ec-none"), ("wait", "ec-none"), ("logs", "ec-none"),
                     ("kill", "ec-none"), ("rm", "ec-none"), ("send", "ec-none")):
            with self.subTest(args=args):
                r = self.tend(*args, input=b"")
                self.assertEqual(r.returncode, 4, r)

    def test_5_id_taken(self):
        self.start("ec-5", "sleep", "30")
        self.addCleanup(self.tend, "kill", "-s", "KILL", "ec-5")
        r = self.tend("start", "--id", "ec-5", "--json", "--", "true")
        self.assertJsonError(r, 5, err_code="id_taken")
        self.assertEqual(self.tend("run", "--id", "ec-5", "--", "true").returncode, 5)

    def test_6_ended_before_ready(self):
        r = self.tend("start", "--id", "ec-6", "--json", "--ready-log", "never", "--",
                      "sh", "-c", "echo starting; exit 3")
        self.assertEqual(r.returncode, 6, r)
        st = json.loads(r.stdout)
        self.assertEqual((st["state"], st["exit"]["code"]), ("exited", 3))
        self.assertEqual(json.loads(r.stderr)["code"], "ended")

    def test_124_timeout(self):
        self.start("ec-124", "sleep", "30")
        self.addCleanup(self.tend, "kill", "-s", "KILL", "ec-124")
        self.assertEqual(self.tend("wait", "--timeout", "0.2", "ec-124").returncode, 124)
        r = self.tend("wait", "--json", "--timeout", "0.2", "ec-124")
        self.assertEqual(r.returncode, 124, r)
        self.assertEqual(json.loads(r.stdout)["state"], "running")

    def test_process_code_without_json_zero_with(self):
        self.assertEqual(self.tend("run", "--", "sh", "-c", "exit 7").returncode, 7)
        self.assertEqual(self.tend("run", "--json", "--", "sh", "-c", "exit 7").returncode, 0)
        self.start("ec-kill", "sleep", "30")
        self.ok("kill", "ec-kill")
        self.assertEqual(self.tend("wait", "ec-kill").returncode, 143)
        self.assertEqual(self.tend("wait", "--json", "ec-kill").returncode, 0)


class TestReady(ApiCase):
    """start --ready-port / --ready-log / --ready-timeout."""

    def serve(self, pid_id, family, host):
        port = free_port(family, host)
        t0 = time.monotonic()
        r = self.tend("start", "--id", pid_id, "--ready-port", str(port), "--ready-timeout",
                      str(scaled(20)), "--", "python3", "-m", "http.server", "--bind", host,
                      str(port), "--directory", "/")
        took = time.monotonic() - t0
        self.addCleanup(self.tend, "kill", "-s", "KILL", pid_id)
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stdout, pid_id.encode() + b"\n")
        # Ready means listening: the very next connect succeeds.
        with socket.create_connection((host, port), timeout=scaled(5)) as s:
            s.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
            self.assertTrue(s.recv(64).startswith(b"HTTP/1.0 200"))
        return took

    def test_port_ipv4_http_server(self):
        took = self.serve("rd-http4", socket.AF_INET, "127.0.0.1")
        self.assertLess(took, scaled(15))

    def test_port_ipv6_http_server(self):
        try:
            free_port(socket.AF_INET6, "::1")
        except OSError:
            self.skipTest("no IPv6 loopback")
        self.serve("rd-http6", socket.AF_INET6, "::1")

    def test_log_line_on_stdout_and_stderr(self):
        for stream in ("", " >&2"):
            with self.subTest(stream=stream or "stdout"):
                pid_id = "rd-log%d" % len(stream)
                script = ("echo warming up; sleep 0.4; printf 'listen'%s; sleep 0.2; "
                          "echo 'ing on 4711'%s; sleep 30" % (stream, stream))
                t0 = time.monotonic()
                r = self.tend("start", "--id", pid_id, "--json", "--ready-log",
                              "^listening on [0-9]+$", "--", "sh", "-c", script)
                self.addCleanup(self.tend, "kill", "-s", "KILL", pid_id)
                self.assertEqual(r.returncode, 0, r)
                self.assertGreaterEqual(time.monotonic() - t0, 0.6, "ready before the line came")
                st = json.loads(r.stdout)
                self.assertEqual((st["id"], st["state"]), (pid_id, "running"))
                # The status printed is the one after the line was stored.
                self.assertGreaterEqual(st["stdoutBytes"] + st["stderrBytes"],
                                        len("warming up\nlistening on 4711\n"))

    def test_port_and_log_both_needed(self):
        port = free_port()
        script = ("echo ready; sleep 0.5; exec python3 -m http.server --bind 127.0.0.1 %d"
                  % port)
        r = self.tend("start", "--id", "rd-both", "--ready-log", "ready", "--ready-port",
                      str(port), "--ready-timeout", str(scaled(20)), "--", "sh", "-c", script)
        self.addCleanup(self.tend, "kill", "-s", "KILL", "rd-both")
        self.assertEqual(r.returncode, 0, r)
        socket.create_connection(("127.0.0.1", port), timeout=scaled(5)).close()

    def test_process_ends_first(self):
        port = free_port()
        r = self.tend("start", "--id", "rd-end", "--ready-port", str(port), "--",
                      "sh", "-c", "sleep 0.2; exit 4")
        self.assertEqual(r.returncode, 6, r)
        self.assertEqual(r.stdout, b"rd-end\n")
        self.assertIn(b"ended before it was ready", r.stderr)
        st = json.loads(self.ok("status", "--json", "rd-end").stdout)
        self.assertEqual(st["exit"]["code"], 4)

    def test_timeout_leaves_it_running(self):
        t0 = time.monotonic()
        r = self.tend("start", "--id", "rd-late", "--json", "--ready-log", "never",
                      "--ready-timeout", "0.5", "--", "sleep", "30")
        took = time.monotonic() - t0
        self.addCleanup(self.tend, "kill", "-s", "KILL", "rd-late")
        self.assertEqual(r.returncode, 124, r)
        self.assertGreaterEqual(took, 0.5)
        self.assertLess(took, scaled(5))
        self.assertEqual(json.loads(r.stdout)["state"], "running")
        self.assertEqual(json.loads(r.stderr)["code"], "timeout")
        self.assertEqual(json.loads(self.ok("status", "--json", "rd-late").stdout)["state"],
                         "running")


class TestLogsPoll(ApiCase):
    """Output reassembled from `tend logs --json --since` polls, no stream held."""

    def test_5mb_random_reassembled_while_running(self):
        size = 5 * 1024 * 1024
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "random")
            data = os.urandom(size)
            with open(src, "wb") as f:
                f.write(data)
            writer = ("import sys, time\n"
                      "d = open(%r, 'rb').read()\n"
                      "for i in range(0, len(d), 131072):\n"
                      "    sys.stdout.buffer.write(d[i:i + 131072]); sys.stdout.flush()\n"
                      "    time.sleep(0.02)\n" % src)
            self.start("poll-5mb", "python3", "-c", writer)
            got, cursor, polls, while_running = b"", None, 0, 0
            end = time.monotonic() + scaled(60)
            while time.monotonic() < end:
                args = ["logs", "--json", "--limit-bytes", "262144"]
                if cursor is not None:
                    args += ["--since", cursor]
                j = json.loads(self.ok(*args, "poll-5mb").stdout)
                polls += 1
                self.assertEqual(j["stderr"], "")
                self.assertNotIn("skippedBytes", j)
                got += base64.b64decode(j["stdout"])
                cursor = j["cursor"]
                if j["ended"]:
                    break
                while_running += 1
            self.assertEqual(len(got), size)
            self.assertTrue(got == data, "the reassembled output differs")
            self.assertGreater(while_running, 3, "the polls did not overlap the writer")


if __name__ == "__main__":
    unittest.main()
