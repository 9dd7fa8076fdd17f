"""The image under a real engine: Debian's docker.io.  The image is built
FROM scratch out of image/mkrootfs; the agent is the container's PID 1 and
the CLI is what `docker exec` runs.  When no daemon answers, the test
starts dockerd itself (and stops it afterwards); without one it skips."""
import base64
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



class TestExecRecipe(unittest.TestCase):
    """The background-process recipe of exec-driven platforms, one `docker
    exec` per step, then a restart from what the disk holds.  The image has
    no shell: the host's dash (it needs only libc, which the image has) is
    bind-mounted as /bin/sh for the test's processes."""

    def setUp(self):
        if state["why"]:
            self.skipTest(state["why"])
        if not os.path.exists("/bin/dash"):
            self.skipTest("no /bin/dash to mount as the image's /bin/sh")
        self.name = "tend-bb-%d-recipe" % os.getpid()
        self.volume = "tend-bb-%d-state" % os.getpid()
        docker("volume", "create", self.volume)
        self.addCleanup(docker, "volume", "rm", "-f", self.volume, check=False)
        docker("run", "-d", "--name", self.name, "-v", "%s:/var/lib/tend" % self.volume,
               "-v", "/bin/dash:/bin/sh:ro", IMAGE)
        self.addCleanup(docker, "rm", "-f", self.name, check=False)

    def tend(self, *args, env=None, expect=0):
        """One exec of tend; the agent may still be starting (exit 3)."""
        flags = []
        for k, v in (env or {}).items():
            flags += ["-e", "%s=%s" % (k, v)]
        end = time.monotonic() + 20
        while True:
            r = docker("exec", *flags, self.name, "tend", *args, check=False)
            if r.returncode != 3 or time.monotonic() > end:
                break
            time.sleep(0.1)
        if expect is not None:
            self.assertEqual(r.returncode, expect, "tend %s: %s" % (" ".join(args), r.stderr))
        return r

    def poll_logs(self, pid_id, want, boot=()):
        """Reassemble stdout from `logs --json --since` polls until it holds want."""
        got, cursor = b"", None
        end = time.monotonic() + 30
        while len(got) < len(want) and time.monotonic() < end:
            args = ["logs", "--json", *boot] + (["--since", cursor] if cursor else [])
            j = json.loads(self.tend(*args, pid_id).stdout)
            got += base64.b64decode(j["stdout"])
            cursor = j["cursor"]
        return got

    def test_recipe_end_to_end_then_restart(self):
        secret = "s3cret-%d-%d" % (os.getpid(), time.time_ns())
        script = ('echo "token has ${#TOKEN} chars"; i=0; '
                  'while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done; read x')
        want = ("token has %d chars\n" % len(secret)
                + "".join("line %d\n" % i for i in range(3000))).encode()

        # Claim and start: one exec, the secret only in that exec's environment.
        r = self.tend("start", "--id", "job", "--timeout", "600", "-e", "TOKEN", "--stdin",
                      "--json", "--", "/bin/sh", "-c", script, env={"TOKEN": secret})
        st = json.loads(r.stdout)
        self.assertEqual((st["id"], st["state"]), ("job", "running"))
        # The second claim loses: exit 5, the agent's id_taken on stderr.
        r = self.tend("start", "--id", "job", "--json", "--", "/bin/sh", "-c", "true", expect=5)
        self.assertEqual(json.loads(r.stderr)["code"], "id_taken")

        st = json.loads(self.tend("status", "--json", "job").stdout)
        self.assertEqual(st["state"], "running")
        self.assertEqual(self.poll_logs("job", want), want)

        # A bounded wait while it runs: 124, still running.
        r = self.tend("wait", "--json", "--timeout", "0.3", "job", expect=124)
        self.assertEqual(json.loads(r.stdout)["state"], "running")
        self.assertEqual(self.tend("kill", "job").stdout, "")
        self.tend("wait", "job", expect=143)
        st = json.loads(self.tend("wait", "--json", "job").stdout)
        self.assertEqual((st["exit"]["code"], st["exit"]["signal"]), (143, 15))

        # The secret is on no command line and in no file of the state dir.
        self.assertNotIn(secret, docker("inspect", self.name).stdout)
        mount = docker("volume", "inspect", "-f", "{{.Mountpoint}}", self.volume).stdout.strip()
        for root, _, files in os.walk(mount):
            for f in files:
                with open(os.path.join(root, f), "rb") as fh:
                    self.assertNotIn(secret.encode(), fh.read(), os.path.join(root, f))
        self.tend("rm", "job")
        self.tend("status", "job", expect=4)

        # A process left running, then a restart that kills everything at
        # once (what a restore from a disk snapshot looks like).
        self.tend("start", "--id", "left", "--stdin", "-e", "TOKEN", "--ready-log",
                  "^line 2999$", "--", "/bin/sh", "-c", script, env={"TOKEN": secret})
        old = json.loads(self.tend("health", "--json").stdout)["bootId"]
        # `docker restart -s KILL`, spelled for Debian's older docker.io:
        # a TERM would let the agent end its processes and write final
        # statuses, and nothing would be lost.
        docker("kill", "-s", "KILL", self.name)
        docker("wait", self.name, timeout=60)
        docker("start", self.name, timeout=120)
        new = json.loads(self.tend("health", "--json").stdout)["bootId"]
        self.assertNotEqual(new, old)
        self.tend("status", "left", expect=4)      # not in this boot
        boot = ("--boot", old)
        arr = json.loads(self.tend("ps", "-a", "--json", *boot).stdout)
        st = {p["id"]: p for p in arr}["left"]
        self.assertEqual((st["state"], st["error"]["code"]), ("error", "lost"))
        st = json.loads(self.tend("status", "--json", *boot, "left").stdout)
        self.assertEqual(st["state"], "error")
        self.assertEqual(self.poll_logs("left", want, boot), want)
        j = json.loads(self.tend("logs", "--json", *boot, "left").stdout)
        self.assertTrue(j["ended"], j)


if __name__ == "__main__":
    unittest.main()
