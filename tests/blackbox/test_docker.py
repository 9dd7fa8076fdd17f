"""The images under a real engine: Debian's docker.io.  tend's own images
are built FROM scratch out of image/mkrootfs (the static binary alone,
and the demo with busybox-static); the drop-in recipe of the README is
built on two user images made here: one whose only binaries are
busybox-static (no libc at all), one a Debian root file system assembled
from the host's own files.  Each does

    COPY --from=<tend image> /usr/bin/tend /usr/bin/tend
    ENTRYPOINT ["/usr/bin/tend", "agent", "--"]

and is run with no command (the agent serves) and with one (wrapper
mode).  The agent is the container's PID 1; the CLI is what `docker
exec` runs.  When no daemon answers, the test starts dockerd itself (and
stops it afterwards); without one it skips.  The binary is
test_image.image_bin(): a dynamic one cannot run in these images."""
import base64
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SLOW  # noqa: E402
from test_image import image_bin, is_static  # noqa: E402
from test_upgrade import build_other  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else shutil.which("docker")
DOCKERD = shutil.which("dockerd") or ("/usr/sbin/dockerd" if os.path.exists("/usr/sbin/dockerd") else None)
TAG = "tend-blackbox-%d" % os.getpid()
IMAGE = TAG + ":latest"             # tend:latest as `make image` builds it
DEMO = TAG + ":demo"
BUSYBOX_BASE = TAG + "-busybox-base:1"
DEBIAN_BASE = TAG + "-debian-base:1"
USER_IMAGES = {"busybox": TAG + "-user-busybox:1", "debian": TAG + "-user-debian:1"}
# The Debian programs of the assembled root file system, with what ldd
# names for them.
DEBIAN_PROGS = ["/bin/dash", "/bin/sleep", "/bin/cat", "/bin/ls", "/bin/true", "/bin/id",
                "/usr/bin/env", "/bin/ps", "/bin/grep"]
# The user's Dockerfile of the README's recipe (its FROM and base vary).
RECIPE = """FROM %s
COPY --from=%s /usr/bin/tend /usr/bin/tend
ENTRYPOINT ["/usr/bin/tend", "agent", "--"]
"""
state = {"daemon": None, "why": None, "images": []}


def docker(*args, timeout=60, check=True, input=None):
    r = subprocess.run([DOCKER, *args], capture_output=True, text=input is None or
                       isinstance(input, str), timeout=timeout, input=input)
    if check and r.returncode != 0:
        raise AssertionError("docker %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def daemon_up():
    try:
        return DOCKER and subprocess.run([DOCKER, "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def start_daemon():
    log = open(os.path.join(tempfile.gettempdir(), "tend-dockerd.log"), "wb")
    state["daemon"] = subprocess.Popen([DOCKERD], stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 60
    while time.monotonic() < end and not daemon_up():
        if state["daemon"].poll() is not None:
            break
        time.sleep(0.5)
    return None if daemon_up() else "dockerd did not start (see %s)" % log.name


def build(tag, context, dockerfile, target=None):
    args = ["build", "-q", "-f", dockerfile, "-t", tag] + (["--target", target] if target else [])
    docker(*args, context, timeout=300)
    state["images"].append(tag)


def import_rootfs(tag, root):
    """A base image out of a directory (docker import of its tar)."""
    tar = root + ".tar"
    with tarfile.open(tar, "w") as t:
        for name in sorted(os.listdir(root)):
            t.add(os.path.join(root, name), arcname=name)
    with open(tar, "rb") as f:
        docker("import", "-", tag, input=f.read(), timeout=120)
    state["images"].append(tag)


def busybox_rootfs(root):
    """busybox-static and a link per applet, nothing else: no libc."""
    busybox = "/bin/busybox"
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy(busybox, os.path.join(root, "bin", "busybox"))
    out = subprocess.run([busybox, "--list-full"], capture_output=True, text=True, check=True)
    for a in out.stdout.split():
        if a == "bin/busybox":
            continue
        os.makedirs(os.path.join(root, os.path.dirname(a)), exist_ok=True)
        os.symlink("/bin/busybox", os.path.join(root, a))
    for d in ("tmp", "etc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)


def debian_rootfs(root):
    """Debian's dash (as /bin/sh), some coreutils and procps, the
    libraries and loader ldd names for them, and the host's passwd and
    group: a Debian image in miniature, merged /usr as Debian 12's."""
    for d in ("usr/bin", "usr/lib", "usr/lib64", "usr/sbin", "etc", "tmp"):
        os.makedirs(os.path.join(root, d))
    for link in ("bin", "lib", "lib64", "sbin"):
        os.symlink("usr/" + link, os.path.join(root, link))
    files = set()
    for prog in DEBIAN_PROGS:
        files.add(os.path.realpath(prog))
        out = subprocess.run(["ldd", prog], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            words = line.split()
            path = words[2] if "=>" in words and len(words) > 2 else words[0]
            if path.startswith("/"):
                files.add(path)
    for f in files:
        dest = os.path.join(root, f.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy(f, dest)
    os.symlink("dash", os.path.join(root, "usr", "bin", "sh"))
    for f in ("/etc/passwd", "/etc/group"):
        shutil.copy(f, os.path.join(root, f.lstrip("/")))


def build_images(tmp):
    env = dict(os.environ, TEND_BIN=image_bin())
    ctx = os.path.join(tmp, "image")
    subprocess.run([os.path.join(ROOT, "image", "mkrootfs"), ctx], check=True,
                   capture_output=True, env=env, timeout=60)
    dockerfile = os.path.join(ROOT, "image", "Dockerfile")
    build(IMAGE, ctx, dockerfile, "tend")
    build(DEMO, ctx, dockerfile, "demo")
    for name, base, make in (("busybox", BUSYBOX_BASE, busybox_rootfs),
                             ("debian", DEBIAN_BASE, debian_rootfs)):
        root = os.path.join(tmp, name)
        make(root)
        import_rootfs(base, root)
        user = os.path.join(tmp, name + "-user")
        os.mkdir(user)
        with open(os.path.join(user, "Dockerfile"), "w") as f:
            f.write(RECIPE % (base, IMAGE))
        build(USER_IMAGES[name], user, os.path.join(user, "Dockerfile"))


def setUpModule():
    if SLOW:
        state["why"] = "a sanitizer build needs its runtime libraries in the image"
        return
    if os.geteuid() != 0 or DOCKER is None:
        state["why"] = "needs root and docker"
        return
    if not daemon_up():
        if DOCKERD is None:
            state["why"] = "no docker daemon and no dockerd to start"
            return
        state["why"] = start_daemon()
        if state["why"]:
            return
    tmp = tempfile.mkdtemp(prefix="tend-image-")
    try:
        build_images(tmp)
    finally:
        shutil.rmtree(tmp, True)


def tearDownModule():
    if state["images"]:
        docker("rmi", "-f", *reversed(state["images"]), check=False, timeout=120)
    d = state["daemon"]
    if d is not None and d.poll() is None:
        d.terminate()
        try:
            d.wait(30)
        except subprocess.TimeoutExpired:
            d.kill()


class DockerCase(unittest.TestCase):
    IMAGE = IMAGE

    def setUp(self):
        if state["why"]:
            self.skipTest(state["why"])

    def run_box(self, image=None, *args):
        name = "tend-bb-%d-%s" % (os.getpid(), self.id().split(".", 1)[1][-40:].replace(".", "-"))
        docker("rm", "-f", name, check=False)
        docker("run", "-d", "--name", name, image or self.IMAGE, *args)
        self.addCleanup(docker, "rm", "-f", name, check=False)
        return name

    def tend(self, name, *args, check=True):
        end = time.monotonic() + 10
        while True:
            r = docker("exec", name, "tend", *args, check=False)
            # exit 3: the agent's socket is not there yet
            if r.returncode != 3 or time.monotonic() > end:
                break
            time.sleep(0.1)
        if check and r.returncode != 0:
            raise AssertionError("tend %s: %d %s" % (" ".join(args), r.returncode, r.stderr))
        return r

    def assert_graceful_stop(self, name, within=8.0):
        t0 = time.monotonic()
        docker("stop", "-t", "20", name, timeout=60)
        took = time.monotonic() - t0
        code = docker("inspect", name, "--format", "{{.State.ExitCode}}").stdout.strip()
        self.assertEqual(code, "0", docker("logs", name).stderr)
        # No wait for the engine's 20 s and its KILL.
        self.assertLess(took, within)
        logs = docker("logs", name).stderr
        self.assertIn("event=shutdown signal=15", logs)
        self.assertIn("event=exit code=0", logs)


class TestImage(DockerCase):
    """tend:latest: FROM scratch, the static binary alone."""

    def test_only_the_binary(self):
        # Everything in the image, listed by the engine without running it.
        box = docker("create", IMAGE).stdout.strip()
        self.addCleanup(docker, "rm", "-f", box, check=False)
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([DOCKER, "export", "-o", os.path.join(d, "x.tar"), box],
                               capture_output=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            with tarfile.open(os.path.join(d, "x.tar")) as t:
                regular = sorted(m.name for m in t.getmembers() if m.isfile())
        # The engine adds its mount points and .dockerenv.
        engine = (".dockerenv", "dev/", "etc/hostname", "etc/hosts", "etc/resolv.conf")
        self.assertEqual([f for f in regular if not f.startswith(engine)],
                         ["etc/group", "etc/passwd", "usr/bin/tend"])
        size = int(docker("image", "inspect", "-f", "{{.Size}}", IMAGE).stdout)
        self.assertLess(size, 2 * 1024 * 1024 + 64 * 1024)

    def test_agent_is_pid1_and_cli_works_through_exec(self):
        name = self.run_box()
        r = self.tend(name, "health", "--json")
        self.assertEqual(json.loads(r.stdout)["pid"], 1, r.stdout)
        r = self.tend(name, "run", "--", "/sbin/tend", "--version")
        self.assertTrue(r.stdout.startswith("tend "), r.stdout)
        r = self.tend(name, "ps", "-a")
        self.assertIn("/sbin/tend --version", r.stdout)
        r = self.tend(name, "run", "--", "/no/such", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("No such file or directory", r.stderr)

    def test_cgroups_fall_back_with_the_reason(self):
        # A plain `docker run` gives tend no cgroup v2 hierarchy it can
        # write: v1 cgroups on a v1 or hybrid host (this one), a read-only
        # cgroup2 mount on a v2 one.  tend runs as before and says why.
        version = docker("info", "-f", "{{.CgroupVersion}}").stdout.strip()
        name = self.run_box()
        h = json.loads(self.tend(name, "health", "--json").stdout)
        cg = h.get("cgroups")
        self.assertIsInstance(cg, dict, h)
        self.assertEqual(cg.get("mode"), "none", "engine's cgroups v%s: %s" % (version, cg))
        self.assertIsInstance(cg.get("reason"), str, cg)
        self.assertNotEqual(cg["reason"].strip(), "", cg)
        r = self.tend(name, "run", "--", "/sbin/tend", "--version")
        self.assertTrue(r.stdout.startswith("tend "), r.stdout)
        # A limit is refused, never ignored: nothing runs without it.
        r = self.tend(name, "run", "--json", "--memory", "32M", "--", "/sbin/tend", "--version",
                      check=False)
        self.assertEqual(r.returncode, 1, r)
        self.assertEqual(json.loads(r.stderr)["code"], "limits_unavailable", r.stderr)

    def test_docker_stop_is_a_graceful_shutdown(self):
        name = self.run_box()
        self.tend(name, "start", "--id", "idle", "--", "/sbin/tend", "agent", "--socket",
                  "/tmp/inner.sock", "--state-dir", "/tmp/inner")
        # The inner agent exits on TERM: no wait for the grace, no KILL.
        self.assert_graceful_stop(name)


class TestUpgrade(DockerCase):
    def test_live_upgrade_then_clean_stop(self):
        """`docker exec box tend upgrade /usr/bin/tend-new` while processes
        run: the same PID 1 and processes, the new version; `docker stop`
        is as clean afterwards."""
        name = self.run_box()
        self.tend(name, "start", "--id", "s", "--", "/sbin/tend", "agent", "--socket",
                  "/tmp/inner.sock", "--state-dir", "/tmp/inner")
        before = json.loads(self.tend(name, "status", "s").stdout)
        h0 = json.loads(self.tend(name, "health", "--json").stdout)
        with tempfile.TemporaryDirectory() as d:
            new = os.path.join(d, "tend-new")
            version = build_other(new, src=image_bin())
            docker("cp", new, name + ":/usr/bin/tend-new")
        r = self.tend(name, "upgrade", "--json", "/usr/bin/tend-new")
        h = json.loads(r.stdout)
        self.assertEqual((h["version"], h["upgrades"], h["pid"], h["bootId"]),
                         (version, 1, 1, h0["bootId"]), h)
        after = json.loads(self.tend(name, "status", "s").stdout)
        self.assertEqual((after["state"], after["pid"]), ("running", before["pid"]), after)
        # A refusal inside the container: nothing changes.
        r = self.tend(name, "upgrade", "/etc/passwd", check=False)
        self.assertEqual(r.returncode, 1, r)
        self.assert_graceful_stop(name)


class DropIn:
    """The README's recipe on a user's image: PID 1 duties, both modes."""
    BASE = None

    @property
    def IMAGE(self):
        return USER_IMAGES[self.BASE]

    def test_health_through_exec(self):
        name = self.run_box()
        r = self.tend(name, "health", "--json")
        self.assertEqual(json.loads(r.stdout)["pid"], 1, r.stdout)
        self.assertEqual(self.tend(name, "health").returncode, 0)
        # The user's programs run under it, found along the image's PATH.
        r = self.tend(name, "run", "--", "sh", "-c", "echo in $0")
        self.assertEqual(r.stdout, "in sh\n")

    def test_fifty_orphans_leave_no_zombie(self):
        name = self.run_box()
        self.tend(name, "health")
        # Each sleep's parent (the subshell) exits at once: 50 orphans go
        # to PID 1, which must reap them when they end.
        script = 'i=0; while [ $i -lt 50 ]; do (sleep 0.3 &); i=$((i+1)); done'
        docker("exec", name, "sh", "-c", script)
        end = time.monotonic() + 20
        while True:
            top = docker("top", name, "-eo", "pid,stat,comm").stdout.splitlines()[1:]
            left = [line for line in top if "sleep" in line or " Z" in line]
            if not left or time.monotonic() > end:
                break
            time.sleep(0.2)
        self.assertEqual(left, [])
        self.assertEqual(len(top), 1, top)     # the agent alone
        self.assertIn("tend", top[0])

    def test_docker_stop_is_graceful(self):
        name = self.run_box()
        self.tend(name, "start", "--id", "s", "--", "sleep", "600")
        self.assert_graceful_stop(name)

    def test_wrapper_mode_passes_the_exit_code(self):
        r = docker("run", "--rm", self.IMAGE, "sh", "-c", "exit 3", check=False, timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        r = docker("run", "--rm", self.IMAGE, "sh", "-c", "echo out; tend health >/dev/null "
                   "&& echo served", check=False, timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, "out\nserved\n"), r.stderr)


class TestDropInBusybox(DropIn, DockerCase):
    BASE = "busybox"

    def test_image_has_no_libc(self):
        # What the base holds: busybox-static and links to it, no loader.
        r = docker("run", "--rm", "--entrypoint", "/bin/busybox", self.IMAGE, "find", "/",
                   "-xdev", "-type", "f", timeout=60)
        files = sorted(f for f in r.stdout.split()
                       if not f.startswith(("/proc", "/sys", "/dev", "/.dockerenv")))
        self.assertEqual([f for f in files if not f.startswith("/etc/")],
                         ["/bin/busybox", "/usr/bin/tend"])
        self.assertTrue(is_static("/bin/busybox"))


class TestDropInDebian(DropIn, DockerCase):
    BASE = "debian"


class TestExecRecipe(DockerCase):
    """The background-process recipe of exec-driven platforms, one `docker
    exec` per step, then a restart from what the disk holds, in the demo
    image (busybox's sh runs the script)."""

    def setUp(self):
        super().setUp()
        self.volume = "tend-bb-%d-state" % os.getpid()
        docker("volume", "create", self.volume)
        self.addCleanup(docker, "volume", "rm", "-f", self.volume, check=False)
        self.name = "tend-bb-%d-recipe" % os.getpid()
        docker("rm", "-f", self.name, check=False)
        docker("run", "-d", "--name", self.name, "-v", "%s:/var/lib/tend" % self.volume, DEMO)
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
                try:
                    with open(os.path.join(root, f), "rb") as fh:
                        data = fh.read()
                except FileNotFoundError:
                    continue    # the pool's child moved it meanwhile (.spares/new)
                self.assertNotIn(secret.encode(), data, os.path.join(root, f))
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
