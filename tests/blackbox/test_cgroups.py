"""Containment: a cgroup v2 per process and terminal (proto/README.md,
"Containment").

These run on the host's own cgroup2 hierarchy.  Where it has no
controllers (a hybrid host's "unified" mount) cgroup.kill, cgroup.freeze,
cgroup.events and cpu.stat are still there: kill, settle, freeze and CPU
usage are tested here; limits and OOM need controllers and are tested in
the virtual machine (tests/vm).  Agents share the hierarchy, each in a
subtree of its own (tend-<boot>).
"""
import os
import re
import subprocess
import time
import unittest

from harness import Agent, AgentTestCase, TEND_BIN, poll, scaled


def cgroup2_mount():
    """The cgroup2 mount point this host has (the last listed), or None."""
    point = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[:1] == ["cgroup2"]:
                point = left.split()[4]
    return point


MOUNT = cgroup2_mount()
WRITABLE = MOUNT is not None and os.access(MOUNT, os.W_OK) and \
    os.path.exists(os.path.join(MOUNT, "cgroup.procs"))


def marked(mark):
    """Host pids whose command line holds mark."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if mark.encode() in f.read():
                    found.append(int(d))
        except OSError:
            pass
    return found


def read(path):
    with open(path) as f:
        return f.read()


@unittest.skipUnless(WRITABLE, "no writable cgroup2 hierarchy on this host")
class TestCgroups(AgentTestCase):

    def cg_dir(self, st):
        return MOUNT + st["cgroup"]

    def test_health_and_layout(self):
        a = self.agent()
        cg = a.health()["cgroups"]
        self.assertEqual(cg["mode"], "v2", cg)
        self.assertIsNone(cg["reason"])
        self.assertIsInstance(cg["controllers"], list)
        root = cg["root"]
        # Not alone in the host's cgroup: a subtree named after the boot.
        self.assertEqual(os.path.basename(root), "tend-" + a.health()["bootId"])
        for d in ("agent", "procs", "terms"):
            self.assertTrue(os.path.isdir(os.path.join(root, d)), d)
        # The agent (and its helpers) are in its leaf.
        self.assertIn(str(a.host_pid()), read(os.path.join(root, "agent", "cgroup.procs")).split())
        m = [l for l in a.get("/v1/metrics").body.decode().splitlines()
             if l.startswith("tend_cgroups ")]
        self.assertEqual(m, ["tend_cgroups 1"])
        a.stop()
        # Its subtree goes with it.
        self.assertFalse(os.path.exists(root), root)

    def test_born_inside(self):
        a = self.agent()
        # The program's first act reads its own cgroup: it is already there.
        p = a.launch_ok(["cat", "/proc/self/cgroup"])
        st = a.wait_proc(p["id"])
        out = a.get("/v1/processes/%s/stdout" % p["id"]).body.decode()
        self.assertIn("0::" + st["cgroup"] + "\n", out, (out, st))
        self.assertRegex(st["cgroup"], r"/procs/\d+$")
        # exec, and a terminal, too.
        r = a.post("/v1/exec", {"argv": ["cat", "/proc/self/cgroup"]})
        self.assertEqual(r.status, 200, r)
        import base64
        self.assertRegex(base64.b64decode(r.json["stdout"]).decode(), r"\n0::/\S*/procs/\d+\n")
        t = a.post("/v1/terminals", {"argv": ["sleep", "30"]}).json
        ts = a.get("/v1/terminals/%s" % t["id"]).json
        self.assertRegex(ts["cgroup"], r"/terms/\d+$")
        self.assertTrue(os.path.isdir(self.cg_dir(ts)))

    def test_force_delete_kills_setsid_escapee(self):
        a = self.agent()
        mark = "1000.%d" % os.getpid()
        p = a.launch_ok(["sh", "-c", 'setsid sh -c "sleep %s" & sleep %s; wait' % (mark, mark)])
        self.assertTrue(poll(lambda: len(marked(mark)) >= 2), marked(mark))
        st = a.status(p["id"]).json
        cgdir = self.cg_dir(st)
        r = a.delete("/v1/processes/%s?force=1" % p["id"])
        self.assertIn(r.status, (200, 204), r)
        self.assertTrue(poll(lambda: not marked(mark)), "escapee survived: %r" % marked(mark))
        # The cgroup goes once empty.
        self.assertTrue(poll(lambda: not os.path.exists(cgdir)), cgdir)

    def test_shutdown_kills_setsid_escapee(self):
        a = self.agent(extra=["--grace", "1"])
        mark = "1001.%d" % os.getpid()
        a.launch_ok(["sh", "-c", 'setsid sh -c "trap \\"\\" TERM; sleep %s" & sleep %s' % (mark, mark)])
        self.assertTrue(poll(lambda: len(marked(mark)) >= 2))
        self.assertEqual(a.stop(), 0)
        self.assertTrue(poll(lambda: not marked(mark), timeout=3), marked(mark))

    def test_settles_when_the_cgroup_empties(self):
        a = self.agent()
        # The root exits at once; an escapee of its group stays a member
        # of its cgroup, and the record ends when it does.
        p = a.launch_ok(["sh", "-c", "setsid sleep %s & exit 0" % scaled(0.6)])
        time.sleep(scaled(0.3))
        st = a.status(p["id"]).json
        self.assertEqual(st["state"], "running", st)
        t0 = time.monotonic()
        st = a.wait_proc(p["id"])
        self.assertEqual(st["state"], "exited", st)
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertLess(time.monotonic() - t0, scaled(2.0))
        self.assertFalse(os.path.exists(MOUNT + st["cgroup"]) if "cgroup" in st else False)

    def test_cpu_usage_live_and_final(self):
        a = self.agent()
        p = a.launch_ok(["sh", "-c", "while :; do :; done"], timeout=int(scaled(1.0) * 1000))
        time.sleep(scaled(0.3))
        u1 = a.status(p["id"]).json["resources"]["cpuUsec"]
        time.sleep(scaled(0.3))
        u2 = a.status(p["id"]).json["resources"]["cpuUsec"]
        self.assertGreater(u2, u1)
        st = a.wait_proc(p["id"])
        self.assertEqual(st["state"], "exited", st)
        self.assertTrue(st["exit"]["timedOut"], st)
        final = st["resources"]["cpuUsec"]
        self.assertGreaterEqual(final, u2)
        self.assertNotIn("frozen", st)
        # Final figures survive in status.json.
        path = os.path.join(a.state, "boots", a.health()["bootId"], "procs", p["id"], "status.json")
        import json
        self.assertTrue(poll(lambda: os.path.exists(path)))
        on_disk = poll(lambda: json.loads(read(path)) if json.loads(read(path)).get("state") == "exited" else None)
        self.assertEqual(on_disk["resources"]["cpuUsec"], final, on_disk)
        m = [l for l in a.get("/v1/metrics").body.decode().splitlines()
             if l.startswith("tend_cgroup_cpu_seconds_total ")]
        self.assertGreater(float(m[0].split()[1]), 0)

    def counter(self, a, path):
        return a.launch_ok(["sh", "-c", 'i=0; while :; do i=$((i+1)); echo $i > %s; sleep 0.01; done' % path])

    def test_freeze_and_thaw_one(self):
        a = self.agent()
        path = os.path.join(a.tmp, "count")
        p = self.counter(a, path)
        self.assertTrue(poll(lambda: os.path.exists(path) and read(path).strip()))
        r = a.post("/v1/processes/%s/freeze" % p["id"], b"")
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json["frozen"], True)
        c1 = read(path)
        time.sleep(scaled(0.3))
        self.assertEqual(read(path), c1)
        self.assertIs(a.status(p["id"]).json["frozen"], True)
        self.assertIn("tend_frozen 1", a.get("/v1/metrics").body.decode())
        r = a.post("/v1/processes/%s/thaw" % p["id"], b"")
        self.assertEqual(r.status, 200, r)
        self.assertNotIn("frozen", r.json)
        self.assertTrue(poll(lambda: read(path) != c1))
        self.assertIn("tend_frozen 0", a.get("/v1/metrics").body.decode())
        # Errors: no such process, an ended one.
        self.assertError(a.post("/v1/processes/nope/freeze", b""), 404, "not_found")
        q = a.launch_ok(["true"])
        a.wait_proc(q["id"])
        self.assertError(a.post("/v1/processes/%s/freeze" % q["id"], b""), 409, "not_running")
        # A frozen process is still killed by DELETE ?force=1.
        a.post("/v1/processes/%s/freeze" % p["id"], b"")
        r = a.delete("/v1/processes/%s?force=1" % p["id"])
        self.assertIn(r.status, (200, 204), r)

    def test_freeze_everything(self):
        a = self.agent()
        paths = [os.path.join(a.tmp, "c%d" % i) for i in range(3)]
        ids = [self.counter(a, pth)["id"] for pth in paths]
        t = a.post("/v1/terminals", {"argv": ["sleep", "30"]}).json
        self.assertTrue(poll(lambda: all(os.path.exists(x) for x in paths)))
        r = a.post("/v1/freeze", b"")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["frozen"], True)
        self.assertEqual(sorted(r.json["processes"]), sorted(ids))
        self.assertEqual(r.json["terminals"], [t["id"]])
        before = [read(x) for x in paths]
        time.sleep(scaled(0.3))
        self.assertEqual([read(x) for x in paths], before)
        # The agent itself is never frozen: it answers.
        self.assertEqual(a.health()["status"], "ok")
        self.assertIs(a.get("/v1/terminals/%s" % t["id"]).json["frozen"], True)
        r = a.post("/v1/thaw", b"")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["frozen"], False)
        # Each one's freeze and thaw is on the event stream.
        ev = a.get("/v1/events?types=process.frozen,process.thawed,terminal.frozen,"
                   "terminal.thawed", headers={"Accept": "application/json"}).json["events"]
        got = sorted((e["type"], e["id"]) for e in ev)
        want = sorted([("process.frozen", i) for i in ids] + [("process.thawed", i) for i in ids]
                      + [("terminal.frozen", t["id"]), ("terminal.thawed", t["id"])])
        self.assertEqual(got, want)
        self.assertTrue(poll(lambda: all(read(x) != b for x, b in zip(paths, before))))

    def test_timeout_waits_while_frozen(self):
        a = self.agent()
        p = a.launch_ok(["sleep", "30"], timeout=int(scaled(1.0) * 1000))
        self.assertEqual(a.post("/v1/processes/%s/freeze" % p["id"], b"").status, 200)
        time.sleep(scaled(1.5))
        self.assertEqual(a.status(p["id"]).json["state"], "running")
        self.assertEqual(a.post("/v1/processes/%s/thaw" % p["id"], b"").status, 200)
        st = a.wait_proc(p["id"])
        self.assertEqual(st["state"], "exited", st)
        self.assertTrue(st["exit"]["timedOut"], st)

    def test_limits_need_their_controller(self):
        a = self.agent()
        ctrls = a.health()["cgroups"]["controllers"]
        for field, value, ctrl in (("memory", 64 << 20, "memory"), ("memoryHigh", 64 << 20, "memory"),
                                   ("pids", 20, "pids"), ("cpu", 0.5, "cpu")):
            if ctrl in ctrls:
                continue
            for route in ("/v1/processes", "/v1/exec", "/v1/terminals"):
                r = a.post(route, {"argv": ["true"], "limits": {field: value}})
                j = self.assertError(r, 422, "limits_unavailable")
                self.assertIn(ctrl, j["error"])
        for bad in ({"memory": -1}, {"memory": 1.5}, {"pids": 0}, {"cpu": 0}, {"cpu": "1"},
                    {"disk": 1}, [1]):
            self.assertError(a.launch(["true"], limits=bad), 400, "invalid_request")
        # Nothing was started by the refusals.
        self.assertEqual(a.health()["processes"]["total"], 0)

    def test_stale_subtree_of_a_killed_agent_is_swept(self):
        a = self.agent()
        root = a.health()["cgroups"]["root"]
        a.kill()
        self.assertTrue(os.path.isdir(root))
        # Younger than the sweep's age, it may be an agent's moving in.
        time.sleep(2.5)
        b = self.agent()
        self.assertTrue(poll(lambda: not os.path.exists(root)), root)
        self.assertEqual(b.health()["cgroups"]["mode"], "v2")

    def test_terminal_terminate_reaches_the_cgroup(self):
        a = self.agent()
        mark = "1002.%d" % os.getpid()
        t = a.post("/v1/terminals", {"argv": ["sh", "-c", 'setsid sh -c "trap \\"\\" HUP; sleep %s" & sleep %s' % (mark, mark)]}).json
        self.assertTrue(poll(lambda: len(marked(mark)) >= 2))
        r = a.delete("/v1/terminals/%s" % t["id"])
        self.assertIn(r.status, (200, 204), r)
        self.assertTrue(poll(lambda: not marked(mark), timeout=10), marked(mark))


class TestWithoutCgroups(AgentTestCase):

    def check_none(self, a, reason_part):
        cg = a.health()["cgroups"]
        self.assertEqual(cg["mode"], "none", cg)
        self.assertIsNone(cg["root"])
        self.assertEqual(cg["controllers"], [])
        self.assertIn(reason_part, cg["reason"])
        # As without cgroups: processes run, group kill works.
        p = a.launch_ok(["sh", "-c", "echo hi"])
        st = a.wait_proc(p["id"])
        self.assertEqual(st["exit"]["code"], 0)
        self.assertNotIn("cgroup", st)
        self.assertNotIn("resources", st)
        self.assertError(a.launch(["true"], limits={"pids": 10}), 422, "limits_unavailable")
        self.assertError(a.post("/v1/freeze", b""), 422, "cgroups_unavailable")
        self.assertError(a.post("/v1/processes/%s/freeze" % p["id"], b""), 422, "cgroups_unavailable")
        self.assertIn("tend_cgroups 0", a.get("/v1/metrics").body.decode())

    def test_default_limits_are_never_dropped(self):
        # A default limit the records cannot get stops the agent at start
        # (exit 2, the controller named), as a bad flag does.
        a = Agent(extra=["--no-cgroups", "--default-limits", "memory=64M,cpu=0.5"], start=False)
        self.addCleanup(a.close)
        a.start()
        self.assertEqual(a.wait_exit(10), 2)
        self.assertRegex(a.log_text(), r"default_limits_unavailable controller=(memory|cpu)")
        for bad in ("memory", "memory=", "memory=12X", "disk=1G", "cpu=0", "pids=-1"):
            b = Agent(extra=["--default-limits", bad], start=False)
            self.addCleanup(b.close)
            b.start()
            self.assertEqual(b.wait_exit(10), 2, bad)
            self.assertIn("--default-limits", b.log_text())

    def test_no_cgroups_flag(self):
        self.check_none(self.agent(extra=["--no-cgroups"]), "--no-cgroups")

    def test_root_not_cgroup2(self):
        a = Agent(extra=["--cgroup-root", "/tmp"], start=False)
        self.addCleanup(a.close)
        a.start()
        a.wait_healthy()
        self.check_none(a, "not in a cgroup2 filesystem")

    @unittest.skipUnless(WRITABLE, "no writable cgroup2 hierarchy on this host")
    def test_read_only_hierarchy(self):
        # In the agent's own mount namespace only: a read-only bind of the
        # cgroup2 mount over itself, as Docker gives one by default.
        class RO(Agent):
            def argv(self):
                inner = super().argv()
                i = inner.index(TEND_BIN)
                sh = "mount --bind %s %s && mount -o remount,bind,ro %s && exec \"$@\"" % (MOUNT, MOUNT, MOUNT)
                return inner[:i] + ["sh", "-c", sh, "sh"] + inner[i:]
        a = RO(start=False)
        self.addCleanup(a.close)
        a.start()
        a.wait_healthy()
        self.check_none(a, "read-only")
        # The host's hierarchy is untouched.
        self.assertTrue(os.access(MOUNT, os.W_OK))


if __name__ == "__main__":
    unittest.main()
