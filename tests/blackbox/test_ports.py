"""Listening ports and readiness: GET /v1/ports, "ready" on a launch,
wait?for=ready, process.ready and port.listening/port.closed events,
`tend ports` and `tend start --ready-*`.

The agent runs in its own PID namespace but in the machine's network
namespace: the listing holds the machine's other sockets too (pid and id
null), so each test looks for its own ports only.
"""
import json
import os
import socket
import subprocess
import time
import unittest

from harness import AgentTestCase, TEND_BIN, UnixHTTPConnection, poll, scaled


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def has_ipv6():
    try:
        free_port(socket.AF_INET6, "::1")
        return True
    except OSError:
        return False


def http_server(port, host="127.0.0.1"):
    return ["python3", "-m", "http.server", "--bind", host, str(port), "--directory", "/"]


class PortsCase(AgentTestCase):

    def setUp(self):
        super().setUp()
        self.a = self.agent()

    def launch(self, body, status=200):
        r = self.a.post("/v1/processes", body)
        self.assertEqual(r.status, status, r)
        if status == 200:
            self.addCleanup(self.a.post, "/v1/processes/%s/kill" % r.json["id"],
                            {"signal": 9})
        return r.json

    def wait_ready(self, pid_id, timeout=20):
        return self.a.post("/v1/processes/%s/wait?for=ready&timeout=%d"
                           % (pid_id, scaled(timeout) * 1000), timeout=scaled(timeout) + 5)

    def ports(self, port=None):
        r = self.a.get("/v1/ports")
        self.assertEqual(r.status, 200, r)
        self.assertIsInstance(r.json, list)
        ports = [p["port"] for p in r.json]
        self.assertEqual(ports, sorted(ports))
        for p in r.json:
            self.assertEqual(set(p), {"port", "address", "pid", "id"}, p)
        return [p for p in r.json if port is None or p["port"] == port]

    def events(self, types):
        r = self.a.get("/v1/events?types=" + types)
        self.assertEqual(r.status, 200, r)
        return r.json["events"]

    def tend(self, *args, timeout=30):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEND_")}
        return subprocess.run([TEND_BIN, "-S", self.a.sock] + list(args), capture_output=True,
                              timeout=scaled(timeout), env=env, stdin=subprocess.DEVNULL)


class TestReadyPort(PortsCase):

    def test_http_server_ready_then_listed(self):
        port = free_port()
        st = self.launch({"argv": http_server(port), "id": "web",
                          "ready": {"port": port, "timeoutMs": scaled(20) * 1000}})
        # The launch answers at once, before it is ready.
        self.assertIs(st["ready"], False)
        self.assertEqual(st["readiness"], "waiting")
        self.assertNotIn("readyAt", st)
        t0 = time.time()
        r = self.wait_ready("web")
        self.assertEqual(r.status, 200, r)
        st = r.json
        self.assertIs(st["ready"], True)
        self.assertEqual(st["readiness"], "ready")
        self.assertIsInstance(st["readyAt"], (int, float))
        self.assertLessEqual(abs(st["readyAt"] / 1000 - t0), scaled(20))
        # Ready means listening: the very next connect succeeds.
        with socket.create_connection(("127.0.0.1", port), timeout=scaled(5)) as s:
            s.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
            self.assertTrue(s.recv(64).startswith(b"HTTP/1.0 200"))
        # The status keeps saying so; the event was told with the record's ID.
        self.assertEqual(self.a.get("/v1/processes/web").json["readyAt"], st["readyAt"])
        ev = [e for e in self.events("process.ready") if e["id"] == "web"]
        self.assertEqual(len(ev), 1, ev)
        self.assertEqual(ev[0]["pid"], st["pid"])
        self.assertEqual(self.ports(port), [{"port": port, "address": "127.0.0.1",
                                             "pid": st["pid"], "id": "web"}])
        # An agent that does not own it lists it with null ID: a host socket.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            mine = s.getsockname()[1]
            self.assertEqual(self.ports(mine), [{"port": mine, "address": "127.0.0.1",
                                                 "pid": None, "id": None}])
        # Ready already: a wait answers at once.
        self.assertEqual(self.wait_ready("web").json["readyAt"], st["readyAt"])

    def test_ipv6_listener(self):
        if not has_ipv6():
            self.skipTest("no IPv6 loopback")
        port = free_port(socket.AF_INET6, "::1")
        self.launch({"argv": http_server(port, "::1"), "id": "web6", "ready": {"port": port}})
        r = self.wait_ready("web6")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([(p["address"], p["id"]) for p in self.ports(port)], [("::1", "web6")])

    def test_setsid_grandchild_still_the_records(self):
        """A daemon that leaves its session and outlives its parent is
        re-parented to the agent: its cgroup still names the record."""
        port = free_port()
        script = ("setsid python3 -c \"import socket,time;s=socket.socket();"
                  "s.bind(('127.0.0.1',%d));s.listen();time.sleep(60)\" "
                  "</dev/null >/dev/null 2>&1 & sleep 60" % port)
        st = self.launch({"argv": ["sh", "-c", script], "id": "daemon",
                          "ready": {"port": port}})
        cg = st.get("cgroup") is not None
        r = self.wait_ready("daemon", timeout=10)
        self.assertEqual(r.status, 200, r)
        ent = self.ports(port)
        self.assertEqual([p["id"] for p in ent], ["daemon"])
        self.assertNotEqual(ent[0]["pid"], st["pid"])
        if not cg:
            return
        # Its parent gone, the cgroup still tells.
        self.a.post("/v1/processes/daemon/kill", {"signal": 9, "group": False})
        time.sleep(0.3)
        self.assertEqual([p["id"] for p in self.ports(port)], ["daemon"])

    def test_ended_before_ready(self):
        port = free_port()
        self.launch({"argv": ["sh", "-c", "sleep 0.2; exit 4"], "id": "quits",
                     "ready": {"port": port}})
        r = self.wait_ready("quits")
        self.assertError(r, 409, "ended")
        st = self.a.get("/v1/processes/quits").json
        self.assertEqual((st["state"], st["ready"], st["readiness"]), ("exited", False, "exited"))

    def test_timeout_before_ready(self):
        port = free_port()
        t0 = time.monotonic()
        self.launch({"argv": ["sleep", "30"], "id": "slow",
                     "ready": {"port": port, "timeoutMs": 400}})
        r = self.wait_ready("slow")
        self.assertError(r, 409, "ready_timeout")
        self.assertGreaterEqual(time.monotonic() - t0, 0.4)
        st = self.a.get("/v1/processes/slow").json
        self.assertEqual((st["state"], st["ready"], st["readiness"]),
                         ("running", False, "timeout"))

    def test_wait_timeout_answers_the_status(self):
        self.launch({"argv": ["sleep", "30"], "id": "w", "ready": {"log": "never"}})
        r = self.a.post("/v1/processes/w/wait?for=ready&timeout=200")
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["ready"], r.json["readiness"]), (False, "waiting"))

    def test_refusals(self):
        for ready, field in (({}, "ready"), ({"port": 0}, "port"), ({"port": 70000}, "port"),
                             ({"log": ""}, "log"), ({"port": 80, "stream": "stdout"}, "stream"),
                             ({"port": 80, "timeoutMs": 0}, "timeoutMs"), ("x", "ready")):
            with self.subTest(ready=ready):
                r = self.a.post("/v1/processes", {"argv": ["true"], "ready": ready})
                j = self.assertError(r, 400, "invalid_request")
                self.assertIn(field, j["error"])
        st = self.launch({"argv": ["sleep", "30"], "id": "plain"})
        self.assertNotIn("ready", st)
        self.assertNotIn("readiness", st)
        self.assertError(self.a.post("/v1/processes/plain/wait?for=ready"), 400,
                         "invalid_request")
        self.assertError(self.a.post("/v1/processes/plain/wait?for=soon"), 400,
                         "invalid_request")
        self.assertError(self.a.post("/v1/processes/nope/wait?for=ready"), 404, "not_found")


class TestOwners(PortsCase):

    def test_terminal_owns_its_server(self):
        port = free_port()
        r = self.a.post("/v1/terminals", {"id": "tty", "argv": http_server(port)})
        self.assertEqual(r.status, 200, r)
        self.addCleanup(self.a.delete, "/v1/terminals/tty")
        ent = poll(lambda: self.ports(port), timeout=10)
        self.assertEqual([(p["address"], p["id"]) for p in ent], [("127.0.0.1", "tty")])
        self.assertIsInstance(ent[0]["pid"], int)


class TestReadyLog(PortsCase):

    def test_substring_across_two_writes(self):
        script = "echo warming up; printf 'listen'; sleep 0.4; echo 'ing on 4711'; sleep 30"
        t0 = time.monotonic()
        self.launch({"argv": ["sh", "-c", script], "id": "two",
                     "ready": {"log": "listening on", "timeoutMs": scaled(20) * 1000}})
        r = self.wait_ready("two")
        self.assertEqual(r.status, 200, r)
        self.assertGreaterEqual(time.monotonic() - t0, 0.4, "ready before the line came")
        self.assertIs(r.json["ready"], True)

    def test_stream_stderr_only(self):
        self.launch({"argv": ["sh", "-c", "echo up; sleep 30"], "id": "out",
                     "ready": {"log": "up", "stream": "stderr", "timeoutMs": 500}})
        self.assertError(self.wait_ready("out"), 409, "ready_timeout")
        self.launch({"argv": ["sh", "-c", "sleep 0.2; echo up >&2; sleep 30"], "id": "err",
                     "ready": {"log": "up", "stream": "stderr"}})
        self.assertEqual(self.wait_ready("err").status, 200)


class TestPortEvents(PortsCase):

    def test_listening_then_closed(self):
        port = free_port()
        self.launch({"argv": http_server(port), "id": "ev", "ready": {"port": port}})
        self.assertEqual(self.wait_ready("ev").status, 200)
        pid = self.a.get("/v1/processes/ev").json["pid"]
        self.a.post("/v1/processes/ev/kill", {"signal": 9})

        def closed():
            return [e for e in self.events("port.") if e["port"] == port]
        evs = poll(lambda: len(closed()) >= 2 and closed(), timeout=10)
        self.assertTrue(evs, closed())
        self.assertEqual([e["type"] for e in evs], ["port.listening", "port.closed"])
        for e in evs:
            self.assertEqual((e["address"], e["pid"], e["id"]), ("127.0.0.1", pid, "ev"))

    def test_listening_without_readiness(self):
        """The poll runs while any job runs, readiness asked or not."""
        port = free_port()
        self.launch({"argv": http_server(port), "id": "bare"})
        evs = poll(lambda: [e for e in self.events("port.listening") if e["port"] == port],
                   timeout=10)
        self.assertEqual([e["id"] for e in evs], ["bare"])


class TestCli(PortsCase):

    def test_tend_ports(self):
        port = free_port()
        r = self.tend("start", "--id", "cli-web", "--ready-port", str(port), "--ready-timeout",
                      str(scaled(20)), "--", *http_server(port))
        self.addCleanup(self.a.post, "/v1/processes/cli-web/kill", {"signal": 9})
        self.assertEqual((r.returncode, r.stdout), (0, b"cli-web\n"), r)
        r = self.tend("ports", "--json")
        self.assertEqual(r.returncode, 0, r)
        ent = [p for p in json.loads(r.stdout) if p["port"] == port]
        self.assertEqual([(p["address"], p["id"]) for p in ent], [("127.0.0.1", "cli-web")])
        r = self.tend("ports")
        self.assertEqual(r.returncode, 0, r)
        lines = r.stdout.decode().splitlines()
        self.assertEqual(lines[0].split(), ["PORT", "ADDRESS", "PID", "ID"])
        mine = [ln.split() for ln in lines[1:] if ln.split()[0] == str(port)]
        self.assertEqual(mine, [[str(port), "127.0.0.1", str(ent[0]["pid"]), "cli-web"]])

    def test_start_regex_and_port(self):
        """A REGEX beyond a plain string is the client's; the port the agent's."""
        port = free_port()
        script = "echo 'serving 1'; sleep 0.3; exec %s" % " ".join(http_server(port))
        r = self.tend("start", "--id", "cli-re", "--json", "--ready-log", "^serv[a-z]+ [0-9]$",
                      "--ready-port", str(port), "--ready-timeout", str(scaled(20)), "--",
                      "sh", "-c", script)
        self.addCleanup(self.a.post, "/v1/processes/cli-re/kill", {"signal": 9})
        self.assertEqual(r.returncode, 0, r)
        st = json.loads(r.stdout)
        self.assertEqual((st["ready"], st["readiness"]), (True, "ready"))
        socket.create_connection(("127.0.0.1", port), timeout=scaled(5)).close()

    def test_start_ready_exit_codes(self):
        port = free_port()
        r = self.tend("start", "--id", "c6", "--ready-port", str(port), "--",
                      "sh", "-c", "sleep 0.2; exit 4")
        self.assertEqual(r.returncode, 6, r)
        self.assertIn(b"ended before it was ready", r.stderr)
        r = self.tend("start", "--id", "c124", "--json", "--ready-port", str(port),
                      "--ready-timeout", "0.5", "--", "sleep", "30")
        self.addCleanup(self.a.post, "/v1/processes/c124/kill", {"signal": 9})
        self.assertEqual(r.returncode, 124, r)
        self.assertEqual(json.loads(r.stdout)["state"], "running")
        self.assertEqual(json.loads(r.stderr)["code"], "timeout")
        # The agent judged it: the record says what it asked.
        st = self.a.get("/v1/processes/c124").json
        self.assertEqual(st["readiness"], "timeout")


class TestHostile(PortsCase):

    def health_ms(self):
        t0 = time.monotonic()
        r = self.a.get("/v1/health")
        self.assertEqual(r.status, 200)
        return (time.monotonic() - t0) * 1000

    def test_2000_listeners_and_5000_fds(self):
        script = ("import socket, os, time, sys\n"
                  "ls = []\n"
                  "for i in range(2000):\n"
                  "    s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1); ls.append(s)\n"
                  "fds = [os.open('/dev/null', os.O_RDONLY) for _ in range(5000)]\n"
                  "print('up', flush=True)\n"
                  "time.sleep(120)\n")
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard < 8000:
            self.skipTest("RLIMIT_NOFILE hard limit %d" % hard)
        self.launch({"argv": ["sh", "-c", "ulimit -n %d; exec python3 -c \"$0\"" % min(hard, 16384),
                              script], "id": "many",
                     "ready": {"log": "up", "timeoutMs": scaled(60) * 1000}})
        self.assertEqual(self.wait_ready("many", timeout=60).status, 200)
        pid = self.a.get("/v1/processes/many").json["pid"]
        worst = 0.0
        c = UnixHTTPConnection(self.a.sock, timeout=scaled(30))
        t0 = time.monotonic()
        c.request("GET", "/v1/ports")
        # Meanwhile, the agent answers others fast.
        for _ in range(20):
            worst = max(worst, self.health_ms())
        r = c.getresponse()
        body = r.read()
        took = time.monotonic() - t0
        c.close()
        if os.environ.get("TEND_PORTS_FIGURES"):
            print("\n/v1/ports %.1f ms, worst health %.1f ms" % (took * 1000, worst))
        self.assertEqual(r.status, 200)
        ent = [p for p in json.loads(body) if p["id"] == "many"]
        self.assertEqual(len(ent), 2000)
        self.assertTrue(all(p["pid"] == pid for p in ent))
        self.assertLess(took, scaled(20))
        self.assertLess(worst, scaled(250), "health took %.1f ms during the scan" % worst)
        # Once known, a listing needs no scan.
        t0 = time.monotonic()
        self.assertEqual(len([p for p in self.ports() if p["id"] == "many"]), 2000)
        self.assertLess(time.monotonic() - t0, scaled(5))


if __name__ == "__main__":
    unittest.main()
