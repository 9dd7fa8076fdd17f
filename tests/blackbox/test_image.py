"""The scratch image's root file system (image/mkrootfs): tend and the
libraries it loads, nothing else.  Checked by running the agent as PID 1
of a new PID namespace chrooted into it (no image engine needed)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SLOW, TEND_BIN  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class TestRootfs(unittest.TestCase):

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("chroot needs root")
        self.tmp = tempfile.mkdtemp(prefix="tend-rootfs-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.rootfs = os.path.join(self.tmp, "rootfs")
        env = dict(os.environ, TEND_BIN=TEND_BIN)
        r = subprocess.run([os.path.join(ROOT, "image", "mkrootfs"), self.rootfs],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_holds_tend_and_its_libraries_only(self):
        files = []
        for d, _, names in os.walk(self.rootfs):
            files += [os.path.relpath(os.path.join(d, n), self.rootfs) for n in names]
        self.assertIn("sbin/tend", files)
        self.assertTrue(any("ld-linux" in f for f in files), files)
        self.assertTrue(any("libcjson" in f for f in files), files)
        self.assertTrue(all(f.startswith(("sbin/", "lib", "usr/lib")) for f in files), files)

    def test_agent_runs_as_pid1_in_it(self):
        if SLOW:
            self.skipTest("a sanitizer build needs /proc, which the bare rootfs lacks")
        # Wrapper mode with the one program the image has: the agent must
        # start (state dir, socket), run the command and exit with its code.
        r = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "chroot", self.rootfs,
                            "/sbin/tend", "agent", "--", "/sbin/tend", "--version"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tend ", r.stdout + r.stderr)
        self.assertIn("event=ready", r.stderr)
        self.assertTrue(os.path.isdir(os.path.join(self.rootfs, "var", "lib", "tend", "boots")))
        r = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "chroot", self.rootfs,
                            "/sbin/tend", "agent", "--", "/no/such"], capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 127)


if __name__ == "__main__":
    unittest.main()
