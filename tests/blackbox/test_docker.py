"""The image under a real engine: Debian's docker.io.  The image is built
FROM scratch out of image/mkrootfs; the agent is the container's PID 1 and
the CLI is what `docker exec` runs.  When no daemon answers, the test
starts dockerd itself (and stops it afterwards); without one it skips."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SLOW, TEND_BIN  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else shutil.which("docker")
DOCKERD = shutil.which("dockerd") or ("/usr/sbin/dockerd" if os.path.exists("/usr/sbin/dockerd") else None)
IMAGE = "tend-blackbox:%d" % os.getpid()
state = {"daemon": None, "why": None}


def docker(*args, timeout=60, check=True):
    r = subprocess.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("docker %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def daemon_up():
    try:
        return DOCKER and subprocess.run([DOCKER, "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def setUpModule():
    if SLOW:
        state["why"] = "a sanitizer build needs /proc and its runtime libraries in the image"
        return
    if os.geteuid() != 0 or DOCKER is None:
        state["why"] = "needs root and docker"
        return
    if not daemon_up():
        if DOCKERD is None:
            state["why"] = "no docker daemon and no dockerd to start"
            return
        log = open(os.path.join(tempfile.gettempdir(), "tend-dockerd.log"), "wb")
        state["daemon"] = subprocess.Popen([DOCKERD], stdout=log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 60
        while time.monotonic() < end and not daemon_up():
            if state["daemon"].poll() is not None:
                break
            time.sleep(0.5)
        if not daemon_up():
            state["why"] = "dockerd did not start (see %s)" % log.name
            return
    rootfs = tempfile.mkdtemp(prefix="tend-image-")
    try:
        subprocess.run([os.path.join(ROOT, "image", "mkrootfs"), rootfs], check=True,
                       capture_output=True, env=dict(os.environ, TEND_BIN=TEND_BIN), timeout=60)
        docker("build", "-q", "-f", os.path.join(ROOT, "image", "Dockerfile"), "-t", IMAGE, rootfs,
               timeout=300)
    finally:
        shutil.rmtree(rootfs, True)


def tearDownModule():
    if state["why"] is None:
        docker("rmi", "-f", IMAGE, check=False)
    d = state["daemon"]
    if d is not None and d.poll() is None:
        d.terminate()
        try:
            d.wait(30)
        except subprocess.TimeoutExpired:
            d.kill()


class TestImage(unittest.TestCase):

    def setUp(self):
        if state["why"]:
            self.skipTest(state["why"])
        self.name = "tend-bb-%d-%s" % (os.getpid(), self._testMethodName[-20:])
        docker("run", "-d", "--name", self.name, IMAGE)
        self.addCleanup(docker, "rm", "-f", self.name, check=False)

    def tend(self, *args, check=True):
        end = time.monotonic() + 10
        while True:
            r = docker("exec", self.name, "tend", *args, check=False)
            # exit 3: the agent's socket is not there yet
            if r.returncode != 3 or time.monotonic() > end:
                break
            time.sleep(0.1)
        if check and r.returncode != 0:
            raise AssertionError("tend %s: %d %s" % (" ".join(args), r.returncode, r.stderr))
        return r

    def test_agent_is_pid1_and_cli_works_through_exec(self):
        r = self.tend("health", "--json")
        self.assertEqual(json.loads(r.stdout)["pid"], 1, r.stdout)
        r = self.tend("run", "--", "/sbin/tend", "--version")
        self.assertTrue(r.stdout.startswith("tend "), r.stdout)
        r = self.tend("ps", "-a")
        self.assertIn("/sbin/tend --version", r.stdout)
        r = self.tend("run", "--", "/no/such", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("No such file or directory", r.stderr)

    def test_docker_stop_is_a_graceful_shutdown(self):
        self.tend("start", "--id", "idle", "--", "/sbin/tend", "agent", "--socket", "/tmp/inner.sock",
                  "--state-dir", "/tmp/inner")
        t0 = time.monotonic()
        docker("stop", "-t", "20", self.name, timeout=60)
        took = time.monotonic() - t0
        code = docker("inspect", self.name, "--format", "{{.State.ExitCode}}").stdout.strip()
        self.assertEqual(code, "0")
        # The inner agent exits on TERM: no wait for the grace, no KILL.
        self.assertLess(took, 8.0)
        logs = docker("logs", self.name).stderr
        self.assertIn("event=shutdown signal=15", logs)
        self.assertIn("event=exit code=0", logs)


if __name__ == "__main__":
    unittest.main()
