"""Hardening (issue 25, items 1-4): no single file operation holds the
agent's loop.  A recursive delete of a deep chain of directories, a
mkdir -p near PATH_MAX, a multipart upload of many small files and a
listing of "/" that ends in resource_exhausted each leave GET /v1/health
answering while they run.

Bounds: the issue's target is a health p99 of 50 ms.  This is asserted
as the p99 of the probes taken during the operation, with a margin for a
loaded machine (LOOP_P99), and the slowest probe (LOOP_WORST) is bounded
too, since one stall of a second is a single slow probe among many fast
ones.  The sizes are the issue's (a 12,000-deep chain, 2,000 levels,
1,000 parts) so that the loop held by the old code is well above both.
TEND_SLOW=1 (sanitizer builds) stretches the bounds.
"""
import gzip
import json
import os
import subprocess
import tempfile
import threading
import time
import urllib.parse

from harness import SLOW, AgentTestCase, HealthProbe, scaled

FS = "/filesystem.Filesystem/"
LOOP_P99 = 0.15         # the 50 ms, with a margin for a loaded box
LOOP_WORST = 0.3        # the slowest probe (the old code: a second and more)

# KiB the agent may grow by while a delete child walks a deep chain.
AGENT_GREW_MAX = (32 if SLOW else 8) * 1024


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class ChildWatch:
    """While open, the agent's children polled as fast as it goes: the
    highest VmHWM (KiB) and the most fds any of them was seen with, and
    how many polls saw one (none: the child came and went unseen)."""

    def __init__(self, pid):
        self.pid, self.hwm, self.fds, self.seen = pid, 0, 0, 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()

    def kids(self):
        out = []
        for e in os.listdir("/proc"):
            if not e.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % e) as f:
                    st = f.read()
            except OSError:
                continue
            if int(st[st.rindex(")") + 2:].split()[1]) == self.pid:
                out.append(int(e))
        return out

    def run(self):
        while not self.stop.is_set():
            kids = self.kids()
            while kids and not self.stop.is_set():
                alive = []
                for k in kids:
                    try:
                        hwm = vm_hwm_kib(k)
                        fds = len(os.listdir("/proc/%d/fd" % k))
                    except OSError:
                        continue
                    alive.append(k)
                    self.seen += 1
                    self.hwm, self.fds = max(self.hwm, hwm), max(self.fds, fds)
                kids = alive


def make_chain(top, depth, name="d"):
    """depth directories nested in top, through fds (past PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)


def rm_rf(path):
    subprocess.run(["rm", "-rf", path], check=False)


class LoopCase(AgentTestCase):
    root_dir = None     # None: a temp dir of the test's own
    on_disk = False     # the temp dir on the disk, not a tmpfs

    def setUp(self):
        super().setUp()
        # tmpfs where there is one: the disk's own latency (rm -rf of the
        # chain can take seconds there) is not what these tests measure.
        where = "/dev/shm" if os.path.isdir("/dev/shm") and not self.on_disk else "/var/tmp"
        self.top = tempfile.mkdtemp(prefix="tend-loop-", dir=where)
        self.addCleanup(rm_rf, self.top)
        self.root = os.path.join(self.top, "root")
        os.makedirs(self.root)
        self.a = self.agent(extra=["--files-root", self.root_dir or self.root])
        self.a.get("/v1/health")

    def p(self, *parts):
        return os.path.join(self.root, *parts)

    def url(self, path):
        return "/v1/file" + urllib.parse.quote(path)

    def rpc(self, name, msg, timeout=60):
        return self.a.request("POST", FS + name, body=json.dumps(msg).encode(),
                              headers={"Content-Type": "application/json"},
                              timeout=timeout)

    def during(self, op):
        """op() run while probing: its result, the probe, the agent's VmHWM
        growth (KiB)."""
        pid = self.a.host_pid()
        hwm0 = vm_hwm_kib(pid)
        with HealthProbe(self.a, interval=0.002, timeout=30, settle=0.05) as pr:
            t = time.monotonic()
            res = op()
            took = time.monotonic() - t
        hwm1 = vm_hwm_kib(pid)
        print("\n  %s: took %.3f s, health p99 %.1f ms, worst %.1f ms, %d probes, "
              "VmHWM %d -> %d KiB" % (self.id().rsplit(".", 1)[-1], took, pr.p99() * 1e3,
                                      pr.worst * 1e3, len(pr.lat), hwm0, hwm1))
        return res, pr, hwm1 - hwm0

    def assertLoopFree(self, pr):
        self.assertEqual(pr.errors, [])
        self.assertGreater(len(pr.lat), 0)
        self.assertLessEqual(pr.p99(), scaled(LOOP_P99), sorted(pr.lat)[-10:])
        self.assertLessEqual(pr.worst, scaled(LOOP_WORST), sorted(pr.lat)[-10:])


class TestRecursiveDelete(LoopCase):
    """Item 1: a recursive delete runs in a helper child."""
    DEPTH = 12000

    def test_delete_deep_chain_leaves_the_loop(self):
        make_chain(self.root, self.DEPTH)
        with ChildWatch(self.a.host_pid()) as w:
            r, pr, grew = self.during(
                lambda: self.a.delete(self.url(self.p("d")) + "?recursive=1", timeout=120))
        print("  the delete child: %d polls, VmHWM %d KiB, %d fds at most"
              % (w.seen, w.hwm, w.fds))
        self.assertEqual(r.status, 204, r)
        self.assertFalse(os.path.lexists(self.p("d")))
        self.assertLoopFree(pr)
        # The walk's memory is not the agent's (a sanitizer's allocator
        # adds its own growth to the agent's).
        self.assertLess(grew, AGENT_GREW_MAX)
        self.assertChildFlat(w)

    def test_envd_remove_deep_chain_leaves_the_loop(self):
        make_chain(self.root, self.DEPTH)
        with ChildWatch(self.a.host_pid()) as w:
            r, pr, grew = self.during(lambda: self.rpc("Remove", {"path": self.p("d")}))
        print("  the delete child: %d polls, VmHWM %d KiB, %d fds at most"
              % (w.seen, w.hwm, w.fds))
        self.assertEqual(r.status, 200, r)
        self.assertFalse(os.path.lexists(self.p("d")))
        self.assertLoopFree(pr)
        self.assertLess(grew, AGENT_GREW_MAX)
        self.assertChildFlat(w)

    def assertChildFlat(self, w):
        # The child's fds and memory do not grow with the depth either: a
        # few fds, not one a level; a few MiB, not tens (when a poll
        # caught it at all).  Under a sanitizer the child's memory is
        # mostly the sanitizer's own: there the fds are the bound.
        if w.seen:
            self.assertLess(w.fds, 64)
            if not SLOW:
                self.assertLess(w.hwm, 16 * 1024)

    def test_delete_results_unchanged(self):
        os.makedirs(self.p("t", "a", "b"))
        with open(self.p("t", "a", "f"), "w") as f:
            f.write("x")
        os.symlink(self.top, self.p("t", "a", "out"))
        r = self.a.delete(self.url(self.p("t")))
        self.assertError(r, 409)
        r = self.a.delete(self.url(self.p("t")) + "?recursive=1")
        self.assertEqual(r.status, 204, r)
        self.assertFalse(os.path.lexists(self.p("t")))
        self.assertTrue(os.path.isdir(self.root))     # the link not followed
        r = self.a.delete(self.url(self.p("t")) + "?recursive=1")
        self.assertError(r, 404)
        self.assertEqual(self.rpc("Remove", {"path": self.p("t")}).status, 200)
        # A file under ?recursive=1 is still one unlink.
        with open(self.p("f"), "w") as f:
            f.write("x")
        self.assertEqual(self.a.delete(self.url(self.p("f")) + "?recursive=1").status, 204)

    def test_client_gone_stops_the_delete(self):
        make_chain(self.root, self.DEPTH)
        s = self.a.connect(timeout=5)
        s.sendall(b"DELETE %s?recursive=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                  % self.url(self.p("d")).encode())
        time.sleep(0.05)
        s.close()
        # The helper is killed and reaped: no zombie, the agent answers.
        self.assertEqual(self.a.get("/v1/health").status, 200)
        time.sleep(0.5)
        self.assertEqual(self.a.zombies(), [])


def multipart(files, boundary="XbOuNdArYx"):
    """files: (filename, bytes) pairs; the body and its Content-Type."""
    out = []
    for name, data in files:
        out.append(b"--" + boundary.encode() + b"\r\n"
                   b"Content-Disposition: form-data; name=\"file\"; filename=\"" +
                   name.encode() + b"\"\r\nContent-Type: application/octet-stream\r\n\r\n" +
                   data + b"\r\n")
    out.append(b"--" + boundary.encode() + b"--\r\n")
    return b"".join(out), "multipart/form-data; boundary=" + boundary


class TestMkdirsNearPathMax(LoopCase):
    """Item 2: mkdir -p walks down once, from each parent's fd."""

    def deep(self, leaf=""):
        # As deep as "a/a/.../a" goes with the leaf under PATH_MAX.
        levels = (4096 - 16 - len(self.root) - len(leaf)) // 2
        self.assertGreater(levels, 1900)
        return self.p(*(["a"] * levels)), levels

    def check(self, path, levels):
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(levels):
                nfd = os.open("a", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nfd
        finally:
            os.close(fd)

    def test_post_mkdir_parents(self):
        path, levels = self.deep()
        r, pr, _ = self.during(lambda: self.a.post(self.url(path) + "?op=mkdir&parents=1"))
        self.assertEqual(r.status, 201, r)
        self.check(path, levels)
        self.assertLoopFree(pr)

    def test_envd_makedir(self):
        path, levels = self.deep()
        r, pr, _ = self.during(lambda: self.rpc("MakeDir", {"path": path}))
        self.assertEqual(r.status, 200, r)
        self.check(path, levels)
        self.assertLoopFree(pr)

    def test_put_makes_parents(self):
        path, levels = self.deep("/f")
        r, pr, _ = self.during(lambda: self.a.request("PUT", self.url(path + "/f"), body=b"x"))
        self.assertEqual(r.status, 201, r)
        self.check(path, levels)
        self.assertLoopFree(pr)

    def test_envd_upload_makes_parents(self):
        path, levels = self.deep("/f")
        body, ct = multipart([(path + "/f", b"x")])
        r, pr, _ = self.during(lambda: self.a.request("POST", "/files", body=body,
                                                      headers={"Content-Type": ct}))
        self.assertEqual(r.status, 200, r)
        self.check(path, levels)
        self.assertLoopFree(pr)

    def test_links_and_files_on_the_way(self):
        os.makedirs(self.p("real"))
        os.symlink("real", self.p("ln"))
        os.symlink(self.top, self.p("out"))
        with open(self.p("file"), "w"):
            pass
        r = self.a.post(self.url(self.p("ln", "x", "y")) + "?op=mkdir&parents=1")
        self.assertEqual(r.status, 201, r)
        self.assertTrue(os.path.isdir(self.p("real", "x", "y")))
        r = self.a.post(self.url(self.p("out", "x")) + "?op=mkdir&parents=1")
        self.assertError(r, 403)
        self.assertFalse(os.path.exists(os.path.join(self.top, "x")))
        r = self.a.post(self.url(self.p("file", "x")) + "?op=mkdir&parents=1")
        self.assertEqual(r.status // 100, 4, r)
        r = self.rpc("MakeDir", {"path": self.p("ln", "m", "n")})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(os.path.isdir(self.p("real", "m", "n")))


class TestMultipartParts(LoopCase):
    """Item 3: a multipart upload yields between parts, a budget a turn.
    On the disk: each part's file is fsynced, which is most of its cost."""
    PARTS = 1000        # MULTIPART_PARTS_MAX
    on_disk = True

    def upload_rounds(self, prefix, gz):
        """The upload, in a fresh directory, at most twice: a loop held by
        the upload is slow in every round, while one fsync kept waiting
        by other writers of a busy disk (it holds the loop, as every
        commit's fsync does) is not: a second round decides."""
        for attempt in range(2):
            d = "%s%d" % (prefix, attempt)
            os.mkdir(self.p(d))
            files = [(self.p(d, "f%04d" % i), b"%d\n" % i) for i in range(self.PARTS)]
            body, ct = multipart(files)
            headers = {"Content-Type": ct}
            if gz:
                body = gzip.compress(body)
                headers["Content-Encoding"] = "gzip"
            r, pr, _ = self.during(lambda: self.a.request("POST", "/files", body=body,
                                                          headers=headers, timeout=120))
            self.assertEqual(r.status, 200, r)
            self.assertEqual(len(r.json), self.PARTS)
            self.assertEqual(sorted(os.listdir(self.p(d))),
                             ["f%04d" % i for i in range(self.PARTS)])
            with open(self.p(d, "f0999"), "rb") as f:
                self.assertEqual(f.read(), b"999\n")
            if (pr.p99() <= scaled(LOOP_P99) and pr.worst <= scaled(LOOP_WORST)) or attempt:
                break
        self.assertLoopFree(pr)

    def test_many_small_parts(self):
        self.upload_rounds("up", False)

    def test_many_small_parts_gzip(self):
        self.upload_rounds("gz", True)


class TestListDirBudget(LoopCase):
    """Item 4: ListDir / at depth 32, the files root at /, walks in
    budgeted shares before it answers resource_exhausted."""
    root_dir = "/"

    def test_listdir_root_deep(self):
        r, pr, _ = self.during(lambda: self.rpc("ListDir", {"path": "/", "depth": 32}))
        self.assertEqual(r.status, 429, r)      # resource_exhausted
        self.assertEqual(r.json["code"], "resource_exhausted", r.json)
        self.assertLoopFree(pr)

    def test_listdir_small_tree_whole(self):
        os.makedirs(self.p("l", "a", "b"))
        with open(self.p("l", "a", "f"), "w"):
            pass
        r = self.rpc("ListDir", {"path": self.p("l"), "depth": 32})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([e["name"] for e in r.json["entries"]], ["a", "b", "f"])
