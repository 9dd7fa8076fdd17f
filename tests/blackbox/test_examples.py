"""The deployment examples of image/examples/ (no cluster or Compose here):
the Kubernetes Pod and the Compose file parse as YAML and hold what the
README promises — tend as the container's command with --shim-listen and
a token file on the Secret's volume, `tend health` as the readiness or
health check, a termination grace longer than --grace, the state dir on
an emptyDir or a volume, the port published on 127.0.0.1 only — and
every option they give tend is one `tend agent --help` lists.  Then an
agent starts with exactly those options (paths and port moved into a
scratch directory) and its shim answers with the token."""
import http.client
import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import unittest

import yaml

from harness import AgentTestCase, TEND_BIN, poll, scaled

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "image", "examples")


def agent_options():
    """The long options `tend agent --help` lists, with whether each takes a value."""
    r = subprocess.run([TEND_BIN, "agent", "--help"], capture_output=True, text=True, timeout=10)
    opts = {}
    for m in re.finditer(r"^\s+(?:-\w, )?(--[a-z-]+)( [A-Z:]+)?", r.stdout, re.M):
        opts[m.group(1)] = m.group(2) is not None
    return opts


def parse_options(argv):
    """argv after `tend agent` as {option: value}; unknown or value-less
    use of a valued option fails."""
    known, out, i = agent_options(), {}, 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a not in known:
            raise AssertionError("%s: not an option of tend agent (%s)" % (a, sorted(known)))
        if known[a]:
            i += 1
            if i >= len(argv) or argv[i].startswith("--"):
                raise AssertionError("%s needs a value" % a)
            out[a] = argv[i]
        else:
            out[a] = True
        i += 1
    return out


def seconds(v):
    """A Kubernetes integer or a Compose duration ("15s", "1m30s")."""
    if isinstance(v, (int, float)):
        return float(v)
    total = 0.0
    for n, unit in re.findall(r"([\d.]+)(ms|s|m|h)", v):
        total += float(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ExampleCase(AgentTestCase):

    def tend_argv(self, command):
        self.assertTrue(command[0].endswith("/tend"), command)
        self.assertEqual(command[1], "agent", command)
        return parse_options(command[2:])

    def check_common(self, opts):
        host, _, port = opts["--shim-listen"].rpartition(":")
        # Numeric: the static tend resolves no names.
        ipaddress.ip_address(host.strip("[]"))
        self.assertTrue(0 < int(port) < 65536)
        self.assertTrue(os.path.isabs(opts["--shim-token-file"]))
        self.assertIn("--grace", opts)
        return int(port)

    def run_with(self, opts):
        """An agent with the example's options, its paths and port moved
        here: the shim must answer /v1/health with the token only."""
        tmp = tempfile.mkdtemp(prefix="tend-ex-")
        self.addCleanup(shutil.rmtree, tmp, True)
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write("tok-%d\n" % os.getpid())
        port = free_port()
        extra = []
        for k, v in opts.items():
            if k in ("--state-dir", "--socket"):
                continue            # the harness gives its own
            if k == "--shim-token-file":
                v = token
            if k == "--shim-listen":
                v = "127.0.0.1:%d" % port
            extra += [k] + ([] if v is True else [v])
        a = self.agent(extra=extra)
        os.chmod(a.tmp, 0o711)      # the shim, as 65534, reaches the socket

        def get(tok):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(2))
                c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + tok})
                r = c.getresponse()
                out = (r.status, r.read())
                c.close()
                return out
            except OSError:
                return (None, b"")
        self.assertTrue(poll(lambda: get("tok-%d" % os.getpid())[0] == 200, scaled(10.0)),
                        a.log_text())
        self.assertEqual(json.loads(get("tok-%d" % os.getpid())[1])["pid"], 1)
        self.assertEqual(get("wrong")[0], 401)


class TestKubernetes(ExampleCase):

    def setUp(self):
        super().setUp()
        with open(os.path.join(EXAMPLES, "kubernetes", "pod.yaml")) as f:
            docs = list(yaml.safe_load_all(f))
        self.secret = [d for d in docs if d["kind"] == "Secret"][0]
        self.pod = [d for d in docs if d["kind"] == "Pod"][0]
        self.spec = self.pod["spec"]
        self.c = self.spec["containers"][0]
        self.opts = self.tend_argv(self.c["command"])

    def volume_at(self, path):
        """The pod volume mounted at the directory holding path."""
        mounts = {m["mountPath"].rstrip("/"): m["name"] for m in self.c["volumeMounts"]}
        d = path
        while d not in mounts:
            self.assertNotEqual(d, "/", "%s is on no volume" % path)
            d = os.path.dirname(d)
        return {v["name"]: v for v in self.spec["volumes"]}[mounts[d]]

    def test_manifest_fields(self):
        self.assertEqual(self.pod["apiVersion"], "v1")
        port = self.check_common(self.opts)
        self.assertIn(port, [p["containerPort"] for p in self.c["ports"]])
        # The token from the Secret's volume.
        vol = self.volume_at(self.opts["--shim-token-file"])
        self.assertEqual(vol["secret"]["secretName"], self.secret["metadata"]["name"])
        key = os.path.basename(self.opts["--shim-token-file"])
        self.assertIn(key, self.secret.get("stringData", {}) or self.secret.get("data", {}))
        self.assertEqual(self.c["readinessProbe"]["exec"]["command"], ["tend", "health"])
        self.assertGreater(seconds(self.spec["terminationGracePeriodSeconds"]),
                           float(self.opts["--grace"]))
        state = self.opts.get("--state-dir", "/var/lib/tend")
        self.assertIn("emptyDir", self.volume_at(state + "/x"))

    def test_agent_starts_with_its_options(self):
        self.run_with(self.opts)


class TestCompose(ExampleCase):

    def setUp(self):
        super().setUp()
        with open(os.path.join(EXAMPLES, "compose", "docker-compose.yml")) as f:
            self.doc = yaml.safe_load(f)
        self.svc = self.doc["services"]["sandbox"]
        self.opts = self.tend_argv(self.svc["entrypoint"])

    def test_compose_fields(self):
        port = self.check_common(self.opts)
        # Published on the host's loopback only.
        self.assertEqual(self.svc["ports"], ["127.0.0.1:%d:%d" % (port, port)])
        # The token is a Compose secret, which appears at /run/secrets/NAME.
        name = os.path.basename(self.opts["--shim-token-file"])
        self.assertEqual(self.opts["--shim-token-file"], "/run/secrets/" + name)
        self.assertIn(name, self.svc["secrets"])
        self.assertIn(name, self.doc["secrets"])
        self.assertEqual(self.svc["healthcheck"]["test"], ["CMD", "tend", "health"])
        self.assertGreater(seconds(self.svc["stop_grace_period"]), float(self.opts["--grace"]))
        state = self.opts.get("--state-dir", "/var/lib/tend")
        vols = dict(v.split(":", 1)[::-1] for v in self.svc["volumes"])
        self.assertIn(vols[state], self.doc["volumes"])

    def test_agent_starts_with_its_options(self):
        self.run_with(self.opts)


class TestCloudflare(ExampleCase):

    def test_dockerfile_drops_the_static_tend_in(self):
        with open(os.path.join(EXAMPLES, "cloudflare", "Dockerfile")) as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
        copy = [ln for ln in lines if ln.startswith("COPY --from=tend:latest /usr/bin/tend ")]
        self.assertEqual(len(copy), 1, lines)
        dest = copy[0].split()[-1]
        entry = json.loads([ln for ln in lines if ln.startswith("ENTRYPOINT")][0][10:])
        self.assertEqual(entry[0], dest)
        self.tend_argv(entry)
        self.assertFalse([ln for ln in lines if "libcjson" in ln], lines)


if __name__ == "__main__":
    unittest.main()
