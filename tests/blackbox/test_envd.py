"""envd's process service (Connect, JSON codec) at the socket's root:
the framing of server streams and unary calls, every error code's status,
and what envd gets wrong that tend must not (orphans reaped, output
stored with no client connected, exit codes kept).  proto/README.md §15."""
import base64
import json
import pwd
import struct
import time
import unittest

from harness import SLOW, TEND_BIN, Agent, AgentTestCase, ResponseReader, poll, scaled

CT = "application/connect+json"


def env(msg, flag=0):
    """One envelope: flag, 4-byte big-endian length, the JSON (or bytes)."""
    b = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    return bytes([flag]) + struct.pack(">I", len(b)) + b


def sh(script, **fields):
    """A StartRequest for /bin/sh -c script."""
    m = {"process": {"cmd": "/bin/sh", "args": ["-c", script]}}
    m.update(fields)
    return m


class Stream:
    """One server-stream call on a bare socket: the reply's head, then its
    envelopes as they come (de-chunked here)."""

    def __init__(self, a, rpc, msg=None, body=None, headers=None, pieces=None, timeout=10.0):
        self.s = a.connect(timeout)
        body = env(msg) if body is None else body
        h = "POST /process.Process/%s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n" % (rpc, CT)
        for k, v in (headers or {}).items():
            h += "%s: %s\r\n" % (k, v)
        if pieces is None:
            self.s.sendall((h + "Content-Length: %d\r\n\r\n" % len(body)).encode() + body)
        else:
            # The body in pieces, each its own write, a pause between.
            self.s.sendall((h + "Content-Length: %d\r\n\r\n" % len(body)).encode())
            off = 0
            for n in pieces:
                self.s.sendall(body[off:off + n])
                off += n
                time.sleep(0.02)
            self.s.sendall(body[off:])
        self.rd = ResponseReader(self.s)
        self.head = self.rd.read(head_only=True)
        self.body = b""
        self.done = False

    def close(self):
        self.s.close()

    def _chunk(self):
        size = int(self.rd._line().split(b";")[0], 16)
        if size == 0:
            self.rd._line()
            self.done = True
            return
        self.body += self.rd._exact(size)
        self.rd._line()

    def frame(self):
        """(flag, message) of the next envelope, or None at the body's end."""
        while len(self.body) < 5 or len(self.body) < 5 + struct.unpack(">I", self.body[1:5])[0]:
            if self.done:
                return None
            self._chunk()
        n = struct.unpack(">I", self.body[1:5])[0]
        f, m, self.body = self.body[0], self.body[5:5 + n], self.body[5 + n:]
        return f, json.loads(m)

    def frames(self):
        """Every envelope to the end of the body."""
        out = []
        while True:
            f = self.frame()
            if f is None:
                return out
            out.append(f)


def events(frames):
    """The events of a process stream, each as (kind, value)."""
    out = []
    for flag, m in frames:
        if flag == 0:
            (kind, val), = m["event"].items()
            out.append((kind, val))
    return out


def output(frames, key="stdout"):
    return b"".join(base64.b64decode(v[key]) for k, v in events(frames)
                    if k == "data" and key in v)


class NoEtcAgent(Agent):
    """An agent whose mount namespace has an empty tmpfs over /etc: an
    image without /etc/passwd.  sh mounts it, then execs the agent, which
    stays PID 1."""

    def argv(self):
        cmd = super().argv()
        i = cmd.index(TEND_BIN)
        return cmd[:i] + ["/bin/sh", "-c", 'mount -t tmpfs none /etc && exec "$@"',
                          "sh"] + cmd[i:]


class EnvdCase(AgentTestCase):
    def setUp(self):
        super().setUp()
        self.a = self.agent()

    def call(self, rpc, msg, headers=None, service="process.Process"):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        return self.a.post("/%s/%s" % (service, rpc), json.dumps(msg).encode(), headers=h)

    def run_stream(self, msg, rpc="Start", **kw):
        st = Stream(self.a, rpc, msg, **kw)
        self.addCleanup(st.close)
        self.assertEqual(st.head.status, 200, st.head)
        self.assertEqual(st.head.header("content-type"), CT)
        return st.frames()

    def assertEnded(self, frames, code=None):
        """The stream's last frame is the end-stream frame: {} or its error."""
        self.assertTrue(frames, "no frames")
        flag, m = frames[-1]
        self.assertEqual(flag, 2, frames)
        self.assertEqual([f for f, _ in frames].count(2), 1, frames)
        if code is None:
            self.assertEqual(m, {}, frames)
        else:
            self.assertEqual(m["error"]["code"], code, frames)
            self.assertTrue(m["error"]["message"], frames)
        return m

    def assertConnectError(self, r, status, code):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.json["code"], code, r)
        return r.json

    def wait_gone(self, tag):
        r = poll(lambda: self.a.get("/v1/processes/" + tag).json.get("state") == "exited",
                 timeout=10)
        self.assertTrue(r, self.a.get("/v1/processes/" + tag))


class TestFraming(EnvdCase):
    def test_start_streams_start_data_end(self):
        fr = self.run_stream(sh("echo hi; echo err >&2; exit 3"))
        ev = events(fr)
        self.assertEqual(ev[0][0], "start")
        self.assertGreater(ev[0][1]["pid"], 1)
        self.assertEqual(output(fr), b"hi\n")
        self.assertEqual(output(fr, "stderr"), b"err\n")
        self.assertEqual(ev[-1], ("end", {"exitCode": 3, "exited": True,
                                          "status": "exit status 3",
                                          "error": "exit status 3"}))
        self.assertEnded(fr)

    def test_exit_zero_omits_zero_values(self):
        ev = events(self.run_stream(sh("true")))
        self.assertEqual(ev[-1], ("end", {"exited": True, "status": "exit status 0"}))

    def test_envelope_split_across_writes(self):
        body = env(sh("echo split"))
        fr = self.run_stream(None, body=body, pieces=[1, 2, 1, 3, 7])
        self.assertEqual(output(fr), b"split\n")
        self.assertEnded(fr)

    def test_chunked_request_body(self):
        body = env(sh("echo chunked"))
        s = self.a.connect()
        self.addCleanup(s.close)
        s.sendall(("POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n" % CT).encode())
        for piece in (body[:3], body[3:9], body[9:]):
            s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            time.sleep(0.02)
        s.sendall(b"0\r\n\r\n")
        r = ResponseReader(s).read()
        self.assertEqual(r.status, 200)
        self.assertIn(b"Y2h1bmtlZAo=", r.body)     # "chunked\n"

    def test_stream_ended_without_the_client_reading(self):
        # 8 MiB of output and a client that reads nothing until the
        # process has ended: the process is not held, every byte is kept.
        n = 8 << 20
        st = Stream(self.a, "Start", sh("head -c %d /dev/zero" % n, tag="noread"))
        self.addCleanup(st.close)
        self.wait_gone("noread")
        j = self.a.get("/v1/processes/noread").json
        self.assertEqual(j["exit"]["code"], 0)
        self.assertEqual(j["stdoutBytes"], n)
        fr = st.frames()
        self.assertEqual(len(output(fr)), n)
        self.assertEqual(events(fr)[-1][1]["status"], "exit status 0")
        self.assertEnded(fr)

    def test_bad_json_is_the_only_frame(self):
        fr = self.run_stream(None, body=env(b'{"process":'))
        self.assertEqual(len(fr), 1)
        self.assertEnded(fr, "invalid_argument")
        fr = self.run_stream(None, body=env(b'[1,2]'))
        self.assertEnded(fr, "invalid_argument")

    def test_compressed_frame_unimplemented(self):
        fr = self.run_stream(None, body=env(sh("echo no"), flag=1))
        self.assertEqual(len(fr), 1)
        self.assertEnded(fr, "unimplemented")

    def test_bad_envelopes(self):
        good = env(sh("echo x"))
        for body in (good[:-1] + b"", good + b"\0", good[:3], b"",
                     env(sh("echo x"), flag=2)):
            fr = self.run_stream(None, body=body)
            self.assertEqual(len(fr), 1, body)
            self.assertEnded(fr, "invalid_argument")

    def test_unknown_fields_ignored(self):
        m = sh("echo ok", futureField={"x": 1})
        m["process"]["alsoNew"] = [1, 2]
        fr = self.run_stream(m)
        self.assertEqual(output(fr), b"ok\n")
        self.assertEnded(fr)

    def test_snake_case_fields(self):
        r = self.a.post("/init", json.dumps({"env_vars": {"SNAKE": "yes"},
                                             "default_workdir": "/tmp"}).encode())
        self.assertEqual(r.status, 204, r)
        fr = self.run_stream(sh('echo "$SNAKE"; pwd'))
        self.assertEqual(output(fr), b"yes\n/tmp\n")

    def test_stdin_absent_means_a_pipe(self):
        st = Stream(self.a, "Start", sh("cat", tag="cat1"))
        self.addCleanup(st.close)
        self.assertEqual(st.frame()[1]["event"]["start"]["pid"] > 0, True)
        r = self.call("SendInput", {"process": {"tag": "cat1"},
                                    "input": {"stdin": base64.b64encode(b"piped\n").decode()}})
        self.assertEqual((r.status, r.json), (200, {}))
        r = self.call("CloseStdin", {"process": {"tag": "cat1"}})
        self.assertEqual(r.status, 200, r)
        fr = st.frames()
        self.assertEqual(output(fr), b"piped\n")
        self.assertEnded(fr)

    def test_stdin_false_is_null(self):
        fr = self.run_stream(sh("cat; echo eof", stdin=False))
        self.assertEqual(output(fr), b"eof\n")
        st = Stream(self.a, "Start", sh("sleep 5", stdin=False, tag="nostdin"))
        self.addCleanup(st.close)
        st.frame()
        r = self.call("SendInput", {"process": {"tag": "nostdin"},
                                    "input": {"stdin": "eA=="}})
        self.assertConnectError(r, 400, "failed_precondition")

    def test_keepalive_after_silence_never_before_start(self):
        fr = self.run_stream(sh("sleep 2.5; echo late"),
                             headers={"Keepalive-Ping-Interval": "1"})
        ev = events(fr)
        self.assertEqual(ev[0][0], "start")
        self.assertGreaterEqual([k for k, _ in ev].count("keepalive"), 1, ev)
        self.assertEqual(ev[-1][0], "end")
        self.assertEqual(output(fr), b"late\n")

    def test_unknown_rpc_unimplemented_not_404(self):
        for rpc in ("StreamInput", "NoSuchRpc"):
            r = self.call(rpc, {})
            self.assertConnectError(r, 501, "unimplemented")

    def test_unary_bad_json(self):
        r = self.a.post("/process.Process/List", b'{"x":')
        self.assertConnectError(r, 400, "invalid_argument")
        r = self.a.post("/process.Process/List", b'')
        self.assertEqual((r.status, r.json), (200, {"processes": []}))


class TestErrorCodes(EnvdCase):
    """Each code tend answers, with its HTTP status on unary calls."""

    def start_sleeper(self, tag, pty=False):
        m = sh("sleep 30", tag=tag)
        if pty:
            m["pty"] = {"size": {"cols": 80, "rows": 24}}
        st = Stream(self.a, "Start", m)
        self.addCleanup(st.close)
        return st.frame()[1]["event"]["start"]["pid"]

    def test_not_found_404(self):
        for rpc, m in (("SendSignal", {"process": {"pid": 999999}, "signal": "SIGNAL_SIGKILL"}),
                       ("SendInput", {"process": {"tag": "nope"}, "input": {"stdin": ""}}),
                       ("CloseStdin", {"process": {"tag": "nope"}}),
                       ("Update", {"process": {"pid": 999999}})):
            self.assertConnectError(self.call(rpc, m), 404, "not_found")
        fr = self.run_stream({"process": {"tag": "nope"}}, rpc="Connect")
        self.assertEnded(fr, "not_found")

    def test_invalid_argument_400(self):
        self.start_sleeper("sig")
        for m in ({"process": {"tag": "sig"}, "signal": "SIGNAL_SIGHUP"},
                  {"process": {"tag": "sig"}},
                  {"process": {}, "signal": "SIGNAL_SIGKILL"},
                  {"signal": 9}):
            self.assertConnectError(self.call("SendSignal", m), 400, "invalid_argument")
        for m in ({"process": {"args": ["x"]}}, {"process": {"cmd": ""}},
                  {"process": {"cmd": "/bin/true", "args": [1]}},
                  {"process": {"cmd": "/bin/true", "envs": {"A": 1}}},
                  {"process": {"cmd": "/bin/true"}, "tag": "bad tag"},
                  {"process": {"cmd": "/bin/true"}, "stdin": "yes"},
                  {"process": {"cmd": "/no/such/program"}},
                  {"process": {"cmd": "/bin/true", "cwd": "/no/such/dir"}},
                  {"process": {"cmd": "/bin/true", "cwd": "~root/x"}}):
            fr = self.run_stream(m)
            self.assertEqual(len(fr), 1, m)
            self.assertEnded(fr, "invalid_argument")
        fr = self.run_stream(sh("true"), headers={"Connect-Timeout-Ms": "12345678901"})
        self.assertEnded(fr, "invalid_argument")

    def test_connect_timeout_malformed_one_message(self):
        # Start's and Connect's, from one parser (envd_timeout).
        self.start_sleeper("ct")
        for h in ("12345678901", "-1", "1.5", "abc"):
            for rpc, m in (("Start", sh("echo never")), ("Connect", {"process": {"tag": "ct"}})):
                fr = self.run_stream(m, rpc=rpc, headers={"Connect-Timeout-Ms": h})
                self.assertEqual(len(fr), 1, (rpc, h, fr))
                e = self.assertEnded(fr, "invalid_argument")
                self.assertEqual(e["error"]["message"], "Connect-Timeout-Ms: 1 to 10 digits")

    def test_already_exists_for_a_taken_tag(self):
        self.start_sleeper("taken")
        fr = self.run_stream(sh("echo never", tag="taken"))
        self.assertEqual(len(fr), 1)
        self.assertEnded(fr, "already_exists")

    def test_failed_precondition_400(self):
        self.start_sleeper("plain")
        r = self.call("Update", {"process": {"tag": "plain"},
                                 "pty": {"size": {"cols": 10, "rows": 10}}})
        self.assertConnectError(r, 400, "failed_precondition")
        r = self.call("SendInput", {"process": {"tag": "plain"}, "input": {"pty": "eA=="}})
        self.assertConnectError(r, 400, "failed_precondition")
        self.start_sleeper("tty", pty=True)
        r = self.call("CloseStdin", {"process": {"tag": "tty"}})
        self.assertConnectError(r, 400, "failed_precondition")

    def test_unauthenticated_401(self):
        basic = "Basic " + base64.b64encode(b"no-such-user-here:").decode()
        fr = self.run_stream(sh("echo never"), headers={"Authorization": basic})
        self.assertEnded(fr, "unauthenticated")
        fr = self.run_stream(sh("echo never"), headers={"Authorization": "Basic !!!"})
        self.assertEnded(fr, "unauthenticated")

    def test_unimplemented_501_and_method_405(self):
        self.assertConnectError(self.call("StreamInput", {}), 501, "unimplemented")
        r = self.a.get("/process.Process/Start")
        self.assertError(r, 405, "method_not_allowed")

    def test_deadline_exceeded(self):
        fr = self.run_stream(sh("sleep 20", tag="dl"), headers={"Connect-Timeout-Ms": "400"})
        self.assertEqual(events(fr)[-1], ("end", {"exitCode": -1, "status": "signal: killed",
                                                  "error": "signal: killed"}))
        self.assertEnded(fr, "deadline_exceeded")
        self.wait_gone("dl")
        j = self.a.get("/v1/processes/dl").json
        self.assertEqual((j["exit"]["signal"], j["exit"]["timedOut"]), (9, True))

    def test_signal_names_are_go_s(self):
        # What envd's Go says of a signal's end (os.ProcessState), in
        # every build: glibc's and musl's strsignal texts differ from it.
        for sig, name in ((8, "floating point exception"), (10, "user defined signal 1"),
                          (15, "terminated"), (34, "signal 34")):
            fr = self.run_stream(sh("kill -%d $$" % sig))
            end = events(fr)[-1]
            self.assertEqual(end[0], "end", end)
            self.assertEqual(end[1].get("status"), "signal: " + name, (sig, end))

    def test_deadline_of_a_pty(self):
        m = {"process": {"cmd": "/bin/sh", "args": ["-c", "sleep 20"]},
             "pty": {"size": {"cols": 80, "rows": 24}}, "tag": "ptydl"}
        t0 = time.monotonic()
        fr = self.run_stream(m, headers={"Connect-Timeout-Ms": "400"})
        self.assertLess(time.monotonic() - t0, scaled(10))
        self.assertEqual(events(fr)[-1][1]["status"], "signal: killed")
        self.assertEnded(fr)


class TestProcesses(EnvdCase):
    def test_cancel_mid_stream_leaves_the_process_running(self):
        st = Stream(self.a, "Start", sh("echo a; sleep 1; echo b", tag="cancel"))
        self.assertIn("start", st.frame()[1]["event"])
        st.close()
        time.sleep(0.3)
        self.assertEqual(self.a.get("/v1/processes/cancel").json["state"], "running")
        lst = self.call("List", {}).json["processes"]
        self.assertIn("cancel", [p.get("tag") for p in lst])
        self.wait_gone("cancel")
        j = self.a.get("/v1/processes/cancel").json
        self.assertEqual((j["exit"]["code"], j["stdoutBytes"]), (0, 4))

    def test_orphan_of_a_start_is_reaped(self):
        fr = self.run_stream(sh("(sleep 0.5 &) ; echo $$"))
        self.assertEnded(fr)
        time.sleep(0.3)
        self.assertTrue(len(self.a.descendants()) >= 1, "the orphan is alive under the agent")
        self.assertTrue(poll(lambda: not self.a.descendants(), timeout=5),
                        self.a.descendants())
        self.assertEqual(self.a.zombies(), [])
        self.assertGreaterEqual(self.a.get("/v1/health").status, 200)

    def test_output_with_no_client_is_stored(self):
        st = Stream(self.a, "Start", sh("sleep 0.3; echo one; echo two >&2", tag="stored"))
        st.frame()
        st.close()
        self.wait_gone("stored")
        r = self.a.get("/v1/processes/stored/logs", headers={"Accept": "application/json"})
        self.assertEqual(base64.b64decode(r.json["stdout"]), b"one\n")
        self.assertEqual(base64.b64decode(r.json["stderr"]), b"two\n")

    def test_exit_code_of_an_ended_command_stays_for_connect(self):
        fr = self.run_stream(sh("exit 7", tag="gone"))
        pid = events(fr)[0][1]["pid"]
        # Past the 30 s after which envd forgets an ended command.
        time.sleep(31)
        for sel in ({"tag": "gone"}, {"pid": pid}):
            fr = self.run_stream({"process": sel}, rpc="Connect")
            ev = events(fr)
            self.assertEqual(ev[0], ("start", {"pid": pid}))
            self.assertEqual(ev[1][1]["exitCode"], 7)
            self.assertEqual(len(ev), 2)
            self.assertEnded(fr)
        # Ended: not a target for signals (envd's not_found), not listed.
        r = self.call("SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
        self.assertConnectError(r, 404, "not_found")
        self.assertNotIn("gone", [p.get("tag") for p in self.call("List", {}).json["processes"]])

    def test_connect_is_live_only(self):
        st = Stream(self.a, "Start", sh("echo before; sleep 0.8; echo after", tag="live"))
        self.addCleanup(st.close)
        poll(lambda: self.a.get("/v1/processes/live").json["stdoutBytes"] > 0)
        fr = self.run_stream({"process": {"tag": "live"}}, rpc="Connect")
        self.assertEqual(output(fr), b"after\n")
        self.assertEqual(events(fr)[-1][0], "end")
        self.assertEqual(output(st.frames()), b"before\nafter\n")

    def test_connect_timeout_ends_the_stream_only(self):
        st = Stream(self.a, "Start", sh("sleep 2", tag="ct"))
        self.addCleanup(st.close)
        st.frame()
        fr = self.run_stream({"process": {"tag": "ct"}}, rpc="Connect",
                             headers={"Connect-Timeout-Ms": "300"})
        m = self.assertEnded(fr, "deadline_exceeded")
        # The wording of every envd stream's deadline (WatchDir's too).
        self.assertEqual(m["error"]["message"],
                         "the stream's deadline (Connect-Timeout-Ms) passed")
        self.assertEqual(self.a.get("/v1/processes/ct").json["state"], "running")

    def test_sigkill_reaches_the_group(self):
        st = Stream(self.a, "Start", sh("sleep 100 & echo $!; wait", tag="grp"))
        self.addCleanup(st.close)
        pid = st.frame()[1]["event"]["start"]["pid"]
        child = None
        while child is None:
            f = st.frame()
            if "data" in f[1]["event"]:
                child = int(base64.b64decode(f[1]["event"]["data"]["stdout"]))
        self.assertIsNotNone(self.a.host_pid_of(child))
        r = self.call("SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})
        self.assertEqual((r.status, r.json), (200, {}))
        fr = st.frames()
        self.assertEqual(events(fr)[-1][1]["status"], "signal: killed")
        self.assertTrue(poll(lambda: self.a.host_pid_of(child) is None, timeout=5))

    def test_list_shows_running_with_env_names_only(self):
        m = sh("sleep 5", tag="listed")
        m["process"]["envs"] = {"SECRET": "hunter2"}
        m["process"]["cwd"] = "/tmp"
        st = Stream(self.a, "Start", m)
        self.addCleanup(st.close)
        pid = st.frame()[1]["event"]["start"]["pid"]
        r = self.call("List", {})
        self.assertEqual(r.status, 200)
        mine = [p for p in r.json["processes"] if p.get("tag") == "listed"]
        self.assertEqual(mine, [{"pid": pid, "tag": "listed",
                                 "config": {"cmd": "/bin/sh", "args": ["-c", "sleep 5"],
                                            "envs": {"SECRET": ""}, "cwd": "/tmp"}}])
        self.assertNotIn(b"hunter2", r.body)

    def test_pty_input_resize_and_output(self):
        m = {"process": {"cmd": "/bin/sh", "args": ["-i"], "envs": {"PS1": "$ "}},
             "pty": {"size": {"cols": 81, "rows": 25}}, "tag": "tty"}
        st = Stream(self.a, "Start", m)
        self.addCleanup(st.close)
        pid = st.frame()[1]["event"]["start"]["pid"]

        def send(text):
            r = self.call("SendInput", {"process": {"pid": pid},
                                        "input": {"pty": base64.b64encode(text).decode()}})
            self.assertEqual(r.status, 200, r)

        def until(needle):
            seen = b""
            while needle not in seen:
                f = st.frame()
                self.assertIsNotNone(f, seen)
                d = f[1].get("event", {}).get("data", {})
                self.assertNotIn("stdout", d)
                seen += base64.b64decode(d.get("pty", ""))
            return seen

        send(b"stty size\n")
        until(b"25 81")
        r = self.call("Update", {"process": {"tag": "tty"},
                                 "pty": {"size": {"cols": 100, "rows": 30}}})
        self.assertEqual(r.status, 200, r)
        send(b"stty size\n")
        until(b"30 100")
        self.assertEqual(self.call("SendSignal", {"process": {"pid": pid},
                                                  "signal": 9}).status, 200)
        fr = st.frames()
        self.assertEqual(events(fr)[-1][1]["exitCode"], -1)
        self.assertEnded(fr)


class TestUserAndInit(EnvdCase):
    def test_basic_user_home_and_env(self):
        basic = "Basic " + base64.b64encode(b"nobody:").decode()
        fr = self.run_stream(sh('echo "$USER $LOGNAME $HOME"; id -un', **{
            "process": {"cmd": "/bin/sh", "cwd": "/tmp",
                        "args": ["-c", 'echo "$USER $LOGNAME $HOME"; id -un']}}),
            headers={"Authorization": basic})
        home = pwd.getpwnam("nobody").pw_dir
        self.assertEqual(output(fr), ("nobody nobody %s\nnobody\n" % home).encode())

    def test_default_cwd_is_home_and_relative_joins_it(self):
        fr = self.run_stream(sh("pwd"))
        self.assertEqual(output(fr), b"/root\n")
        m = sh("pwd")
        m["process"]["cwd"] = "."
        self.assertEqual(output(self.run_stream(m)), b"/root\n")

    def test_init_sets_defaults_and_merges_vars(self):
        r = self.a.post("/init", json.dumps({"envVars": {"A": "1", "B": "1"},
                                             "accessToken": "ignored"}).encode())
        self.assertEqual(r.status, 204, r)
        r = self.a.post("/init", json.dumps({"envVars": {"B": "2"}, "defaultUser": "nobody",
                                             "defaultWorkdir": "/tmp"}).encode())
        self.assertEqual(r.status, 204, r)
        m = sh('echo "$A$B$C"; id -un; pwd')
        m["process"]["envs"] = {"C": "3"}
        self.assertEqual(output(self.run_stream(m)), b"123\nnobody\n/tmp\n")
        r = self.a.post("/init", json.dumps({"defaultUser": "no-such-user-here",
                                             "envVars": {"A": "x"}}).encode())
        self.assertConnectError(r, 400, "invalid_argument")
        self.assertEqual(output(self.run_stream(sh('echo "$A"'))), b"1\n")

    def init_vars(self, vars):
        return self.a.post("/init", json.dumps({"envVars": vars}).encode(),
                           timeout=scaled(10))

    def test_init_bytes_bounded_in_all_across_calls(self):
        # One name replaced again and again with a big value is taken;
        # big values under new names are refused once the total is spent
        # (before: each call was bounded alone, and 40 calls kept 5.6 MB).
        # A value to exec stays under the kernel's 128 KiB for one string.
        big = 120 * 1024
        for i in range(10):
            r = self.init_vars({"BIG": "%d" % i + "x" * big})
            self.assertEqual(r.status, 204, r)
        rss = self.a.rss_kib()
        refused = 0
        for i in range(40):
            r = self.init_vars({"NEW%d" % i: "y" * 140 * 1024})
            refused += r.status == 400 and r.json["code"] == "invalid_argument"
        self.assertEqual(refused, 40)
        if not SLOW:        # ASan's quarantine keeps the freed bodies
            self.assertLess(self.a.rss_kib() - rss, 3 * 1024)
        self.assertEqual(output(self.run_stream(sh('echo "${#BIG} ${NEW0-none}"'))),
                         b"%d none\n" % (big + 1))

    def test_init_resent_set_is_taken_and_starts_still_run(self):
        # The SDK re-sends its envVars: a name kept counts once.  At most
        # 4092 in all, so that PATH, HOME, USER and LOGNAME still fit.
        vars = {"V%d" % i: "%d" % i for i in range(4092)}
        for _ in range(2):
            r = self.init_vars(vars)
            self.assertEqual(r.status, 204, r)
        r = self.init_vars({"ONE_MORE": "x"})
        self.assertConnectError(r, 400, "invalid_argument")
        fr = self.run_stream(sh('echo "$V4091 $USER"'))
        self.assertEqual(output(fr), b"4091 root\n")

    def test_envd_user_root_without_passwd(self):
        # root needs no passwd entry, for --envd-user as for a request.
        a = NoEtcAgent(extra=["--envd-user", "root"], start=False)
        self.addCleanup(a.close)
        a.start().wait_healthy()
        st = Stream(a, "Start", sh('echo "$USER $HOME"; test -e /etc/passwd || echo none'))
        self.addCleanup(st.close)
        self.assertEqual(output(st.frames()), b"root /root\nnone\n")
        b = NoEtcAgent(extra=["--envd-user", "nobody"])
        self.addCleanup(b.close)
        self.assertEqual(b.wait_exit(), 2)
        self.assertIn("--envd-user: 'nobody': no such user", b.log_text())

    def test_envd_user_option(self):
        a = self.agent(extra=["--envd-user", "nobody"])
        m = sh("id -un; pwd")
        m["process"]["cwd"] = "/tmp"
        st = Stream(a, "Start", m)
        self.addCleanup(st.close)
        self.assertEqual(output(st.frames()), b"nobody\n/tmp\n")
        # Its home (/nonexistent on Debian) is the default cwd: envd's
        # refusal of a cwd that does not exist.
        if not pwd.getpwnam("nobody").pw_dir.startswith("/nonexistent"):
            return
        st = Stream(a, "Start", sh("id -un"))
        self.addCleanup(st.close)
        self.assertEnded(st.frames(), "invalid_argument")


if __name__ == "__main__":
    unittest.main()
