"""Black-box tests of the bridge's namespace (issue 12, DESIGN §4): the
lifecycle routes, {sandboxId} validation, the stable exec's SSE as the
bridge's clients parse it, workspace confinement of cwd, mount/unmount,
exit.signal absent unless signalled, and the OpenAPI document and page."""
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import AgentTestCase, UnixHTTPConnection, poll, scaled, TEND_BIN  # noqa: E402

SB = "/v1/sandbox/sb-1"


def parse_sse(body):
    """Events as the clients read them: blocks split on a blank line, with
    "event:" and "data:" lines; comments (":") skipped."""
    events = []
    for block in body.decode().split("\n\n"):
        ev, data = "message", []
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            if k == "event":
                ev = v
            elif k == "data":
                data.append(v)
        if data:
            events.append((ev, "\n".join(data)))
    return events


class BridgeCase(AgentTestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="tend-bridge-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.ws = os.path.join(self.tmp, "workspace")
        os.makedirs(os.path.join(self.ws, "b"))
        self.a = self.agent(extra=["--workspace", self.ws])

    def exec(self, body, headers=None, timeout=10.0):
        """POST .../exec; (response head, events) read until the close."""
        c = UnixHTTPConnection(self.a.sock, timeout=scaled(timeout))
        try:
            h = {"Content-Type": "application/json"}
            h.update(headers or {})
            c.request("POST", SB + "/exec", body=json.dumps(body).encode(), headers=h)
            r = c.getresponse()
            data = r.read()
            return r, data
        finally:
            c.close()

    def exec_events(self, body, **kw):
        r, data = self.exec(body, **kw)
        self.assertEqual(r.status, 200, data)
        self.assertTrue(r.getheader("Content-Type").startswith("text/event-stream"))
        ev = parse_sse(data)
        self.assertTrue(ev, data)
        self.assertEqual(ev[-1][0], "exit", ev)
        out = {"stdout": b"", "stderr": b""}
        for typ, d in ev[:-1]:
            self.assertIn(typ, out, ev)
            out[typ] += base64.b64decode(d)
        return r, out, json.loads(ev[-1][1])["exit_code"]


class TestLifecycle(BridgeCase):
    def test_create_health_running(self):
        r = self.a.post("/v1/sandbox", {})
        self.assertEqual(r.status, 200, r)
        name = r.json["id"]
        self.assertRegex(name, r"^[A-Za-z0-9._-]{1,128}$")
        self.assertEqual(self.a.post("/v1/sandbox", {}).json["id"], name)
        r = self.a.get("/health")
        self.assertEqual((r.status, r.json), (200, {"ok": True}))
        r = self.a.get(SB + "/running")
        self.assertEqual((r.status, r.json), (200, {"running": True}))

    def test_delete_terminates_all_keeps_records(self):
        p = self.a.launch_ok(["sleep", "60"])
        q = self.a.launch_ok(["sh", "-c", "trap '' TERM; echo ready; sleep 60"], killGrace=300)
        poll(lambda: self.a.get("/v1/processes/%s/stdout" % q["id"]).body == b"ready\n")
        t0 = time.monotonic()
        r = self.a.delete(SB, timeout=20)
        self.assertEqual(r.status, 204, r)
        self.assertEqual(r.body, b"")
        self.assertLess(time.monotonic() - t0, scaled(5))
        for x, sig in ((p, 15), (q, 9)):
            st = self.a.status(x["id"]).json
            self.assertEqual(st["state"], "exited", st)
            self.assertEqual(st["exit"]["signal"], sig, st)

    def test_bad_sandbox_ids(self):
        for sid in ("a;b", "a%20b", "$(id)", "a" * 129, "a`b`", "a|b"):
            for m, rest in (("GET", "/running"), ("POST", "/exec"), ("GET", "/processes"),
                            ("DELETE", "")):
                r = self.a.request(m, "/v1/sandbox/%s%s" % (sid, rest))
                j = self.assertError(r, 400, "invalid_request")
                self.assertIn("Invalid sandbox ID format", j["error"])
        self.assertEqual(self.a.get("/v1/sandbox/%s/running" % ("a" * 128)).status, 200)
        self.assertEqual(self.a.get("/v1/sandbox/A.b_c-9/running").status, 200)


class TestCreateExisting(BridgeCase):
    """Issue 30 item 7: one tend, one sandbox: the ID is stable, and a
    second create while the first holds it says so (existing), not silently
    the same sandbox; a DELETE frees it."""

    def test_second_create_is_existing(self):
        r = self.a.post("/v1/sandbox", {})
        self.assertEqual(r.status, 200, r)
        first = r.json
        self.assertEqual(first["existing"], False, first)
        name = first["id"]
        for _ in range(2):
            r = self.a.post("/v1/sandbox")
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json, {"id": name, "existing": True})
        self.assertEqual(self.a.delete("/v1/sandbox/" + name, timeout=20).status, 204)
        self.assertEqual(self.a.post("/v1/sandbox").json, {"id": name, "existing": False})
        self.assertEqual(self.a.post("/v1/sandbox").json, {"id": name, "existing": True})


class TestDeleteEnds(BridgeCase):
    """Issue 30 item 6: DELETE ends every process and terminal, the agent
    stays up, and running is false until a request needs the sandbox."""

    def running(self):
        r = self.a.get(SB + "/running")
        self.assertEqual(r.status, 200, r)
        return r.json["running"]

    def test_running_false_until_needed(self):
        self.assertEqual(self.a.post("/v1/sandbox").status, 200)
        p = self.a.post(SB + "/processes", {"argv": ["sleep", "60"]})
        self.assertIn(p.status, (200, 201), p)
        t = self.a.post(SB + "/terminals", {"argv": ["sleep", "60"]})
        self.assertIn(t.status, (200, 201), t)
        self.assertTrue(self.running())
        r = self.a.delete(SB, timeout=20)
        self.assertEqual((r.status, r.body), (204, b""), r)
        st = self.a.status(p.json["id"]).json
        self.assertEqual(st["state"], "exited", st)
        # Read through the API's own routes: a bridge path would need the sandbox.
        tj = self.a.get("/v1/terminals/" + t.json["id"]).json
        self.assertEqual(tj["status"], "exited", tj)
        h = self.a.health()
        self.assertEqual(h["processes"]["running"], 0, h)
        # Asking, twice, or deleting again does not revive it.
        self.assertFalse(self.running())
        self.assertFalse(self.running())
        self.assertEqual(self.a.delete("/v1/sandbox/other-id", timeout=20).status, 204)
        self.assertFalse(self.running())
        self.assertEqual(self.a.get("/v1/health").status, 200)
        # A request that needs the sandbox does, under any ID.
        r = self.a.request("PUT", "/v1/sandbox/other-id/file%s/x.txt" % self.ws, body=b"x")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(self.running())
        # So does a create.
        self.assertEqual(self.a.delete(SB, timeout=20).status, 204)
        self.assertFalse(self.running())
        self.assertEqual(self.a.post("/v1/sandbox").json["existing"], False)
        self.assertTrue(self.running())

    def test_a_process_outside_the_namespace_runs(self):
        self.assertEqual(self.a.delete(SB, timeout=20).status, 204)
        self.assertFalse(self.running())
        # Started through the API's own routes: running while it runs.
        p = self.a.launch_ok(["sleep", "60"])
        self.assertTrue(self.running())
        self.assertEqual(self.a.post("/v1/processes/%s/kill" % p["id"], {"signal": 9}).status, 204)
        self.a.wait_ended(p["id"])
        self.assertFalse(self.running())


class TestPersistGet(BridgeCase):
    """Issue 30 item 4: Mastra's client reads the workspace with GET, its
    excludes comma-joined and percent-escaped (URLSearchParams)."""

    def names(self, r):
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("content-type"), "application/octet-stream")
        names = tarfile.open(fileobj=io.BytesIO(r.body)).getnames()
        return sorted(n[2:] if n.startswith("./") else n.rstrip("/") for n in names)

    def test_get_as_post(self):
        for d in ("node_modules/x", ".git", "src"):
            os.makedirs(os.path.join(self.ws, d))
        for f in ("node_modules/x/a.js", ".git/HEAD", "src/main.py"):
            with open(os.path.join(self.ws, f), "w") as fh:
                fh.write(f)
        q = "?excludes=node_modules%2C.git"
        got = self.names(self.a.get(SB + "/persist" + q))
        self.assertEqual(got, self.names(self.a.post(SB + "/persist" + q)))
        self.assertEqual(got, self.names(self.a.post(SB + "/persist?excludes=node_modules,.git")))
        self.assertIn("src/main.py", got)
        self.assertFalse([n for n in got if n.startswith(("node_modules", ".git"))], got)
        self.assertIn(".git/HEAD", self.names(self.a.get(SB + "/persist")))
        j = self.assertError(self.a.get(SB + "/persist?excludes=..%2Fsecret"), 400, "invalid_request")
        self.assertIn("..", j["error"])


class TestExec(BridgeCase):
    def test_output_and_exit_code(self):
        r, out, code = self.exec_events({"argv": ["sh", "-c", "echo hi; echo err >&2; exit 3"]},
                                        headers={"Session-Id": "s1", "Accept": "application/json"})
        self.assertEqual((out["stdout"], out["stderr"], code), (b"hi\n", b"err\n", 3))
        pid = r.getheader("X-Tend-Process-Id")
        self.assertTrue(pid)
        st = self.a.status(pid).json
        self.assertEqual(st["exit"]["code"], 3, st)
        self.assertEqual(self.a.get("/v1/processes/%s/stdout" % pid).body, b"hi\n")

    def test_binary_byte_exact(self):
        blob = bytes(range(256)) * 64 + b"\xff\xfe\x00"
        path = os.path.join(self.tmp, "blob")
        with open(path, "wb") as f:
            f.write(blob)
        r, out, code = self.exec_events({"argv": ["cat", path]})
        self.assertEqual((out["stdout"], code), (blob, 0))
        self.assertEqual(self.a.get("/v1/processes/%s/stdout" %
                                    r.getheader("X-Tend-Process-Id")).body, blob)

    def test_timeout_124(self):
        t0 = time.monotonic()
        _, _, code = self.exec_events({"argv": ["sleep", "30"], "timeout_ms": 200})
        self.assertEqual(code, 124)
        self.assertLess(time.monotonic() - t0, scaled(5))

    def test_not_found_127_not_exec_126(self):
        r, out, code = self.exec_events({"argv": ["/nonexistent/cmd"]})
        self.assertEqual(code, 127)
        self.assertIn(b"/nonexistent/cmd", out["stderr"])
        self.assertIn(b"not found", out["stderr"])
        path = os.path.join(self.tmp, "noexec")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(path, 0o644)
        _, out, code = self.exec_events({"argv": [path]})
        self.assertEqual(code, 126)
        self.assertIn(path.encode(), out["stderr"])

    def test_validation_before_head(self):
        for body in ({}, {"argv": []}, {"argv": "ls"}, {"argv": [1]}):
            r, data = self.exec(body)
            self.assertEqual(r.status, 400, data)
            j = json.loads(data)
            self.assertEqual(j["code"], "invalid_request")
            self.assertIn("argv must be a non-empty array of strings", j["error"])
        r, data = self.exec({"argv": ["true"], "timeout_ms": "x"})
        self.assertEqual(r.status, 400, data)

    def test_cwd_env(self):
        _, out, code = self.exec_events({"argv": ["sh", "-c", "pwd; echo $FOO"],
                                         "cwd": self.ws + "/a/../b", "env": {"FOO": "bar"}})
        self.assertEqual((out["stdout"], code), (("%s/b\nbar\n" % self.ws).encode(), 0))


class TestConfinement(BridgeCase):
    def test_cwd_outside_403(self):
        for cwd in ("/tmp", self.ws + "/../x", self.ws + "/b/../../", self.ws + "x", "rel"):
            for path, body in ((SB + "/exec", {"argv": ["true"], "cwd": cwd}),
                               (SB + "/processes", {"argv": ["true"], "cwd": cwd})):
                j = self.assertError(self.a.post(path, body), 403, "invalid_request")
                self.assertIn("must be within %s" % self.ws, j["error"])
        r = self.a.post(SB + "/processes", {"argv": ["pwd"], "cwd": self.ws + "/a/../b"})
        self.assertEqual(r.status, 200, r)
        self.a.wait_ended(r.json["id"])
        self.assertEqual(self.a.get("/v1/processes/%s/stdout" % r.json["id"]).body,
                         ("%s/b\n" % self.ws).encode())
        # The API's own namespace is not confined.
        self.assertEqual(self.a.launch(["true"], cwd="/tmp").status, 200)


class TestWorkspaceDefault(BridgeCase):
    def test_without_cwd_runs_in_the_workspace(self):
        # The agent runs in another directory; the bridge's commands start
        # in the workspace, as its container's sessions do.
        _, out, code = self.exec_events({"argv": ["pwd"]})
        self.assertEqual((out["stdout"], code), ((self.ws + "\n").encode(), 0))
        r = self.a.post(SB + "/processes", {"argv": ["pwd"]})
        self.assertEqual(r.status, 200, r)
        self.a.wait_ended(r.json["id"])
        self.assertEqual(self.a.get("/v1/processes/%s/stdout" % r.json["id"]).body,
                         (self.ws + "\n").encode())
        # tend's own namespace keeps the agent's directory.
        r = self.a.post("/v1/exec", {"argv": ["pwd"]})
        self.assertNotEqual(r.json["stdout"], self.ws + "\n")

    def test_missing_workspace_is_made(self):
        shutil.rmtree(self.ws)
        _, out, code = self.exec_events({"argv": ["pwd"]})
        self.assertEqual((out["stdout"], code), ((self.ws + "\n").encode(), 0))
        self.assertTrue(os.path.isdir(self.ws))


class TestSessions(BridgeCase):
    """Mastra's bridge client: POST .../session {cwd?, env?, id?} -> {id},
    DELETE .../session/{sid}; an exec's Session-Id starts from it."""

    def test_session_gives_cwd_and_env(self):
        r = self.a.post(SB + "/session", {"id": "s1", "cwd": self.ws + "/b/../b",
                                          "env": {"FOO": "one", "BAR": "two"}})
        self.assertEqual((r.status, r.json), (200, {"id": "s1"}), r)
        argv = ["sh", "-c", "pwd; echo $FOO $BAR"]
        _, out, code = self.exec_events({"argv": argv}, headers={"Session-Id": "s1"})
        self.assertEqual((out["stdout"], code), (("%s/b\none two\n" % self.ws).encode(), 0))
        # The body's own cwd and env entries win.
        _, out, _ = self.exec_events({"argv": argv, "cwd": self.ws, "env": {"FOO": "mine"}},
                                     headers={"Session-Id": "s1"})
        self.assertEqual(out["stdout"], ("%s\nmine two\n" % self.ws).encode())
        # Without the header, nothing of it.
        _, out, _ = self.exec_events({"argv": argv})
        self.assertEqual(out["stdout"], ("%s\n\n" % self.ws).encode())
        r = self.a.delete(SB + "/session/s1")
        self.assertEqual((r.status, r.json), (200, {"success": True, "sessionId": "s1"}), r)
        self.assertError(self.a.delete(SB + "/session/s1"), 404, "not_found")
        _, out, _ = self.exec_events({"argv": argv}, headers={"Session-Id": "s1"})
        self.assertEqual(out["stdout"], ("%s\n\n" % self.ws).encode())

    def test_create_forms_and_refusals(self):
        r = self.a.request("POST", SB + "/session", body=b"")
        self.assertEqual(r.status, 200, r)
        self.assertRegex(r.json["id"], r"^[A-Za-z0-9._-]{1,128}$")
        self.assertNotEqual(self.a.post(SB + "/session", {}).json["id"], r.json["id"])
        self.assertEqual(self.a.post(SB + "/session", {"id": "dup"}).status, 200)
        self.assertError(self.a.post(SB + "/session", {"id": "dup"}), 409, "id_taken")
        j = self.assertError(self.a.post(SB + "/session", {"id": "a b"}), 400, "invalid_request")
        self.assertEqual(j["error"], "Invalid session ID format")
        self.assertError(self.a.post(SB + "/session", {"id": "x" * 129}), 400, "invalid_request")
        j = self.assertError(self.a.post(SB + "/session", {"cwd": "/tmp"}), 403, "invalid_request")
        self.assertIn("must be within %s" % self.ws, j["error"])
        self.assertError(self.a.post(SB + "/session", {"env": {"A": 1}}), 400, "invalid_request")
        self.assertError(self.a.post(SB + "/session", {"env": ["A=1"]}), 400, "invalid_request")
        self.assertError(self.a.post(SB + "/session", [1]), 400, "invalid_request")
        j = self.assertError(self.a.post(SB + "/exec", {"argv": ["true"]},
                                         headers={"Session-Id": "a;b"}), 400, "invalid_request")
        self.assertEqual(j["error"], "Invalid session ID format")

    def test_limit_and_sandbox_delete_clears(self):
        ids = []
        while True:
            r = self.a.post(SB + "/session", {})
            if r.status != 200:
                break
            ids.append(r.json["id"])
            self.assertLess(len(ids), 1000)
        self.assertError(r, 503, "busy")
        self.assertEqual(len(ids), 64)
        self.assertEqual(self.a.delete(SB).status, 204)
        self.assertError(self.a.delete(SB + "/session/" + ids[0]), 404, "not_found")
        self.assertEqual(self.a.post(SB + "/session", {"id": ids[0]}).status, 200)


class TestMounts(BridgeCase):
    def test_mount_unmount(self):
        self.assertError(self.a.post(SB + "/mount", {"bucket": "b", "mountPath": "rel"}),
                         400, "invalid_request")
        self.assertError(self.a.post(SB + "/mount", {"mountPath": "/mnt"}), 400, "invalid_request")
        self.assertError(self.a.post(SB + "/mount", {"bucket": "b", "mountPath": "/mnt",
                                                     "options": {}}), 501, "not_supported")
        self.assertError(self.a.post(SB + "/unmount", {"mountPath": "x"}), 400, "invalid_request")
        r = self.a.post(SB + "/unmount", {"mountPath": "/mnt"})
        self.assertError(r, 501, "not_supported")
        self.assertEqual(r.reason, "Not Implemented")


class TestExitSignal(BridgeCase):
    def test_absent_unless_signalled(self):
        for base in ("", SB):
            p = self.a.post(base + "/v1/processes" if not base else base + "/processes",
                            {"argv": ["true"]}).json
            st = self.a.wait_ended(p["id"])
            self.assertNotIn("signal", st["exit"], st)
            p = self.a.launch_ok(["sleep", "30"])
            self.a.post("/v1/processes/%s/kill" % p["id"], {"signal": 9})
            st = self.a.wait_ended(p["id"])
            self.assertEqual(st["exit"]["signal"], 9, st)
        r = self.a.post("/v1/exec", {"argv": ["true"]})
        self.assertNotIn("signal", r.json["exit"], r.json)


def route_key(path):
    """/v1/processes/{id} and /v1/processes/{} and /v1/file/* alike."""
    out = []
    for seg in path.split("/"):
        out.append("{}" if seg.startswith("{") or seg == "*" else seg)
    return "/".join(out)


class TestOpenAPI(BridgeCase):
    def test_lists_every_route(self):
        r = self.a.get("/v1/openapi.json")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("content-type").startswith("application/json"))
        doc = json.loads(r.body)
        self.assertEqual(doc["openapi"], "3.1.0")
        have = {(m.upper(), route_key(p)) for p, item in doc["paths"].items() for m in item
                if m in ("get", "head", "put", "post", "delete", "patch")}
        routes = subprocess.run([TEND_BIN, "agent", "--list-routes"], check=True,
                                capture_output=True, text=True).stdout.split("\n")
        routes = [x.split(" ", 1) for x in routes if x]
        self.assertGreater(len(routes), 40)
        missing = [(m, p) for m, p in routes if (m, route_key(p)) not in have]
        self.assertEqual(missing, [])
        self.assertIn("/v1/sandbox/{id}/exec", doc["paths"])

    def test_documents_byte_exact(self):
        # Stored compressed in the binary, inflated per request: what is
        # served is what scripts/openapi made, byte for byte, every time.
        build = os.path.dirname(TEND_BIN)
        for name in ("openapi.json", "openapi.html"):
            path = os.path.join(build, name)
            if not os.path.exists(path):
                self.skipTest("no %s beside the binary" % path)
            with open(path, "rb") as f:
                want = f.read()
            for _ in range(2):
                r = self.a.get("/v1/" + name)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.body, want, name)

    def test_html_page(self):
        r = self.a.get("/v1/openapi.html")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("content-type").startswith("text/html"))
        self.assertTrue(r.body.startswith(b"<!doctype html>"), r.body[:40])
        text = r.body.decode()
        for needle in ("/v1/sandbox/{id}/exec", "/v1/processes/{id}", "timeout_ms"):
            self.assertTrue(needle in text, needle)
        for ext in ("<script src", "<link", "http://", "https://", "@import", "url("):
            self.assertFalse(ext in text, ext)

    def test_html_in_chromium(self):
        browser = shutil.which("chromium")
        if browser is None:
            self.skipTest("chromium is not installed (apt-get install chromium)")
        page = os.path.join(self.tmp, "openapi.html")
        with open(page, "wb") as f:
            f.write(self.a.get("/v1/openapi.html").body)
        prof = tempfile.mkdtemp(prefix="tend-chromium-")
        self.addCleanup(shutil.rmtree, prof, True)
        out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                              "--disable-background-networking", "--disable-component-update",
                              "--disable-sync", "--no-first-run", "--user-data-dir=" + prof,
                              "--dump-dom", "file://" + page],
                             capture_output=True, timeout=scaled(60)).stdout.decode()
        # The DOM the browser built: the routes are there as a person sees them.
        self.assertIn("<nav>", out)
        self.assertIn("POST /v1/sandbox/{id}/exec", out)
        self.assertIn('id="schema-Error"', out)


class TestPtySession(BridgeCase):
    """The /pty's session (the bridge's `session` query, or Session-Id): a
    fresh terminal starts from the session's cwd and env."""

    def test_session_cwd_env(self):
        from test_terms_ws import HANDSHAKE, run, websockets, ws_open
        if websockets is None:
            self.skipTest("python3-websockets is not installed")
        r = self.a.post(SB + "/session", {"id": "s1", "cwd": self.ws + "/b", "env": {"PTYV": "v-1"}})
        self.assertEqual(r.status, 200, r)
        # Refused before any upgrade: a session ID outside the alphabet.
        for q in ("session=a;b", "session=" + "a" * 129):
            j = self.assertError(self.a.get(SB + "/pty?" + q, headers=HANDSHAKE), 400, "invalid_request")
            self.assertIn("Invalid session ID format", j["error"])
        a = self.a

        async def go(path, headers, want):
            c = await ws_open(a, path, bridge=True, headers=headers)
            await c.send(b"echo \"$(pwd):$PTYV.\"\n")
            await c.wait_out(want.encode())
            await c.ws.close()
        run(go(SB + "/pty?shell=/bin/sh&session=s1", None, "%s/b:v-1." % self.ws))
        run(go(SB + "/pty?shell=/bin/sh", {"Session-Id": "s1"}, "%s/b:v-1." % self.ws))
        # The query's own cwd wins; an unknown session adds nothing.
        run(go(SB + "/pty?shell=/bin/sh&session=s1&cwd=" + self.ws, None, "%s:v-1." % self.ws))
        run(go(SB + "/pty?shell=/bin/sh&session=nope", None, "%s:." % self.ws))


class TestOpenAPIBridgePaths(BridgeCase):
    """Issue 30 item 3: the document names the bridge's paths as the bridge
    does ({id}), /pty included, as its integration script reads them."""

    def test_pty_entry_as_the_bridge_checks_it(self):
        doc = json.loads(self.a.get("/v1/openapi.json").body)
        self.assertEqual(doc["openapi"], "3.1.0")
        for p in ("exec", "pty", "file/{path}", "running", "persist", "hydrate"):
            self.assertIn("/v1/sandbox/{id}/" + p, doc["paths"])
        self.assertIn("/health", doc["paths"])
        item = doc["paths"]["/v1/sandbox/{id}/pty"]
        pty = item["get"]
        self.assertEqual(pty["operationId"], "ptyTerminal")
        params = pty.get("parameters", []) + item.get("parameters", [])
        refs = doc["components"]["parameters"]
        names = {(refs[x["$ref"].rsplit("/", 1)[1]] if "$ref" in x else x)["name"] for x in params}
        for n in ("id", "cols", "rows", "shell", "session"):
            self.assertIn(n, names)
        for code in ("101", "400", "502"):
            self.assertIn(code, pty["responses"])

    def test_every_bridge_path_says_id(self):
        doc = json.loads(self.a.get("/v1/openapi.json").body)
        bridge = [p for p in doc["paths"] if p.startswith("/v1/sandbox/")]
        self.assertGreater(len(bridge), 10)
        self.assertEqual([p for p in bridge if not p.startswith("/v1/sandbox/{id}")], [])
        self.assertNotIn("sandboxId", json.dumps(doc["paths"]))
        # What the bridge serves there: the pty route answers (no upgrade: 400).
        r = self.a.get(SB + "/pty")
        self.assertError(r, 400)
        self.assertEqual(set(doc["paths"]["/v1/sandbox/{id}/persist"]) & {"get", "post"},
                         {"get", "post"})


if __name__ == "__main__":
    unittest.main()
