"""The launch path's files (issue 14, the exec figure): records'
directories, with the temps of their meta.json and status.json, are made
ahead by a child of the agent as boots/<boot>/.spares/<n>; a launch
renames the next one to procs/<id> and creates nothing itself.  A record
removed becomes boots/<boot>/.spare, which the next launch takes first;
while no child can make the pool, the loop makes .spare itself.  What
must hold: each record's files are its own and whole, a spare is never
taken for a record (not listed, not marked lost, removed at a clean
stop), and a launch without one (a planted name, the procs directory
gone, the pool's child failing) still works.
"""
import json
import os
import shutil
import unittest

from harness import AgentTestCase, poll, read_file


def metric(a, name):
    for line in a.get("/v1/metrics").body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no metric " + name)


def load_json(path):
    try:
        return json.loads(read_file(path).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


class SpareCase(AgentTestCase):

    def procs(self, a, boot):
        return os.path.join(a.boot_dir(boot), "procs")

    def spare_whole(self, a, boot):
        """The spare with both temps, empty; their inode numbers."""
        d = os.path.join(a.boot_dir(boot), ".spare")
        names = ("meta.json.tmp", "status.json.tmp")

        def whole():
            try:
                return sorted(os.listdir(d)) == list(names)
            except OSError:
                return False
        self.assertTrue(poll(whole, 5), "no whole spare: %r" % (
            os.listdir(d) if os.path.isdir(d) else None))
        for n in names:
            self.assertEqual(os.stat(os.path.join(d, n)).st_size, 0, n)
        return os.stat(d).st_ino, [os.stat(os.path.join(d, n)).st_ino for n in names]


    def pool(self, a, boot):
        return os.path.join(a.boot_dir(boot), ".spares")

    def pool_names(self, a, boot):
        try:
            return sorted(int(n) for n in os.listdir(self.pool(a, boot)) if n.isdigit())
        except OSError:
            return []

    def pool_full(self, a, boot):
        """The first child's 32 directories, all made."""
        self.assertTrue(poll(lambda: self.pool_names(a, boot) == list(range(32)), 5),
                        self.pool_names(a, boot))

    def pool_next(self, a, boot):
        """The pool's next directory, whole; its and its temps' inodes."""
        self.assertTrue(poll(lambda: self.pool_names(a, boot), 5), "no pool")
        d = os.path.join(self.pool(a, boot), str(self.pool_names(a, boot)[0]))
        names = ("meta.json.tmp", "status.json.tmp")
        self.assertEqual(sorted(os.listdir(d)), list(names), d)
        for n in names:
            self.assertEqual(os.stat(os.path.join(d, n)).st_size, 0, n)
        return os.stat(d).st_ino, [os.stat(os.path.join(d, n)).st_ino for n in names]


class TestSpare(SpareCase):

    def test_launch_takes_the_pools_next_directory(self):
        a = self.agent()
        boot = a.health()["bootId"]
        dino, (mino, sino) = self.pool_next(a, boot)
        r = a.post("/v1/exec", {"argv": ["echo", "one"], "id": "one"})
        self.assertEqual(r.status, 200, r)
        d = a.proc_dir(boot, "one")
        # The record is the spare renamed: no directory or temp made on
        # the request path.
        self.assertEqual(os.stat(d).st_ino, dino)
        self.assertEqual(os.stat(os.path.join(d, "meta.json")).st_ino, mino)
        self.assertTrue(poll(lambda: load_json(os.path.join(d, "status.json")) is not None, 3))
        self.assertEqual(os.stat(os.path.join(d, "status.json")).st_ino, sino)
        self.assertEqual(load_json(os.path.join(d, "meta.json"))["argv"], ["echo", "one"])
        st = load_json(os.path.join(d, "status.json"))
        self.assertEqual((st["id"], st["state"], st["exit"]["code"]), ("one", "exited", 0), st)
        self.assertEqual(read_file(os.path.join(d, "stdout")), b"one\n")
        self.assertEqual(sorted(os.listdir(d)), ["index", "meta.json", "status.json", "stdout"])
        # The next launch takes the next one.
        dino2, _ = self.pool_next(a, boot)
        self.assertNotEqual(dino2, dino)
        r = a.post("/v1/exec", {"argv": ["true"], "id": "two"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(os.stat(a.proc_dir(boot, "two")).st_ino, dino2)
        self.assertFalse(os.path.lexists(os.path.join(a.boot_dir(boot), ".spare")))

    def test_the_pool_is_refilled(self):
        """Past RECORD_POOL launches every one still takes a directory
        made ahead: a second child named on from the first's."""
        a = self.agent()
        boot = a.health()["bootId"]
        self.pool_full(a, boot)
        inos = []
        for i in range(40):
            self.assertTrue(poll(lambda: self.pool_names(a, boot), 5), i)
            d = os.path.join(self.pool(a, boot), str(self.pool_names(a, boot)[0]))
            inos.append(os.stat(d).st_ino)
            r = a.post("/v1/exec", {"argv": ["true"], "id": "x%d" % i})
            self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
            self.assertEqual(os.stat(a.proc_dir(boot, "x%d" % i)).st_ino, inos[-1], i)
        self.assertEqual(len(set(inos)), 40)
        self.assertTrue(poll(lambda: self.pool_names(a, boot) == list(range(40, 64)), 5),
                        self.pool_names(a, boot))
        self.assertEqual(os.listdir(os.path.join(self.pool(a, boot), "new")), [])
        # Its two children were the agent's own, not orphans of the namespace.
        self.assertEqual(metric(a, "tend_orphans_reaped_total"), 0)
        self.assertNotIn("event=spares_failed", a.log_text())

    def test_each_record_has_its_own_files(self):
        a = self.agent()
        boot = a.health()["bootId"]
        for i in range(20):
            r = a.post("/v1/exec", {"argv": ["echo", str(i)], "id": "e%d" % i})
            self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
        for i in range(5):
            a.launch_ok(["sleep", "0.3"], id="s%d" % i)
        for i in range(5):
            a.wait_ended("s%d" % i)
        for i in range(20):
            d = a.proc_dir(boot, "e%d" % i)
            self.assertEqual(load_json(os.path.join(d, "meta.json"))["argv"], ["echo", str(i)])
            st = load_json(os.path.join(d, "status.json"))
            self.assertEqual((st["id"], st["state"]), ("e%d" % i, "exited"), st)
            self.assertEqual(read_file(os.path.join(d, "stdout")), b"%d\n" % i)
        for i in range(5):
            d = a.proc_dir(boot, "s%d" % i)
            self.assertEqual(load_json(os.path.join(d, "status.json"))["state"], "exited")
            self.assertEqual(load_json(os.path.join(d, "meta.json"))["argv"], ["sleep", "0.3"])
            # The temps were taken by the writes: none left behind.
            self.assertEqual(sorted(os.listdir(d)), ["meta.json", "status.json"], d)
        ids = sorted(p["id"] for p in a.get("/v1/processes").json)
        self.assertEqual(ids, sorted(["e%d" % i for i in range(20)] + ["s%d" % i for i in range(5)]))

    def test_running_record_gets_its_first_status_from_the_pool(self):
        a = self.agent()
        boot = a.health()["bootId"]
        _, (_, sino) = self.pool_next(a, boot)
        a.launch_ok(["sleep", "30"], id="run")
        path = os.path.join(a.proc_dir(boot, "run"), "status.json")
        self.assertTrue(poll(lambda: load_json(path) is not None, 3), "no first status")
        self.assertEqual(load_json(path)["state"], "running")
        self.assertEqual(os.stat(path).st_ino, sino)
        r = a.post("/v1/processes/run/kill", {"signal": 9})
        self.assertEqual(r.status, 204, r)
        st = a.wait_ended("run")
        self.assertEqual(st["exit"]["code"], 137, st)
        self.assertTrue(poll(lambda: (load_json(path) or {}).get("state") == "exited", 3))


class TestRecycle(SpareCase):

    def test_pruned_record_becomes_the_next_spare(self):
        """With the bound of ended records reached, the record pruned at
        an end is the next launch's directory: nothing freed, nothing
        made."""
        a = self.agent(extra=["--keep-exited", "1"])
        boot = a.health()["bootId"]
        r = a.post("/v1/exec", {"argv": ["echo", "first"], "id": "e1"})
        self.assertEqual(r.status, 200, r)
        d1 = a.proc_dir(boot, "e1")
        self.assertTrue(poll(lambda: os.path.exists(os.path.join(d1, "status.json")), 3))
        ino = {n: os.stat(os.path.join(d1, n)).st_ino for n in ("meta.json", "status.json")}
        ino["dir"] = os.stat(d1).st_ino
        self.pool_next(a, boot)
        self.assertFalse(os.path.lexists(os.path.join(a.boot_dir(boot), ".spare")))
        r = a.post("/v1/exec", {"argv": ["true"], "id": "e2"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(poll(lambda: not os.path.exists(d1), 3), "e1 not pruned")
        dino, (mino, sino) = self.spare_whole(a, boot)
        self.assertEqual((dino, mino, sino), (ino["dir"], ino["meta.json"], ino["status.json"]))
        self.assertError(a.status("e1"), 404, "not_found")
        r = a.post("/v1/exec", {"argv": ["echo", "third"], "id": "e3"})
        self.assertEqual(r.status, 200, r)
        d3 = a.proc_dir(boot, "e3")
        self.assertEqual(os.stat(d3).st_ino, ino["dir"])
        self.assertEqual(load_json(os.path.join(d3, "meta.json"))["argv"], ["echo", "third"])
        self.assertTrue(poll(lambda: (load_json(os.path.join(d3, "status.json")) or {})
                             .get("id") == "e3", 3))
        self.assertEqual(read_file(os.path.join(d3, "stdout")), b"third\n")
        self.assertTrue(poll(lambda: os.listdir(self.procs(a, boot)) == ["e3"], 3),
                        os.listdir(self.procs(a, boot)))

    def test_deleted_record_files_are_gone(self):
        a = self.agent()
        boot = a.health()["bootId"]
        a.launch_ok(["sh", "-c", "echo out; echo err >&2"], id="gone")
        a.wait_ended("gone")
        gone = os.stat(a.proc_dir(boot, "gone")).st_ino
        self.assertEqual(a.delete("/v1/processes/gone").status, 204)
        self.assertFalse(os.path.lexists(a.proc_dir(boot, "gone")))
        r = a.post("/v1/exec", {"argv": ["true"], "id": "next"})
        self.assertEqual(r.status, 200, r)
        d = a.proc_dir(boot, "next")
        self.assertTrue(poll(lambda: os.path.exists(os.path.join(d, "status.json")), 3))
        self.assertEqual(sorted(os.listdir(d)), ["meta.json", "status.json"])
        # It was the removed record's directory, emptied.
        self.assertEqual(os.stat(d).st_ino, gone)
        self.assertFalse(os.path.lexists(os.path.join(a.boot_dir(boot), ".spare")))


class TestSpareAcrossBoots(SpareCase):

    def test_clean_stop_removes_the_spares_and_keeps_records(self):
        a = self.agent()
        boot = a.health()["bootId"]
        r = a.post("/v1/exec", {"argv": ["true"], "id": "t"})
        self.assertEqual(r.status, 200, r)
        r = a.post("/v1/exec", {"argv": ["true"], "id": "u"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(a.delete("/v1/processes/u").status, 204)
        self.spare_whole(a, boot)
        self.pool_next(a, boot)
        self.assertEqual(a.stop(), 0)
        self.assertEqual(sorted(os.listdir(self.procs(a, boot))), ["t"])
        self.assertEqual(sorted(os.listdir(a.boot_dir(boot))), ["boot.json", "events", "procs", "terms"])
        b = self.agent(state_dir=a.state)
        pin = {"Tend-Boot": boot}
        st = b.status("t", headers=pin).json
        self.assertEqual((st["state"], st["exit"]["code"]), ("exited", 0), st)

    def test_crash_leaves_a_spare_the_next_boot_ignores(self):
        a = self.agent()
        boot = a.health()["bootId"]
        self.pool_full(a, boot)
        r = a.post("/v1/exec", {"argv": ["true"], "id": "t"})
        self.assertEqual(r.status, 200, r)
        a.launch_ok(["sleep", "30"], id="run")
        names = self.pool_names(a, boot)
        self.assertEqual(names, list(range(2, 32)))
        a.kill()
        b = self.agent(state_dir=a.state)
        pin = {"Tend-Boot": boot}
        ids = sorted(p["id"] for p in b.get("/v1/processes", headers=pin).json)
        self.assertEqual(ids, ["run", "t"])
        self.assertEqual(b.status("t", headers=pin).json["state"], "exited")
        lost = b.status("run", headers=pin).json
        self.assertEqual((lost["state"], lost["error"]["code"]), ("error", "lost"), lost)
        # Not taken for a record: nothing written into them.
        self.assertEqual(self.pool_names(a, boot), names)
        for n in names:
            self.assertEqual(sorted(os.listdir(os.path.join(self.pool(a, boot), str(n)))),
                             ["meta.json.tmp", "status.json.tmp"])
        self.assertEqual(sorted(os.listdir(self.procs(a, boot))), ["run", "t"])


class TestWithoutSpare(SpareCase):

    def test_planted_name_keeps_the_pools_next_for_the_next_launch(self):
        a = self.agent()
        boot = a.health()["bootId"]
        dino, _ = self.pool_next(a, boot)
        outside = os.path.join(a.tmp, "outside")
        os.mkdir(outside)
        os.symlink(outside, a.proc_dir(boot, "evil"))
        self.assertError(a.launch(["echo", "leak"], id="evil"), 500, "internal")
        self.assertEqual(os.listdir(outside), [])
        r = a.post("/v1/exec", {"argv": ["echo", "ok"], "id": "good"})
        self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
        self.assertEqual(os.stat(a.proc_dir(boot, "good")).st_ino, dino)

    def test_procs_removed_under_the_pool(self):
        a = self.agent()
        boot = a.health()["bootId"]
        self.pool_next(a, boot)
        shutil.rmtree(self.procs(a, boot))
        r = a.post("/v1/exec", {"argv": ["echo", "again"], "id": "after"})
        self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
        d = a.proc_dir(boot, "after")
        self.assertTrue(poll(lambda: (load_json(os.path.join(d, "status.json")) or {}).get("state")
                             == "exited", 3))
        self.assertEqual(load_json(os.path.join(d, "meta.json"))["argv"], ["echo", "again"])
        self.assertEqual(read_file(os.path.join(d, "stdout")), b"again\n")
        # And the pool serves the new procs directory.
        dino, _ = self.pool_next(a, boot)
        r = a.post("/v1/exec", {"argv": ["true"], "id": "later"})
        self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
        self.assertEqual(os.stat(a.proc_dir(boot, "later")).st_ino, dino)

    def test_pool_child_failing_leaves_the_spare_to_the_loop(self):
        """.spares/new not a directory: the next child fails; the loop
        makes .spare itself, and launches take it."""
        a = self.agent()
        boot = a.health()["bootId"]
        self.pool_full(a, boot)
        new = os.path.join(self.pool(a, boot), "new")
        os.rmdir(new)
        with open(new, "w"):
            pass
        for i in range(16):     # down to RECORD_POOL_LOW: a child is due
            r = a.post("/v1/exec", {"argv": ["true"], "id": "x%d" % i})
            self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
        self.assertTrue(poll(lambda: "event=spares_failed" in a.log_text(), 5), a.log_text()[-2000:])
        dino, _ = self.spare_whole(a, boot)
        r = a.post("/v1/exec", {"argv": ["echo", "ok"], "id": "y"})
        self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
        self.assertEqual(os.stat(a.proc_dir(boot, "y")).st_ino, dino)
        self.assertEqual(read_file(os.path.join(a.proc_dir(boot, "y"), "stdout")), b"ok\n")
        self.spare_whole(a, boot)
        # What the pool still held was taken first (x0-x15 took 0-15).
        self.assertEqual(self.pool_names(a, boot), list(range(16, 32)))

    def test_boot_dir_removed_under_the_pool(self):
        """The boot's directory removed: the next child makes .spares anew
        beside the new procs directory (no child fails into the old one)."""
        a = self.agent()
        boot = a.health()["bootId"]
        self.pool_full(a, boot)
        shutil.rmtree(a.boot_dir(boot))
        for i in range(200):
            if len(self.pool_names(a, boot)) >= 16:
                break
            r = a.post("/v1/exec", {"argv": ["true"], "id": "b%d" % i})
            self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
        self.assertTrue(poll(lambda: len(self.pool_names(a, boot)) >= 16, 5),
                        self.pool_names(a, boot))
        dino, _ = self.pool_next(a, boot)
        r = a.post("/v1/exec", {"argv": ["true"], "id": "after"})
        self.assertEqual((r.status, r.json["exit"]["code"]), (200, 0), r)
        self.assertEqual(os.stat(a.proc_dir(boot, "after")).st_ino, dino)
        self.assertNotIn("event=spares_failed", a.log_text())

    def test_back_to_back_launches_without_a_gap(self):
        """Pipelined launches on one connection: the spare is not remade
        between them; every record is complete all the same."""
        a = self.agent()
        boot = a.health()["bootId"]
        body = b'{"argv":["true"]}'
        req = (b"POST /v1/exec HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        s = a.connect(timeout=10)
        try:
            s.sendall(req * 10)
            got = b""
            while got.count(b"HTTP/1.1 200 OK") < 10 or not got.endswith(b"}"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        finally:
            s.close()
        self.assertEqual(got.count(b"HTTP/1.1 200 OK"), 10, got[:500])
        ids = [p["id"] for p in a.get("/v1/processes").json]
        self.assertEqual(len(ids), 10, ids)
        for i in ids:
            d = a.proc_dir(boot, i)
            self.assertTrue(poll(lambda: (load_json(os.path.join(d, "status.json")) or {})
                                 .get("state") == "exited", 3), i)
            self.assertEqual(load_json(os.path.join(d, "meta.json"))["argv"], ["true"])
            self.assertEqual(sorted(os.listdir(d)), ["meta.json", "status.json"], d)

if __name__ == "__main__":
    unittest.main()
