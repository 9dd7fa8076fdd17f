#!/usr/bin/env python3
"""The real E2B JS SDK (npm `e2b`, pinned in package-lock.json) against
tend: an agent as PID 1 of its own namespace, `tend shim --no-auth` on
127.0.0.1 in front of it, and run.mjs in the SDK's debug mode
(E2B_DEBUG=true, E2B_SANDBOX_URL the shim).

The SDK is installed with `npm ci` into build/e2b (E2B_BUILD), again only
when the lockfile changed.  `run.py --bench`: commands.run('true') p50
through the SDK and the shim, against POST /v1/exec of the same command
(`/bin/bash -l -c true`) over the unix socket, in the same run; and a
100 MB files.write + files.read through the SDK against cat(1).  Without node or npm this prints why and exits
0: `make test` goes on.  Exit 1 when a check failed.
"""
import json
import os
import shutil
import statistics
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))

from harness import TEND_BIN, Agent, UnixHTTPConnection, scaled  # noqa: E402

BUILD = os.environ.get("E2B_BUILD", os.path.join(ROOT, "build", "e2b"))


def install():
    """npm ci into BUILD unless it holds this lockfile's install."""
    os.makedirs(BUILD, exist_ok=True)
    lock = os.path.join(HERE, "package-lock.json")
    have = os.path.join(BUILD, "package-lock.json")
    if not (os.path.isdir(os.path.join(BUILD, "node_modules", "e2b")) and
            os.path.exists(have) and open(have, "rb").read() == open(lock, "rb").read()):
        for f in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(HERE, f), BUILD)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=BUILD, check=True)
    # The checks run from BUILD, where node finds node_modules.
    for f in os.listdir(HERE):
        if f.endswith(".mjs"):
            shutil.copy(os.path.join(HERE, f), BUILD)
    stale = [f for f in os.listdir(BUILD) if f.endswith(".mjs") and
             not os.path.exists(os.path.join(HERE, f))]
    for f in stale:
        os.unlink(os.path.join(BUILD, f))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def exec_p50(sock, n):
    """POST /v1/exec of bash -l -c true on one keep-alive connection: p50, p90 ms."""
    c = UnixHTTPConnection(sock, timeout=scaled(30))
    body = json.dumps({"argv": ["/bin/bash", "-l", "-c", "true"]})
    ms = []
    for i in range(n + 5):
        t0 = time.monotonic()
        c.request("POST", "/v1/exec", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError("exec: %d" % r.status)
        if i >= 5:
            ms.append((time.monotonic() - t0) * 1000)
    c.close()
    ms.sort()
    return statistics.median(ms), ms[int(n * 0.9)]


def bench(agent, env):
    n = int(os.environ.get("E2B_BENCH_N", "100"))
    out = subprocess.run(["node", os.path.join(BUILD, "bench.mjs")], env=env,
                         capture_output=True, text=True, timeout=scaled(600))
    if out.returncode != 0:
        print("e2b bench: FAIL\n" + out.stdout + out.stderr)
        return 1
    sdk = json.loads(out.stdout.strip().splitlines()[-1])
    p50, p90 = exec_p50(agent.sock, n)
    print("e2b bench: commands.run('true') through the SDK p50 %.2f ms (p90 %.2f), "
          "/v1/exec of bash -l -c true p50 %.2f ms (p90 %.2f); ratio %.2f (n=%d)"
          % (sdk["p50"], sdk["p90"], p50, p90, sdk["p50"] / p50, n))
    out = subprocess.run(["node", os.path.join(BUILD, "bench_fs.mjs")], env=env,
                         capture_output=True, text=True, timeout=scaled(600))
    if out.returncode != 0:
        print("e2b bench: files FAIL\n" + out.stdout + out.stderr)
        return 1
    fs = json.loads(out.stdout.strip().splitlines()[-1])
    print("e2b bench: %d MB files.write %.0f ms, files.read %.0f ms through the SDK; "
          "cat to a file (and sync) %.0f ms, cat to /dev/null %.0f ms"
          % (fs["mb"], fs["write"], fs["read"], fs["catWrite"], fs["catRead"]))
    # One line for scripts/bench's table.
    print("e2b bench json: " + json.dumps({"n": n, "sdkP50": sdk["p50"], "execP50": p50,
                                           "files": fs}))
    return 0


def main():
    if shutil.which("node") is None or shutil.which("npm") is None:
        print("e2b: SKIPPED: node and npm are needed for the E2B SDK test "
              "(apt-get install nodejs npm)")
        return 0
    install()
    agent = Agent()
    shim = None
    try:
        agent.wait_healthy()
        port = free_port()
        shim = subprocess.Popen([TEND_BIN, "shim", "--no-auth", "--listen",
                                 "127.0.0.1:%d" % port, "--socket", agent.sock,
                                 "--user", "root"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        if not wait_port(port, scaled(10)):
            print("e2b: FAIL: the shim did not listen on 127.0.0.1:%d" % port)
            return 1
        env = dict(os.environ, E2B_DEBUG="true",
                   E2B_SANDBOX_URL="http://127.0.0.1:%d" % port)
        if "--bench" in sys.argv[1:]:
            return bench(agent, env)
        rc = subprocess.run(["node", os.path.join(BUILD, "run.mjs")], env=env,
                            timeout=scaled(600)).returncode
        if rc != 0:
            print("e2b: the agent's log:\n" + agent.log_text()[-4000:])
        return 1 if rc != 0 else 0
    finally:
        if shim is not None:
            shim.terminate()
            shim.wait()
        agent.close()


if __name__ == "__main__":
    sys.exit(main())
