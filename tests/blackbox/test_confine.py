"""Process confinement (DESIGN §6): user as name, uid or uid:gid, the
agent's --default-user, noNewPrivs, the seccomp deny-list, network:"none"
and rlimits, on launch, exec and terminals; invalid values refused with
400 naming the field.  What a child got is read from inside it (id,
/proc/self/status, /proc/self/limits, /proc/net/dev) or from the host."""
import base64
import os
import pwd
import re
import shutil
import subprocess
import time
import unittest

from harness import Agent, AgentTestCase, TEND_BIN, poll, read_file

# uids with no passwd entry (checked in setUp)
NOBODY_UID = 65534
STRANGER = 12345
READER = 12346


def out(r):
    """(exit code, stdout, stderr) of a /v1/exec reply."""
    return (r.json["exit"]["code"], base64.b64decode(r.json["stdout"]).decode(),
            base64.b64decode(r.json["stderr"]).decode())


class ConfineCase(AgentTestCase):
    def setUp(self):
        super().setUp()
        for uid in (STRANGER, READER):
            try:
                pwd.getpwuid(uid)
                self.skipTest("uid %d has a passwd entry here" % uid)
            except KeyError:
                pass

    def exec_ok(self, a, argv, **fields):
        body = {"argv": argv}
        body.update(fields)
        r = a.post("/v1/exec", body)
        self.assertEqual(r.status, 200, r)
        return out(r)

    def term_output(self, a, t):
        path = os.path.join(a.boot_dir(t["bootId"]), "terms", t["id"], "output")

        def done():
            st = a.get("/v1/terminals/%s" % t["id"]).json
            return st["status"] != "running" and os.path.exists(path)
        self.assertTrue(poll(done, 5.0), "terminal %s did not end" % t["id"])
        return read_file(path).decode(errors="replace")


class TestSeccomp(ConfineCase):
    def test_denied_call_fails_eperm_others_run(self):
        a = self.agent()
        code, _, err = self.exec_ok(a, ["unshare", "-n", "true"], seccomp="default")
        self.assertNotEqual(code, 0)
        self.assertIn("Operation not permitted", err)
        self.assertEqual(self.exec_ok(a, ["true"], seccomp="default")[0], 0)
        # Without the filter the same call works (the agent is root).
        self.assertEqual(self.exec_ok(a, ["unshare", "-n", "true"])[0], 0)
        code, o, _ = self.exec_ok(a, ["grep", "^Seccomp:", "/proc/self/status"],
                                  seccomp="default")
        self.assertEqual(o.split(), ["Seccomp:", "2"])

    def test_launch_and_terminal(self):
        a = self.agent()
        p = a.launch_ok(["unshare", "-n", "true"], seccomp="default")
        self.assertNotEqual(a.wait_ended(p["id"])["exit"]["code"], 0)
        r = a.post("/v1/terminals", {"argv": ["unshare", "-n", "true"], "seccomp": "default"})
        self.assertEqual(r.status, 200, r)
        self.assertIn("Operation not permitted", self.term_output(a, r.json))


class TestNetwork(ConfineCase):
    LO_WORKS = ("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
                "socket.create_connection(s.getsockname(), timeout=2); print('lo-ok')")

    def test_only_loopback_and_it_is_up(self):
        a = self.agent()
        code, o, _ = self.exec_ok(a, ["cat", "/proc/net/dev"], network="none")
        self.assertEqual(code, 0)
        ifaces = sorted(l.split(":")[0].strip() for l in o.splitlines()[2:])
        self.assertEqual(ifaces, ["lo"])
        self.assertEqual(self.exec_ok(a, ["python3", "-c", self.LO_WORKS],
                                      network="none")[1], "lo-ok\n")
        # The agent's own namespace has more (or the test proves nothing).
        code, o, _ = self.exec_ok(a, ["cat", "/proc/net/dev"])
        if len(o.splitlines()[2:]) < 2:
            self.skipTest("this host has only lo")

    def test_no_capability_is_422_never_run(self):
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            self.skipTest("no setpriv (util-linux)")
        a = Agent(start=False)
        base = a.argv

        def argv():
            cmd = base()
            i = cmd.index(TEND_BIN)
            return cmd[:i] + [setpriv, "--inh-caps", "-sys_admin", "--bounding-set",
                              "-sys_admin", "--"] + cmd[i:]
        a.argv = argv
        with a:
            a.start()
            a.wait_healthy()
            st = read_file("/proc/%d/status" % a.host_pid()).decode()
            eff = int(re.search(r"^CapEff:\s*([0-9a-f]+)", st, re.M).group(1), 16)
            if eff & (1 << 21):
                self.skipTest("could not drop CAP_SYS_ADMIN")
            flag = os.path.join(a.tmp, "ran")
            for route in ("/v1/exec", "/v1/processes", "/v1/terminals"):
                r = a.post(route, {"argv": ["touch", flag], "network": "none"})
                self.assertEqual(r.status, 422, (route, r))
                self.assertEqual(r.json["code"], "isolation_unavailable")
            time.sleep(0.2)
            self.assertFalse(os.path.exists(flag), "ran without isolation")
            # Without the capability the filter needs noNewPrivs to load.
            r = a.post("/v1/exec", {"argv": ["true"], "seccomp": "default"})
            self.assertEqual(r.status, 422, r)
            self.assertNotEqual(self.exec_ok(a, ["unshare", "-n", "true"], seccomp="default",
                                             noNewPrivs=True)[0], 0)
            self.assertEqual(a.health().get("status"), "ok")


class TestUser(ConfineCase):
    ID = ["sh", "-c", "id -u; id -g"]

    def test_numeric_without_passwd_entry(self):
        a = self.agent()
        self.assertEqual(self.exec_ok(a, self.ID, user="%d:%d" % (STRANGER, STRANGER + 1))[1],
                         "%d\n%d\n" % (STRANGER, STRANGER + 1))
        self.assertEqual(self.exec_ok(a, self.ID, user=str(STRANGER))[1],
                         "%d\n%d\n" % (STRANGER, STRANGER))
        self.assertEqual(self.exec_ok(a, self.ID, user=STRANGER)[1],
                         "%d\n%d\n" % (STRANGER, STRANGER))
        self.assertEqual(self.exec_ok(a, self.ID, user="65534:65534")[1], "65534\n65534\n")

    def test_name(self):
        pw = pwd.getpwuid(NOBODY_UID)
        a = self.agent()
        self.assertEqual(self.exec_ok(a, self.ID, user=pw.pw_name)[1],
                         "%d\n%d\n" % (pw.pw_uid, pw.pw_gid))

    def test_script_without_shebang_as_a_user(self):
        # A user means the fork path: a file without #! still runs
        # through /bin/sh there, as without one (the static build's
        # execvp, musl's, refused it with ENOEXEC).
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)
            script = os.path.join(d, "script")
            with open(script, "w") as f:
                f.write("id -u; echo \"$1\"\n")
            os.chmod(script, 0o755)
            a = self.agent()
            self.assertEqual(self.exec_ok(a, [script, "arg"], user="65534:65534")[1],
                             "65534\narg\n")
            self.assertEqual(self.exec_ok(a, [script, "arg"])[1], "%d\narg\n" % os.getuid())

    def test_supplementary_groups_from_etc_group(self):
        # What initgroups gave before the static build: the passwd gid
        # plus each /etc/group entry listing the name; none for a uid.
        members = {}
        with open("/etc/group") as f:
            for line in f:
                p = line.rstrip("\n").split(":")
                for m in (p[3].split(",") if len(p) == 4 and p[3] else []):
                    members.setdefault(m, set()).add(int(p[2]))
        names = [n for n in sorted(members) if self._pw(n)]
        if not names:
            self.skipTest("no account here is a member of a group")
        pw = self._pw(names[0])
        a = self.agent()
        groups = ["sh", "-c", "grep ^Groups: /proc/self/status"]
        got = set(map(int, self.exec_ok(a, groups, user=pw.pw_name)[1].split()[1:]))
        self.assertEqual(got, members[pw.pw_name] | {pw.pw_gid})
        got = self.exec_ok(a, groups, user="%d:%d" % (pw.pw_uid, pw.pw_gid))[1].split()[1:]
        self.assertEqual(got, [])

    @staticmethod
    def _pw(name):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            return None

    def test_default_user(self):
        a = self.agent(extra=["--default-user", "%d:%d" % (STRANGER, STRANGER)])
        self.assertEqual(self.exec_ok(a, self.ID)[1], "%d\n%d\n" % (STRANGER, STRANGER))
        # A request's own user wins.
        self.assertEqual(self.exec_ok(a, self.ID, user="0")[1], "0\n0\n")
        p = a.launch_ok(["sleep", "5"])
        st = read_file("/proc/%d/status" % a.host_pid_of(p["pid"])).decode()
        self.assertRegex(st, r"Uid:\s+%d\s" % STRANGER)
        a.post("/v1/processes/%s/kill" % p["id"], {"signal": 9})
        r = a.post("/v1/terminals", {"argv": self.ID})
        self.assertEqual(r.status, 200, r)
        self.assertIn("%d\r\n%d" % (STRANGER, STRANGER), self.term_output(a, r.json))

    def test_default_user_refused_at_start(self):
        r = subprocess.run([TEND_BIN, "agent", "--default-user", "no-such-user-xyz",
                            "--socket", "/nonexistent/s"], capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--default-user", r.stderr)
        self.assertIn(b"no such user", r.stderr)

    def test_environ_unreadable_by_another_account(self):
        a = self.agent()
        p = a.launch_ok(["sleep", "10"], user="%d:%d" % (NOBODY_UID, NOBODY_UID),
                        env={"SECRET": "s3cr3t"})
        ns_pid = p["pid"]
        code, _, err = self.exec_ok(a, ["cat", "/proc/%d/environ" % ns_pid],
                                    user="%d:%d" % (READER, READER))
        self.assertNotEqual(code, 0)
        self.assertIn("Permission denied", err)
        # root can: the file is there and holds it.
        self.assertIn("SECRET=s3cr3t", self.exec_ok(a, ["cat", "/proc/%d/environ" % ns_pid])[1])
        a.post("/v1/processes/%s/kill" % p["id"], {"signal": 9})

    def test_terminal_user(self):
        a = self.agent()
        r = a.post("/v1/terminals", {"argv": self.ID, "user": "%d:%d" % (STRANGER, STRANGER)})
        self.assertEqual(r.status, 200, r)
        self.assertIn("%d\r\n%d" % (STRANGER, STRANGER), self.term_output(a, r.json))


class TestLimits(ConfineCase):
    def test_rlimits_and_no_new_privs(self):
        lim = {"nofile": 77, "nproc": 55, "as": 1 << 30, "cpu": 30, "fsize": 1 << 20}
        rows = {"nofile": "Max open files", "nproc": "Max processes",
                "as": "Max address space", "cpu": "Max cpu time", "fsize": "Max file size"}
        a = self.agent()
        p = a.launch_ok(["sleep", "10"], rlimits=lim, noNewPrivs=True)
        hp = a.host_pid_of(p["pid"])
        limits = read_file("/proc/%d/limits" % hp).decode()
        for k, v in lim.items():
            self.assertRegex(limits, r"%s\s+%d\s+%d\s" % (rows[k], v, v), k)
        self.assertRegex(read_file("/proc/%d/status" % hp).decode(), r"NoNewPrivs:\s+1")
        meta = read_file(os.path.join(a.proc_dir(p["bootId"], p["id"]), "meta.json")).decode()
        self.assertIn('"rlimits":{"nofile":77', meta)
        self.assertIn('"noNewPrivs":true', meta)
        a.post("/v1/processes/%s/kill" % p["id"], {"signal": 9})
        # Without them: the agent's own.
        code, o, _ = self.exec_ok(a, ["grep", "NoNewPrivs", "/proc/self/status"])
        self.assertEqual(o.split(), ["NoNewPrivs:", "0"])
        # On exec too; a limit the program meets.
        code, _, err = self.exec_ok(a, ["sh", "-c", "head -c 4096 /dev/zero > %s/big" % a.tmp],
                                    rlimits={"fsize": 1024})
        self.assertNotEqual(code, 0)


class TestInvalid(ConfineCase):
    CASES = [
        ({"user": ""}, "user"), ({"user": "no-such-user-xyz"}, "user"),
        ({"user": "1:"}, "user"), ({"user": ":1"}, "user"), ({"user": "1:x"}, "user"),
        ({"user": "4294967295"}, "user"), ({"user": -1}, "user"), ({"user": 1.5}, "user"),
        ({"user": True}, "user"), ({"noNewPrivs": 1}, "noNewPrivs"),
        ({"noNewPrivs": "true"}, "noNewPrivs"), ({"seccomp": "strict"}, "seccomp"),
        ({"seccomp": True}, "seccomp"), ({"network": "host"}, "network"),
        ({"network": None}, "network"), ({"rlimits": []}, "rlimits"),
        ({"rlimits": {"stack": 1}}, "rlimits"), ({"rlimits": {"nofile": -1}}, "rlimits"),
        ({"rlimits": {"nofile": 1.5}}, "rlimits"), ({"rlimits": {"cpu": "1"}}, "rlimits"),
    ]

    def test_400_naming_the_field_on_every_route(self):
        a = self.agent()
        for route in ("/v1/processes", "/v1/exec", "/v1/terminals"):
            for fields, name in self.CASES:
                body = {"argv": ["true"]}
                body.update(fields)
                r = a.post(route, body)
                self.assertEqual(r.status, 400, (route, fields, r))
                self.assertEqual(r.json["code"], "invalid_request", (route, fields))
                self.assertEqual(r.json.get("field"), name, (route, fields, r))
        self.assertEqual(a.get("/v1/processes").json, [])


if __name__ == "__main__":
    unittest.main()
