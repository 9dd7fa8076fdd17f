"""The static binary (make static) and the scratch image's root file
system (image/mkrootfs): tend alone, statically linked, no library, no
NSS.  Checked by reading the binary (file, nm) and by running the agent
as PID 1 of a new PID namespace chrooted into the root file system (no
image engine needed; tests/blackbox/test_docker.py runs the images).

The binary under test is image_bin(): TEND_IMAGE_BIN, else TEND_BIN when
it is static, else the tend-static built next to it, else TEND_BIN
itself (a dynamic binary, which these tests refuse)."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SLOW, TEND_BIN, children_of, poll, scaled  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STATIC_MAX = 2 * 1024 * 1024       # DESIGN §8: stripped, at most
# What the static binary may not contain: the name-service lookups
# (glibc's dlopen libnss_* of the glibc a binary was linked with; musl's
# ask nscd over a socket first) and getaddrinfo.  fgetpwent and fgetgrent
# parse the files themselves (glibc's _nss_files_parse_* and
# __nss_readline are those parsers, not NSS).
NSS = re.compile(r"^(getpw|getgr(?!oups$)|initgroups|getaddrinfo|gethostby|getservby|"
                 r"getnameinfo|__nss_(lookup|database|module|next)|__nss_hosts|nss_load)")


def is_static(path):
    """No program interpreter: ldd says "not a dynamic executable"."""
    r = subprocess.run(["ldd", path], capture_output=True, timeout=10)
    return os.access(path, os.X_OK) and r.returncode != 0


def image_bin():
    if os.environ.get("TEND_IMAGE_BIN"):
        return os.environ["TEND_IMAGE_BIN"]
    if is_static(TEND_BIN):
        return TEND_BIN
    near = os.path.join(os.path.dirname(TEND_BIN), "tend-static")
    return near if os.path.exists(near) else TEND_BIN


def mkrootfs(dest):
    """image/mkrootfs into dest: (returncode, stderr)."""
    r = subprocess.run([os.path.join(ROOT, "image", "mkrootfs"), dest], capture_output=True,
                       text=True, env=dict(os.environ, TEND_BIN=image_bin()), timeout=60)
    return r.returncode, r.stderr


class TestStaticBinary(unittest.TestCase):

    def test_statically_linked_small_and_without_nss(self):
        if SLOW:
            self.skipTest("a sanitizer build is dynamic")
        b = image_bin()
        r = subprocess.run(["file", "-L", b], capture_output=True, text=True, timeout=10)
        self.assertIn("statically linked", r.stdout)
        self.assertLessEqual(os.path.getsize(b), STATIC_MAX)
        # The symbols are in the unstripped link beside it (make static).
        full = b + ".full" if os.path.exists(b + ".full") else b
        r = subprocess.run(["nm", full], capture_output=True, text=True, timeout=30)
        if "no symbols" in r.stderr:
            self.skipTest("%s is stripped and has no .full beside it" % b)
        syms = [line.split()[-1] for line in r.stdout.splitlines() if line.strip()]
        self.assertGreater(len(syms), 1000)
        self.assertIn("user_groups", syms)
        self.assertEqual([s for s in syms if NSS.match(s)], [])

    def test_idle_rss_within_target(self):
        # DESIGN §8: idle RSS as PID 1 at most 1.5 MiB.  Nearly every page
        # of the binary is mapped once it runs, so this fails when the
        # static build grows back (glibc's static libc alone put it at
        # 1600 KiB).
        if SLOW:
            self.skipTest("a sanitizer build is dynamic")
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, "tend.sock")
            p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
                                  image_bin(), "agent", "--socket", sock, "--state-dir",
                                  os.path.join(d, "state")], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                self.assertTrue(poll(lambda: os.path.exists(sock), scaled(10)), "no socket")
                kids = children_of(p.pid)
                self.assertEqual(len(kids), 1, kids)
                r = subprocess.run([image_bin(), "-S", sock, "health"], capture_output=True,
                                   timeout=scaled(10))
                self.assertEqual(r.returncode, 0, r)
                time.sleep(0.3)
                with open("/proc/%d/status" % kids[0]) as f:
                    rss = [int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")][0]
                self.assertLessEqual(rss, 1536, "idle RSS %d KiB" % rss)
            finally:
                p.kill()
                p.wait(10)


class TestRootfs(unittest.TestCase):

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("chroot needs root")
        if SLOW:
            self.skipTest("a sanitizer build is dynamic")
        self.tmp = tempfile.mkdtemp(prefix="tend-rootfs-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        code, err = mkrootfs(self.tmp)
        self.assertEqual(code, 0, err)
        self.rootfs = os.path.join(self.tmp, "rootfs")

    def chroot(self, *argv, timeout=30):
        return subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "chroot",
                               self.rootfs, *argv], capture_output=True, text=True,
                              timeout=timeout)

    def test_holds_tend_alone(self):
        files = []
        for d, _, names in os.walk(self.rootfs):
            files += [os.path.relpath(os.path.join(d, n), self.rootfs) for n in names]
        self.assertEqual(sorted(files), ["etc/group", "etc/passwd", "sbin/init", "sbin/tend",
                                         "usr/bin/tend"])
        for link in ("sbin/tend", "sbin/init"):
            self.assertEqual(os.readlink(os.path.join(self.rootfs, link)), "../usr/bin/tend")
        # The demo's additions: busybox (static) and its applets, /bin/sh one.
        demo = os.path.join(self.tmp, "demo")
        self.assertEqual(os.readlink(os.path.join(demo, "bin", "sh")), "/bin/busybox")
        self.assertTrue(is_static(os.path.join(demo, "bin", "busybox")))
        self.assertFalse(os.path.lexists(os.path.join(demo, "sbin", "init")))

    def test_refuses_a_dynamic_binary(self):
        r = subprocess.run([os.path.join(ROOT, "image", "mkrootfs"), os.path.join(self.tmp, "d")],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, TEND_BIN="/bin/true"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("not static", r.stderr)

    def test_agent_runs_as_pid1_in_it(self):
        # Wrapper mode with the one program the image has: the agent must
        # start (state dir, socket), run the command and exit with its code.
        r = self.chroot("/usr/bin/tend", "agent", "--", "/sbin/tend", "--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tend ", r.stdout + r.stderr)
        self.assertIn("event=ready", r.stderr)
        self.assertTrue(os.path.isdir(os.path.join(self.rootfs, "var", "lib", "tend", "boots")))
        r = self.chroot("/sbin/tend", "agent", "--", "/no/such")
        self.assertEqual(r.returncode, 127)

    def test_shim_by_numeric_address_and_named_user(self):
        # The shim in a root without libc, NSS configuration or /etc/hosts:
        # a numeric --shim-listen needs no resolver, the default --shim-user
        # (nobody) comes from the image's /etc/passwd.
        os.mkdir(os.path.join(self.rootfs, "proc"))
        # A hand-written passwd: its last line (nobody's) without a
        # newline, ending in an empty field (musl's fgetpwent cut the
        # last character off such a line: no entry, no shim).
        with open(os.path.join(self.rootfs, "etc", "passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/nonexistent:")
        with open(os.path.join(self.rootfs, "token"), "w") as f:
            f.write("tok-%d\n" % os.getpid())
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        script = ('mount -t proc proc "$1/proc" && exec chroot "$1" /usr/bin/tend agent '
                  '--shim-listen 127.0.0.1:%d --shim-token-file /token' % port)
        p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount", "--kill-child", "sh",
                              "-c", script, "sh", self.rootfs], stderr=subprocess.DEVNULL)
        self.addCleanup(p.wait, 30)
        self.addCleanup(p.kill)

        def health():
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                try:
                    c.request("GET", "/v1/health",
                              headers={"Authorization": "Bearer tok-%d" % os.getpid()})
                    r = c.getresponse()
                    return r.status, r.read()
                finally:
                    c.close()
            except OSError:
                return None
        self.assertTrue(poll(lambda: health() is not None and health()[0] == 200, scaled(10.0)),
                        "no shim on port %d" % port)
        self.assertEqual(json.loads(health()[1])["pid"], 1)
        # The shim runs as nobody (65534 in the image's passwd).
        out = subprocess.run(["ps", "-eo", "uid=,args="], capture_output=True, text=True).stdout
        self.assertTrue(any(line.split()[0] == "65534" and "shim" in line and str(port) in line
                            for line in out.splitlines()), out)
        # TERM to the agent (unshare does not pass it on): a clean exit.
        os.kill(children_of(p.pid)[0], signal.SIGTERM)
        self.assertEqual(p.wait(scaled(30)), 0)


if __name__ == "__main__":
    unittest.main()
