"""A full, read-only or tampered state dir (issue 8: items 8, 9, 10, 13,
and the DELETE and removed-procs extras).

The full and read-only disks are real: a small tmpfs mounted for the test
(root only; without the right to mount, the test is skipped, never passed)
holds the agent's state dir, a file written with dd fills it, removing the
file frees it, and `mount -o remount,ro` makes it read-only.  The agent's
own mount namespace shares the file system, so it sees each change.
"""
import http.client
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import AgentTestCase, UnixHTTPConnection, poll, read_file, scaled


def load_json(path):
    """The file as JSON, or None (missing, empty, half-written)."""
    try:
        return json.loads(read_file(path).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


class DiskCase(AgentTestCase):
    """Agents on a tmpfs of their own."""

    def tmpfs(self, size="256k"):
        mnt = tempfile.mkdtemp(prefix="tend-bb-disk-")
        self.addCleanup(shutil.rmtree, mnt, True)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", mnt],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            self.skipTest("cannot mount a tmpfs (needs root): %s" % p.stderr.decode().strip())
        self.addCleanup(subprocess.run, ["umount", "-l", mnt], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        state = os.path.join(mnt, "state")
        os.mkdir(state)
        return mnt, state

    def fill(self, mnt):
        """Fill the file system; the filler's path, to remove to free it."""
        path = os.path.join(mnt, "filler")
        subprocess.run(["dd", "if=/dev/zero", "of=" + path, "bs=4k"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with self.assertRaises(OSError, msg="the tmpfs is not full"):
            with open(os.path.join(mnt, "probe"), "wb") as f:
                f.write(b"x" * 8192)
                f.flush()
                os.fsync(f.fileno())
        os.unlink(os.path.join(mnt, "probe"))
        return path

    def remount(self, mnt, mode, agent=None):
        """Remount the tmpfs; with agent, in the agent's mount namespace
        too (its copy of a mount that was read-only when it started keeps
        that flag of its own)."""
        cmd = ["mount", "-o", "remount,%s" % mode, mnt]
        if agent is not None:
            cmd = ["nsenter", "--mount=/proc/%d/ns/mnt" % agent.host_pid()] + cmd
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 0, p.stderr)
        if mode == "ro":
            self.addCleanup(subprocess.run, ["mount", "-o", "remount,rw", mnt],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def state_of(self, a):
        return a.health().get("state")

    def metrics(self, a):
        r = a.get("/v1/metrics")
        self.assertEqual(r.status, 200, r)
        return r.body.decode()


# ---------------------------------------------------------------- item 8

class TestStatusOnFullDisk(DiskCase):

    def test_final_status_written_when_space_returns(self):
        mnt, state = self.tmpfs()
        a = self.agent(state_dir=state)
        boot = a.health()["bootId"]
        filler = self.fill(mnt)
        a.launch_ok(["true"], id="full")
        st = a.wait_ended("full")
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertIs(st.get("statusWriteFailed"), True, st)
        path = os.path.join(a.proc_dir(boot, "full"), "status.json")
        meta = os.path.join(a.proc_dir(boot, "full"), "meta.json")
        # Never a half-written file: absent, or whole.
        for f in (path, meta):
            if os.path.lexists(f):
                self.assertIsNotNone(load_json(f), "%s is not whole: %r" % (f, read_file(f)))
        h = a.health()
        self.assertEqual((h["status"], h["state"]), ("ok", "degraded"), h)
        self.assertEqual(h["degraded"]["reason"], "state_dir_unwritable", h)
        self.assertGreaterEqual(h["degraded"]["pendingWrites"], 1, h)

        os.unlink(filler)
        self.assertTrue(poll(lambda: (load_json(path) or {}).get("state") == "exited", 5),
                        "status.json not rewritten once space returned: %r" % load_json(path))
        self.assertEqual(load_json(path)["exit"]["code"], 0)
        self.assertNotIn("statusWriteFailed", load_json(path))
        self.assertEqual(load_json(meta)["argv"], ["true"])
        self.assertNotIn("statusWriteFailed", a.status("full").json)
        self.assertTrue(poll(lambda: self.state_of(a) == "ok", 5), a.health())

        # A clean stop and a new boot: the record exited 0, it is not lost.
        self.assertEqual(a.stop(), 0)
        b = self.agent(state_dir=state)
        r = b.status("full", headers={"Tend-Boot": boot})
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["state"], r.json["exit"]["code"]), ("exited", 0), r.json)

    def test_final_status_takes_the_room_kept_on_a_full_disk(self):
        # The running status was written with room kept past it: the
        # final one takes that room when the disk fills meanwhile, so the
        # exit code survives a clean stop made while the disk is still
        # full (issue 25 item 10: it read "lost" after the restart).
        mnt, state = self.tmpfs()
        a = self.agent(state_dir=state)
        boot = a.health()["bootId"]
        a.launch_ok(["sh", "-c", "sleep 0.5; exit 0"], id="slow")
        path = os.path.join(a.proc_dir(boot, "slow"), "status.json")
        self.assertTrue(poll(lambda: load_json(path) is not None, 3), "no first status")
        filler = self.fill(mnt)
        st = a.wait_ended("slow")
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertTrue(poll(lambda: (load_json(path) or {}).get("state") == "exited", 3),
                        "final status not written on the full disk: %r" % read_file(path))
        self.assertNotIn("statusWriteFailed", a.status("slow").json)
        self.assertEqual(os.listdir(a.proc_dir(boot, "slow")).count("status.json.tmp"), 0)
        self.assertEqual(a.stop(), 0)
        os.unlink(filler)
        b = self.agent(state_dir=state)
        r = b.status("slow", headers={"Tend-Boot": boot})
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["state"], r.json["exit"]["code"]), ("exited", 0), r.json)

    def test_clean_stop_right_after_space_returns(self):
        mnt, state = self.tmpfs()
        a = self.agent(state_dir=state)
        boot = a.health()["bootId"]
        filler = self.fill(mnt)
        a.launch_ok(["sh", "-c", "exit 3"], id="three")
        self.assertEqual(a.wait_ended("three")["exit"]["code"], 3)
        os.unlink(filler)
        self.assertEqual(a.stop(), 0)   # the retry at shutdown, if the timer did not run
        b = self.agent(state_dir=state)
        r = b.status("three", headers={"Tend-Boot": boot})
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["state"], r.json["exit"]["code"]), ("exited", 3), r.json)


# ---------------------------------------------------------------- item 9

class TestStartDegraded(DiskCase):

    def test_starts_on_full_state_dir_and_recovers(self):
        mnt, state = self.tmpfs()
        filler = self.fill(mnt)
        a = self.agent(state_dir=state)
        h = a.health()
        self.assertEqual((h["status"], h["state"]), ("ok", "degraded"), h)
        self.assertEqual(h["degraded"]["reason"], "state_dir_unwritable", h)
        self.assertIn("No space left", h["degraded"]["error"], h)
        self.assertIs(h["degraded"]["bootDir"], False, h)
        self.assertEqual(metric(self.metrics(a), "tend_state_degraded"), 1)

        # Launches work; their output is dropped, and counted.
        a.launch_ok(["sh", "-c", "echo hello; echo err >&2"], id="mem")
        st = a.wait_ended("mem")
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertEqual((st["stdoutBytes"], st["stderrBytes"], st["droppedBytes"]), (0, 0, 10), st)
        self.assertIs(st.get("statusWriteFailed"), True, st)
        self.assertGreaterEqual(metric(self.metrics(a), "tend_bytes_dropped_total"), 10)
        r = a.get("/v1/processes/mem/logs", headers={"Accept": "application/json"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["stdout"], r.json["ended"]), ("", True), r.json)

        os.unlink(filler)
        self.assertTrue(poll(lambda: self.state_of(a) == "ok", 5), a.health())
        self.assertEqual(metric(self.metrics(a), "tend_state_degraded"), 0)
        boot = a.health()["bootId"]
        self.assertEqual(load_json(os.path.join(a.boot_dir(boot), "boot.json"))["boot_id"], boot)
        # Later launches are stored again.
        a.launch_ok(["echo", "stored"], id="disk")
        st = a.wait_ended("disk")
        self.assertEqual((st["stdoutBytes"], st["droppedBytes"]), (7, 0), st)
        self.assertEqual(read_file(os.path.join(a.proc_dir(boot, "disk"), "stdout")), b"stored\n")
        # The one launched in memory has its meta and final status on disk now.
        mem = load_json(os.path.join(a.proc_dir(boot, "mem"), "status.json"))
        self.assertEqual((mem["exit"]["code"], mem["droppedBytes"]), (0, 10), mem)
        self.assertNotIn("statusWriteFailed", a.status("mem").json)

    def test_starts_on_read_only_state_dir(self):
        mnt, state = self.tmpfs()
        self.remount(mnt, "ro")
        a = self.agent(state_dir=state)
        h = a.health()
        self.assertEqual(h["state"], "degraded", h)
        self.assertIn("Read-only", h["degraded"]["error"], h)
        a.launch_ok(["echo", "x"], id="ro")
        self.assertEqual(a.wait_ended("ro")["droppedBytes"], 2)
        self.remount(mnt, "rw", agent=a)
        self.assertTrue(poll(lambda: self.state_of(a) == "ok", 5), a.health())
        self.assertEqual(a.launch_ok(["true"], id="rw")["state"], "running")


# ---------------------------------------------------------------- item 10

def post_sse(agent, path, body, timeout=10.0):
    """POST with Accept: text/event-stream; the events' JSON, until close."""
    c = UnixHTTPConnection(agent.sock, timeout=scaled(timeout))
    try:
        c.request("POST", path, body=json.dumps(body).encode(),
                  headers={"Accept": "text/event-stream", "Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            raise AssertionError("%s: %r" % (r.status, r.read()))
        events = []
        for line in r.read().decode().splitlines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
        return events
    finally:
        c.close()


class TestExecDropped(DiskCase):

    def test_exec_reply_and_stream_report_dropped_bytes(self):
        mnt, state = self.tmpfs()
        a = self.agent(state_dir=state)
        self.fill(mnt)
        r = a.post("/v1/exec", {"argv": ["printf", "12345678"]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["stdout"], "", r.json)
        self.assertEqual(r.json.get("droppedBytes"), 8, r.json)
        self.assertIs(r.json["truncated"], True, r.json)

        ev = post_sse(a, "/v1/exec", {"argv": ["printf", "12345678"]})
        types = [e["type"] for e in ev]
        self.assertIn("truncated", types, ev)
        self.assertEqual(types[-1], "terminal", ev)
        t = [e for e in ev if e["type"] == "truncated"]
        self.assertEqual(sum(e["droppedBytes"] for e in t), 8, ev)
        self.assertLess(types.index("truncated"), types.index("terminal"), ev)

    def test_exec_without_drops_is_not_truncated(self):
        a = self.agent()
        r = a.post("/v1/exec", {"argv": ["printf", "12345678"]})
        self.assertEqual((r.json["droppedBytes"], r.json["truncated"]), (0, False), r.json)
        ev = post_sse(a, "/v1/exec", {"argv": ["printf", "12345678"]})
        self.assertNotIn("truncated", [e["type"] for e in ev], ev)


# ---------------------------------------------------------------- item 13

class TestLinksRefused(AgentTestCase):
    """Links planted in the state dir are never followed."""

    def setUp(self):
        super().setUp()
        self.outside = tempfile.mkdtemp(prefix="tend-bb-outside-")
        self.addCleanup(shutil.rmtree, self.outside, True)

    def old_boot(self):
        """A stopped agent's state dir and boot, with one ended record."""
        a = self.agent()
        boot = a.health()["bootId"]
        a.launch_ok(["echo", "mine"], id="real")
        a.wait_ended("real")
        self.assertEqual(a.stop(), 0)
        return a, boot

    def test_lost_marking_writes_through_no_link(self):
        a, boot = self.old_boot()
        procs = os.path.join(a.boot_dir(boot), "procs")
        victim = os.path.join(self.outside, "victim")
        with open(victim, "w") as f:
            f.write("precious")
        # A record dir that is a link, and a running record whose temp is one.
        os.symlink(self.outside, os.path.join(procs, "evil"))
        os.mkdir(os.path.join(procs, "fake"))
        with open(os.path.join(procs, "fake", "status.json"), "w") as f:
            json.dump({"id": "fake", "state": "running", "bootId": boot}, f)
        os.symlink(victim, os.path.join(procs, "fake", "status.json.tmp"))
        # A boot whose procs directory is a link to a running record's home.
        other = "ab" * 16
        os.makedirs(os.path.join(a.state, "boots", other))
        with open(os.path.join(a.state, "boots", other, "boot.json"), "w") as f:
            json.dump({"boot_id": other, "started_at": "2999-01-01T00:00:00.000Z"}, f)
        home = os.path.join(self.outside, "home")
        os.makedirs(os.path.join(home, "x"))
        with open(os.path.join(home, "x", "status.json"), "w") as f:
            f.write('{"id":"x","state":"running"}')
        os.symlink(home, os.path.join(a.state, "boots", other, "procs"))

        b = self.agent(state_dir=a.state)
        self.assertTrue(b.running())
        self.assertFalse(os.path.lexists(os.path.join(self.outside, "status.json")),
                         "a status was written through a linked record dir")
        self.assertEqual(read_file(victim), b"precious")
        self.assertEqual(read_file(os.path.join(home, "x", "status.json")),
                         b'{"id":"x","state":"running"}')
        self.assertTrue(os.path.islink(os.path.join(procs, "evil")))
        fake = load_json(os.path.join(procs, "fake", "status.json"))
        self.assertEqual((fake["state"], fake["error"]["code"]), ("error", "lost"), fake)

    def test_pinned_reads_refuse_links(self):
        a, boot = self.old_boot()
        procs = os.path.join(a.boot_dir(boot), "procs")
        with open(os.path.join(self.outside, "status.json"), "w") as f:
            json.dump({"id": "evil", "state": "exited", "bootId": boot}, f)
        with open(os.path.join(self.outside, "stdout"), "w") as f:
            f.write("SECRET")
        os.symlink(self.outside, os.path.join(procs, "evil"))
        # A real record whose stdout is a link out.
        os.unlink(os.path.join(procs, "real", "stdout"))
        os.symlink(os.path.join(self.outside, "stdout"), os.path.join(procs, "real", "stdout"))

        b = self.agent(state_dir=a.state)
        pin = {"Tend-Boot": boot}
        ids = [s["id"] for s in b.get("/v1/processes", headers=pin).json]
        self.assertIn("real", ids)
        self.assertNotIn("evil", ids)
        self.assertError(b.status("evil", headers=pin), 404, "not_found")
        for path in ("/v1/processes/evil/stdout", "/v1/processes/real/stdout"):
            r = b.get(path, headers=pin)
            self.assertNotIn(b"SECRET", r.body, (path, r))
        r = b.get("/v1/processes/evil/logs", headers=dict(pin, Accept="application/json"))
        self.assertError(r, 404, "not_found")

    def test_launch_refuses_planted_record_link(self):
        a = self.agent()
        boot = a.health()["bootId"]
        os.symlink(self.outside, os.path.join(a.boot_dir(boot), "procs", "evil"))
        r = a.launch(["echo", "leak"], id="evil")
        self.assertError(r, 500, "internal")
        self.assertEqual(os.listdir(self.outside), [])
        self.assertTrue(a.running())


# ---------------------------------------------------------------- extras

class TestDeleteAndProcsDir(DiskCase):

    def test_delete_refused_by_the_disk_is_500_and_keeps_record(self):
        # The disk refuses the removal: an immutable record directory
        # (tmpfs takes chattr +i).  Not a remount read-only, which the
        # kernel refuses (EBUSY) while the boot's event log is open for
        # appending, as it would for a running process's output.
        mnt, state = self.tmpfs()
        a = self.agent(state_dir=state)
        boot = a.health()["bootId"]
        a.launch_ok(["echo", "x"], id="keep")
        a.wait_ended("keep")
        d = a.proc_dir(boot, "keep")
        before = sorted(os.listdir(d))
        subprocess.run(["chattr", "+i", d], check=True)
        self.addCleanup(subprocess.run, ["chattr", "-i", d], stderr=subprocess.DEVNULL)
        self.assertError(a.delete("/v1/processes/keep"), 500, "internal")
        self.assertEqual(a.status("keep").status, 200)
        self.assertEqual(sorted(os.listdir(d)), before)
        subprocess.run(["chattr", "-i", d], check=True)
        r = a.delete("/v1/processes/keep")
        self.assertEqual(r.status, 204, r)
        self.assertFalse(os.path.exists(a.proc_dir(boot, "keep")))

    def test_launch_after_procs_dir_removed(self):
        a = self.agent()
        boot = a.health()["bootId"]
        a.launch_ok(["true"], id="before")
        a.wait_ended("before")
        shutil.rmtree(os.path.join(a.boot_dir(boot), "procs"))
        a.launch_ok(["echo", "again"], id="after")
        st = a.wait_ended("after")
        self.assertEqual((st["stdoutBytes"], st["droppedBytes"]), (6, 0), st)
        self.assertEqual(read_file(os.path.join(a.proc_dir(boot, "after"), "stdout")), b"again\n")


if __name__ == "__main__":
    unittest.main()
