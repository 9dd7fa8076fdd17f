"""Black-box tests of the command line's containment: `tend start/run --memory
--memory-high --pids --cpus` (the launch's "limits"), `tend freeze/thaw [ID]`,
`tend ps --resources` and the OOM mark in the EXIT column, and health's cgroups
line.  Against a live agent where the kernel takes part (a refused limit,
freeze of a counting process, a busy loop's CPU); against a stand-in agent on a
unix socket where what matters is the request the CLI sends or how it prints a
reply this machine cannot make (an OOM kill, memory figures)."""
import http.server
import json
import os
import re
import socketserver
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Agent, poll, scaled, TEND_BIN  # noqa: E402
from test_cli import CliCase  # noqa: E402

MiB = 1024 * 1024


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def address_string(self):
        return "unix"

    def _serve(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        srv = self.server
        srv.requests.append((self.command, self.path, json.loads(body) if body else None))
        status, reply = srv.reply(self.command, self.path)
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    do_GET = do_POST = _serve


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class FakeAgent:
    """A stand-in agent: it keeps every request and answers reply(method, path)."""

    def __init__(self, reply):
        self.tmp = tempfile.mkdtemp(prefix="tend-fake-")
        self.sock = os.path.join(self.tmp, "fake.sock")
        self.srv = _Server(self.sock, _Handler)
        self.srv.requests = []
        self.srv.reply = reply
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    @property
    def requests(self):
        return self.srv.requests

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
        os.unlink(self.sock)
        os.rmdir(self.tmp)


def ps_table(out):
    """The ps table as a list of dicts, column title to cell (COMMAND the rest of the line)."""
    lines = out.decode().splitlines()
    titles = lines[0].split()
    rows = []
    for line in lines[1:]:
        cells = line.split(None, len(titles) - 1)
        rows.append(dict(zip(titles, cells)))
    return titles, rows


class FakeCase(CliCase):
    """The client against a stand-in agent only: no live one started."""

    @classmethod
    def setUpClass(cls):
        if not os.access(TEND_BIN, os.X_OK):
            raise unittest.SkipTest("TEND_BIN %s is not an executable" % TEND_BIN)

    @classmethod
    def tearDownClass(cls):
        pass


class TestLimitsBody(FakeCase):
    """What start and run send: the flags as the launch body's "limits"."""

    def setUp(self):
        self.fake = FakeAgent(self.reply)
        self.addCleanup(self.fake.close)

    @staticmethod
    def reply(method, path):
        if path == "/v1/exec":
            return 200, {"id": "x", "exit": {"code": 0}, "stdout": "", "stderr": ""}
        return 200, {"id": "x", "state": "running"}

    def fake_tend(self, *args):
        return self.tend("-S", self.fake.sock, *args, sock=False)

    def body(self, *args):
        del self.fake.requests[:]
        r = self.fake_tend(*args)
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(len(self.fake.requests), 1, self.fake.requests)
        return self.fake.requests[0]

    def test_flags_become_limits(self):
        method, path, body = self.body("start", "--memory", "256M", "--memory-high", "200M",
                                       "--pids", "100", "--cpus", "0.5", "--", "true")
        self.assertEqual((method, path), ("POST", "/v1/processes"))
        self.assertEqual(body["limits"], {"memory": 256 * MiB, "memoryHigh": 200 * MiB,
                                          "pids": 100, "cpu": 0.5})
        self.assertEqual(body["argv"], ["true"])

    def test_run_sends_them_to_exec(self):
        method, path, body = self.body("run", "--json", "--pids", "7", "--cpus", "2",
                                       "--", "true")
        self.assertEqual((method, path), ("POST", "/v1/exec"))
        self.assertEqual(body["limits"], {"pids": 7, "cpu": 2})

    def test_only_what_is_given(self):
        _, _, body = self.body("start", "--memory", "1G", "--", "true")
        self.assertEqual(body["limits"], {"memory": 1024 * MiB})
        _, _, body = self.body("start", "--", "true")
        self.assertNotIn("limits", body)

    def test_sizes_are_binary(self):
        for arg, want in (("4096", 4096), ("1K", 1024), ("512k", 512 * 1024),
                          ("256M", 268435456), ("256MiB", 268435456), ("1.5G", 3 * 512 * MiB),
                          ("2T", 2 * 1024 ** 4)):
            with self.subTest(arg=arg):
                _, _, body = self.body("start", "--memory", arg, "--", "true")
                self.assertEqual(body["limits"], {"memory": want})

    def test_bad_values_are_usage_errors(self):
        bad = [("--memory", v) for v in ("", "0", "-1", "25X", "1.5.5M", "M", "12 M", "1e30")]
        bad += [("--memory-high", v) for v in ("0", "lots")]
        bad += [("--pids", v) for v in ("0", "-3", "1.5", "x", "")]
        bad += [("--cpus", v) for v in ("0", "-1", "abc", "nan", "inf", "")]
        for cmd in ("start", "run"):
            for opt, val in bad:
                with self.subTest(cmd=cmd, opt=opt, val=val):
                    r = self.fake_tend(cmd, opt, val, "--", "true")
                    self.assertUsage(r)
                    self.assertIn(opt.encode(), r.stderr)
        self.assertEqual(self.fake.requests, [], "a usage error reached the agent")


class TestLimitsRefused(CliCase):
    """A limit whose controller the agent's records do not get: exit 1, never run."""

    def controllers(self):
        return self.agent.get("/v1/health").json["cgroups"]["controllers"]

    def test_missing_controller_is_refused(self):
        have = self.controllers()
        for opt, val, ctrl in (("--memory", "256M", "memory"), ("--memory-high", "64M", "memory"),
                               ("--pids", "100", "pids"), ("--cpus", "0.5", "cpu")):
            if ctrl in have:
                continue
            for cmd in ("start", "run"):
                with self.subTest(cmd=cmd, opt=opt):
                    pid_id = "lim-%s-%s" % (cmd, opt.strip("-"))
                    msg = self.assertOneLineError(
                        self.tend(cmd, "--id", pid_id, opt, val, "--", "true"), 1)
                    self.assertIn(ctrl, msg)
                    r = self.tend(cmd, "--json", "--id", pid_id, opt, val, "--", "true")
                    self.assertEqual(r.returncode, 1, r)
                    self.assertEqual(r.stdout, b"", r)
                    err = json.loads(r.stderr)
                    self.assertEqual(err["code"], "limits_unavailable", err)
                    self.assertEqual(err["field"], "limits", err)
                    self.assertIn(ctrl, err["error"])
                    # Refused, not run without the limit.
                    self.assertEqual(self.agent.get("/v1/processes/" + pid_id).status, 404)

    def test_given_controller_shows_in_status(self):
        have = self.controllers()
        if "pids" not in have:
            self.skipTest("the agent's records get no pids controller here")
        self.start("lim-pids", "sleep", "30", opts=("--pids", "50"))
        try:
            st = json.loads(self.ok("status", "--json", "lim-pids").stdout)
            self.assertEqual(st["limits"], {"pids": 50})
        finally:
            self.tend("rm", "-f", "lim-pids")


class TestNoCgroups(CliCase):
    """An agent run with --no-cgroups: limits and freeze refused, health says why."""

    @classmethod
    def setUpClass(cls):
        if not os.access(TEND_BIN, os.X_OK):
            raise unittest.SkipTest("TEND_BIN %s is not an executable" % TEND_BIN)
        cls.agent = Agent(extra=["--no-cgroups"])
        try:
            cls.agent.wait_healthy()
        except Exception:
            cls.agent.close()
            raise

    def test_health_line(self):
        out = self.ok("health").stdout.decode()
        self.assertRegex(out, r"(?m)^cgroups\s+none \(.*--no-cgroups.*\)$")

    def test_limit_refused_with_the_reason(self):
        msg = self.assertOneLineError(self.tend("start", "--memory", "64M", "--", "true"), 1)
        self.assertIn("memory", msg)
        self.assertIn("--no-cgroups", msg)
        r = self.tend("run", "--json", "--cpus", "1", "--", "true")
        self.assertEqual(r.returncode, 1, r)
        self.assertEqual(json.loads(r.stderr)["code"], "limits_unavailable")

    def test_freeze_refused(self):
        self.start("nocg-sleep", "sleep", "30")
        try:
            for args in (("freeze", "nocg-sleep"), ("freeze",), ("thaw", "nocg-sleep"), ("thaw",)):
                with self.subTest(args=args):
                    self.assertOneLineError(self.tend(*args), 1)
                    r = self.tend(args[0], "--json", *args[1:])
                    self.assertEqual(r.returncode, 1, r)
                    self.assertEqual(json.loads(r.stderr)["code"], "cgroups_unavailable")
            # It still runs: nothing was stopped.
            self.assertEqual(self.agent.status("nocg-sleep").json["state"], "running")
        finally:
            self.tend("rm", "-f", "nocg-sleep")

    def test_ps_resources_without_figures(self):
        self.start("nocg-ps", "sleep", "30")
        try:
            titles, rows = ps_table(self.ok("ps", "--resources").stdout)
            self.assertEqual(titles, ["ID", "PID", "STATE", "EXIT", "AGE", "CPU", "MEM", "PEAK",
                                      "PIDS", "COMMAND"])
            row = [x for x in rows if x["ID"] == "nocg-ps"][0]
            self.assertEqual([row[k] for k in ("CPU", "MEM", "PEAK", "PIDS")], ["-"] * 4)
            self.assertEqual(row["COMMAND"], "sleep 30")
        finally:
            self.tend("rm", "-f", "nocg-ps")


class CgroupCase(CliCase):
    """A live agent with a cgroup per process (v2 here, controllers or not)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cg = cls.agent.get("/v1/health").json["cgroups"]
        if cg["mode"] != "v2":
            reason = cg["reason"]
            cls.agent.close()
            raise unittest.SkipTest("no cgroup v2 for the agent here: %s" % reason)


class TestFreezeThaw(CgroupCase):

    def counter(self, pid_id):
        """A process that writes a growing count to a file; the function reading it."""
        path = os.path.join(self.agent.tmp, pid_id + ".count")
        self.start(pid_id, "sh", "-c",
                   'i=0; while :; do i=$((i+1)); echo $i > "$1.tmp"; mv "$1.tmp" "$1"; '
                   'sleep 0.02; done', "sh", path)
        self.addCleanup(self.tend, "rm", "-f", pid_id)

        def count():
            try:
                with open(path) as f:
                    return int(f.read() or 0)
            except (OSError, ValueError):
                return 0
        first = count()
        poll(lambda: count() > first + 2, timeout=5)
        return count

    def assertStill(self, count, secs=0.5):
        a = count()
        time.sleep(scaled(secs))
        self.assertEqual(count(), a, "the count moved while frozen")

    def assertMoves(self, count):
        a = count()
        poll(lambda: count() > a + 2, timeout=5)

    def test_freeze_and_thaw_one(self):
        count = self.counter("fz-one")
        r = self.ok("freeze", "fz-one")
        self.assertEqual(r.stdout, b"")
        self.assertStill(count)
        st = json.loads(self.ok("status", "--json", "fz-one").stdout)
        self.assertIs(st.get("frozen"), True, st)
        self.assertEqual(st["state"], "running")
        r = self.ok("thaw", "fz-one")
        self.assertEqual(r.stdout, b"")
        self.assertMoves(count)
        st = json.loads(self.ok("status", "--json", "fz-one").stdout)
        self.assertNotIn("frozen", st)

    def test_json_is_the_status(self):
        self.counter("fz-json")
        st = json.loads(self.ok("freeze", "--json", "fz-json").stdout)
        self.assertEqual(st["id"], "fz-json")
        self.assertIs(st["frozen"], True)
        st = json.loads(self.ok("thaw", "--json", "fz-json").stdout)
        self.assertEqual(st["id"], "fz-json")
        self.assertNotIn("frozen", st)

    def test_freeze_everything(self):
        count = self.counter("fz-all")
        r = self.ok("freeze", "--json")
        reply = json.loads(r.stdout)
        self.assertIs(reply["frozen"], True)
        self.assertIn("fz-all", reply["processes"])
        self.assertIsInstance(reply["terminals"], list)
        try:
            self.assertStill(count)
            st = self.agent.status("fz-all").json
            self.assertIs(st.get("frozen"), True, st)
        finally:
            r = self.ok("thaw")
        self.assertRegex(r.stdout.decode(), r"^thawed: \d+ process(es)?, \d+ terminals?\n$")
        self.assertMoves(count)
        r = self.ok("freeze")
        try:
            self.assertRegex(r.stdout.decode(), r"^frozen: \d+ process(es)?, \d+ terminals?\n$")
        finally:
            reply = json.loads(self.ok("thaw", "--json").stdout)
        self.assertIs(reply["frozen"], False)
        self.assertIn("fz-all", reply["processes"])
        self.assertMoves(count)

    def test_no_such_process_is_4(self):
        self.assertOneLineError(self.tend("freeze", "fz-nobody"), 4)
        self.assertOneLineError(self.tend("thaw", "fz-nobody"), 4)

    def test_ended_is_refused(self):
        self.ok("run", "--id", "fz-ended", "--", "true")
        self.addCleanup(self.tend, "rm", "fz-ended")
        self.assertOneLineError(self.tend("freeze", "fz-ended"), 1)
        r = self.tend("thaw", "--json", "fz-ended")
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("code", json.loads(r.stderr))

    def test_usage(self):
        self.assertUsage(self.tend("freeze", "a", "b"))
        self.assertUsage(self.tend("thaw", "--bogus"))


class TestResources(CgroupCase):

    def test_busy_loop_has_cpu(self):
        self.start("res-busy", "sh", "-c", "while :; do :; done")
        self.addCleanup(self.tend, "rm", "-f", "res-busy")
        cells = {}

        def cpu():
            titles, rows = ps_table(self.ok("ps", "--resources").stdout)
            self.assertEqual(titles[5:9], ["CPU", "MEM", "PEAK", "PIDS"])
            cells.update([x for x in rows if x["ID"] == "res-busy"][0])
            m = re.fullmatch(r"(\d+\.\d\d)s", cells["CPU"])
            self.assertIsNotNone(m, cells)
            return float(m.group(1))
        poll(lambda: cpu() >= 0.2, timeout=10)
        st = self.agent.status("res-busy").json
        self.assertGreater(st["resources"]["cpuUsec"], 0, st)
        # The plain table keeps its columns.
        titles, _ = ps_table(self.ok("ps").stdout)
        self.assertEqual(titles, ["ID", "PID", "STATE", "EXIT", "AGE", "COMMAND"])

    def test_health_line(self):
        cg = self.agent.get("/v1/health").json["cgroups"]
        out = self.ok("health").stdout.decode()
        line = [x for x in out.splitlines() if x.startswith("cgroups ")]
        self.assertEqual(len(line), 1, out)
        want = "v2 " + cg["root"] + " (" + (" ".join(cg["controllers"]) or "no controllers") + ")"
        self.assertEqual(line[0].split(None, 1)[1], want)


class TestPsFormat(FakeCase):
    """The table of replies this machine cannot make: an OOM kill, memory figures."""

    STATUSES = [
        {"id": "oom", "pid": 10, "state": "exited", "command": ["hog"],
         "startedAt": "2026-01-01T00:00:00.000Z",
         "exit": {"code": 137, "signal": 9, "oomKilled": True},
         "resources": {"cpuUsec": 1500000, "memoryCurrent": 0, "memoryPeak": 33554432,
                       "pidsCurrent": 0}},
        {"id": "killed", "pid": 11, "state": "exited", "command": ["sleep", "9"],
         "startedAt": "2026-01-01T00:00:00.000Z", "exit": {"code": 137, "signal": 9}},
        {"id": "live", "pid": 12, "state": "running", "command": ["srv"],
         "startedAt": "2026-01-01T00:00:00.000Z",
         "resources": {"cpuUsec": 250, "memoryCurrent": 1572864, "memoryPeak": 512,
                       "pidsCurrent": 3}},
    ]

    def setUp(self):
        self.fake = FakeAgent(lambda m, p: (200, self.STATUSES))
        self.addCleanup(self.fake.close)

    def test_oom_and_sizes(self):
        r = self.tend("-S", self.fake.sock, "ps", "-a", "--resources", sock=False)
        self.assertEqual(r.returncode, 0, r)
        _, rows = ps_table(r.stdout)
        rows = {x["ID"]: x for x in rows}
        # EXIT "137 (OOM)" holds a space: split on two.
        line = [x for x in r.stdout.decode().splitlines() if x.startswith("oom ")][0]
        self.assertIn("  137 (OOM)  ", line)
        self.assertIn("  137 (KILL)  ", [x for x in r.stdout.decode().splitlines()
                                         if x.startswith("killed ")][0])
        cells = re.split(r"\s{2,}", line)
        self.assertEqual(cells[5:9], ["1.50s", "0B", "32M", "0"])
        live = re.split(r"\s{2,}", [x for x in r.stdout.decode().splitlines()
                                    if x.startswith("live ")][0])
        self.assertEqual(live[5:10], ["0.00s", "1.5M", "512B", "3", "srv"])
        killed = re.split(r"\s{2,}", [x for x in r.stdout.decode().splitlines()
                                      if x.startswith("killed ")][0])
        self.assertEqual(killed[5:9], ["-", "-", "-", "-"])
        self.assertTrue(rows)

    def test_oom_without_resources(self):
        r = self.tend("-S", self.fake.sock, "ps", "-a", sock=False)
        self.assertEqual(r.returncode, 0, r)
        self.assertIn(b"137 (OOM)", r.stdout)
        self.assertNotIn(b"PEAK", r.stdout)


if __name__ == "__main__":
    unittest.main()
