"""Black-box harness for tend's agent.

Each Agent is `tend agent` running as PID 1 of a fresh PID namespace:

    unshare --pid --fork --mount-proc --kill-child $TEND_BIN agent \
        --socket S --state-dir D [extra] [-- wrapped argv]

in a temporary directory of its own.  Tests talk HTTP/1.1 to its unix
socket: through http.client for ordinary calls, through a bare socket for
hostile bytes, pipelining and keep-alive, and through a small reader for
Server-Sent Events.  Helpers look at /proc from the host side (zombies,
descendants, RSS), so every pid they take or return is a host pid unless a
name says "ns".

Every socket operation carries a timeout: a hung agent fails a test, it
never hangs the run.  TEND_SLOW=1 (sanitizer builds) stretches timeouts.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TEND_BIN = os.environ.get("TEND_BIN") or os.path.join(REPO, "build", "tend")
SLOW = os.environ.get("TEND_SLOW", "") not in ("", "0")

HEX32 = re.compile(r"^[0-9a-f]{32}$")
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def scaled(seconds):
    """A timeout, stretched for slow (sanitizer) builds."""
    return seconds * 3 if SLOW else seconds


# ---------------------------------------------------------------- /proc

def proc_stat(pid):
    """(state, ppid, pgid) of a host pid, or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            raw = f.read().decode("latin-1")
    except OSError:
        return None
    # comm may hold spaces and parentheses: fields resume after the last ')'.
    fields = raw[raw.rfind(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[2])


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def process_table():
    """{pid: (state, ppid, pgid)} for every live host process."""
    table = {}
    for pid in all_pids():
        st = proc_stat(pid)
        if st is not None:
            table[pid] = st
    return table


def children_of(pid, table=None):
    table = table if table is not None else process_table()
    return sorted(p for p, st in table.items() if st[1] == pid)


def descendants_of(pid, table=None):
    """Every host pid below pid (zombies included)."""
    table = table if table is not None else process_table()
    kids = {}
    for p, st in table.items():
        kids.setdefault(st[1], []).append(p)
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return sorted(out)


def zombies_under(pid, table=None):
    """Host pids of zombie children of pid."""
    table = table if table is not None else process_table()
    return sorted(p for p, st in table.items() if st[1] == pid and st[0] == "Z")


def group_members(pgid, table=None):
    """Host pids whose process group is pgid (host numbering), zombies included."""
    table = table if table is not None else process_table()
    return sorted(p for p, st in table.items() if st[2] == pgid)


def ns_pids(pid):
    """The NSpid line of a host pid: [host pid, ..., innermost pid]."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except OSError:
        pass
    return []


def rss_kib(pid):
    """VmRSS of a host pid in KiB, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


# ---------------------------------------------------------------- HTTP

class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix socket; the timeout covers connect and every read."""

    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.unix_path)
        except OSError:
            s.close()
            raise
        self.sock = s


class Response:
    """A whole HTTP response: status, lower-cased headers, body bytes."""

    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    @property
    def json(self):
        """The body decoded as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def __repr__(self):
        body = self.body if len(self.body) <= 300 else self.body[:300] + b"..."
        return "<Response %s %r>" % (self.status, body)


class ResponseReader:
    """Parses consecutive HTTP/1.1 responses from one socket (keep-alive,
    pipelining): Content-Length, chunked, or delimited by close."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.eof = False

    def _fill(self):
        if self.eof:
            return False
        data = self.sock.recv(65536)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _line(self):
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise EOFError("connection closed mid-line (have %r)" % self.buf[:200])
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise EOFError("connection closed mid-body")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def at_eof(self):
        """True if the peer closed with nothing more to read."""
        if self.buf:
            return False
        return not self._fill()

    def read(self, head_only=False):
        """The next response; None if the peer closed cleanly before it."""
        if not self.buf and not self._fill():
            return None
        line = self._line().decode("latin-1")
        parts = line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ValueError("bad status line %r" % line)
        status, reason = int(parts[1]), parts[2] if len(parts) > 2 else ""
        headers = []
        while True:
            h = self._line().decode("latin-1")
            if h == "":
                break
            k, _, v = h.partition(":")
            headers.append((k.strip(), v.strip()))
        hd = {k.lower(): v for k, v in headers}
        if head_only or status in (204, 304) or 100 <= status < 200:
            return Response(status, reason, headers, b"")
        if "chunked" in hd.get("transfer-encoding", "").lower():
            body = b""
            while True:
                size = int(self._line().split(b";")[0].strip(), 16)
                if size == 0:
                    while self._line() != b"":
                        pass
                    break
                body += self._exact(size)
                self._line()
        elif "content-length" in hd:
            body = self._exact(int(hd["content-length"]))
        else:
            while self._fill():
                pass
            body, self.buf = self.buf, b""
        return Response(status, reason, headers, body)


def request_bytes(method, path, body=b"", headers=None):
    """One serialized HTTP/1.1 request with a Content-Length body."""
    h = {"Host": "localhost"}
    if body or method in ("POST", "PUT"):
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    head = "%s %s HTTP/1.1\r\n" % (method, path)
    head += "".join("%s: %s\r\n" % kv for kv in h.items())
    return head.encode("latin-1") + b"\r\n" + body


def strict_responses(data):
    """Every HTTP/1.1 response in data, which ends where the last one does
    (its sender closed after it): [(status, {lower-cased header: value},
    body)].  Chunked framing is checked to the byte (each chunk's CRLF,
    the last chunk), not forgiven; anything left over is an error."""
    out = []
    while data:
        head, sep, data = data.partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("a head without its end: %r" % head[:200])
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        hd = {}
        for h in lines[1:]:
            k, _, v = h.partition(":")
            hd[k.strip().lower()] = v.strip()
        if "chunked" in hd.get("transfer-encoding", ""):
            parts = []
            while True:
                size, sep, data = data.partition(b"\r\n")
                if not sep or not re.fullmatch(rb"[0-9a-f]+", size):
                    raise ValueError("bad chunk size line %r" % size[:40])
                n = int(size, 16)
                if n == 0:
                    if not data.startswith(b"\r\n"):
                        raise ValueError("the last chunk lacks its CRLF")
                    data = data[2:]
                    break
                if len(data) < n + 2 or data[n:n + 2] != b"\r\n":
                    raise ValueError("a %d-byte chunk is not followed by CRLF" % n)
                parts.append(data[:n])
                data = data[n + 2:]
            body = b"".join(parts)
        elif "content-length" in hd:
            n = int(hd["content-length"])
            body, data = data[:n], data[n:]
        else:
            body, data = data, b""
        out.append((status, hd, body))
    return out


class SSEStream:
    """The result of reading an event stream."""

    def __init__(self):
        self.status = None
        self.headers = {}
        self.events = []      # dicts: id, event, data (str), json
        self.comments = []
        self.closed = False   # the server ended the stream
        self.timed_out = False
        self.body = b""       # for a non-200 reply

    def of_type(self, typ):
        return [e for e in self.events if isinstance(e.get("json"), dict) and e["json"].get("type") == typ]


# ---------------------------------------------------------------- the agent

class AgentError(AssertionError):
    pass


class Agent:
    """One `tend agent`, PID 1 of its own PID namespace, in a temp dir."""

    def __init__(self, extra=(), wrapped=None, env=None, state_dir=None, socket_path=None,
                 start=True, keep_tmp=False):
        self.tmp = tempfile.mkdtemp(prefix="tend-bb-")
        self.sock = socket_path or os.path.join(self.tmp, "tend.sock")
        self.state = state_dir or os.path.join(self.tmp, "state")
        self.log_path = os.path.join(self.tmp, "agent.log")
        self.extra = list(extra)
        self.wrapped = list(wrapped) if wrapped is not None else None
        self.env = env
        self.keep_tmp = keep_tmp
        self.proc = None
        self._host_pid = None
        self.started_at = None
        if start:
            self.start()

    # -- lifecycle

    def argv(self):
        cmd = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
               TEND_BIN, "agent", "--socket", self.sock, "--state-dir", self.state] + self.extra
        if self.wrapped is not None:
            cmd += ["--"] + self.wrapped
        return cmd

    def start(self):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("TEND_") and k not in ("TEND_BIN", "TEND_SLOW"):
                del env[k]
        env.update(self.env or {})
        with open(self.log_path, "ab") as log:
            self.started_at = time.monotonic()
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, env=env, close_fds=True)
        return self

    def wait_healthy(self, timeout=5.0):
        """Poll GET /v1/health until 200; return seconds since start."""
        end = time.monotonic() + scaled(timeout)
        last = None
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AgentError("agent exited before it was healthy: rc=%s\n%s"
                                 % (self.proc.returncode, self.log_text()[-3000:]))
            if os.path.exists(self.sock):
                try:
                    r = self.request("GET", "/v1/health", timeout=1)
                    if r.status == 200:
                        return time.monotonic() - self.started_at
                    last = r
                except (OSError, http.client.HTTPException) as e:
                    last = e
            time.sleep(0.005)
        raise AgentError("agent not healthy after %.1fs (last: %r)\n%s"
                         % (scaled(timeout), last, self.log_text()[-3000:]))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout=10.0):
        """Wait for unshare (and so the agent) to end; return its exit status
        (unshare passes the agent's exit code through; an agent killed by a
        signal shows as something else, never as 128+N)."""
        try:
            return self.proc.wait(scaled(timeout))
        except subprocess.TimeoutExpired:
            raise AgentError("agent still running after %.1fs" % scaled(timeout))

    def send_signal(self, sig):
        os.kill(self.host_pid(), sig)

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Send sig to the agent itself (not to unshare); return its exit code."""
        if self.running():
            self.send_signal(sig)
        return self.wait_exit(timeout)

    def kill(self):
        """SIGKILL the agent (a crash, as far as the state dir is concerned)."""
        if self.running():
            try:
                os.kill(self.host_pid(timeout=1), signal.SIGKILL)
            except (ProcessLookupError, AgentError):
                pass
            try:
                self.proc.wait(scaled(5))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        if not self.keep_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- identity on the host

    def host_pid(self, timeout=2.0):
        """The agent's host pid: the one child of unshare."""
        if self._host_pid is not None:
            return self._host_pid
        end = time.monotonic() + scaled(timeout)
        while time.monotonic() < end:
            kids = children_of(self.proc.pid)
            if kids:
                self._host_pid = kids[0]
                return self._host_pid
            if self.proc.poll() is not None:
                break
            time.sleep(0.002)
        raise AgentError("no agent process under unshare pid %d" % self.proc.pid)

    def rss_kib(self):
        return rss_kib(self.host_pid())

    def descendants(self):
        return descendants_of(self.host_pid())

    def zombies(self):
        return zombies_under(self.host_pid())

    def host_pid_of(self, ns_pid):
        """The host pid of a process the agent reports as ns_pid."""
        for p in self.descendants():
            ns = ns_pids(p)
            if ns and ns[-1] == ns_pid:
                return p
        return None

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # -- HTTP

    def connect(self, timeout=5.0):
        """A bare connected socket, with a timeout on every operation."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(scaled(timeout))
        try:
            s.connect(self.sock)
        except OSError:
            s.close()
            raise
        return s

    def request(self, method, path, body=None, headers=None, timeout=10.0):
        """One request on a fresh connection.  A dict or list body is sent as
        JSON; bytes as they are."""
        h = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, bytearray, str)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        c = UnixHTTPConnection(self.sock, timeout=scaled(timeout))
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return Response(r.status, r.reason, r.getheaders(), data)
        finally:
            c.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def health(self):
        r = self.get("/v1/health")
        if r.status != 200 or not isinstance(r.json, dict):
            raise AgentError("health: %r" % r)
        return r.json

    def raw(self, data, timeout=5.0, shut_wr=False):
        """Send bytes on a fresh connection and read until the agent closes.
        Returns (bytes read, closed?): closed is False on timeout."""
        s = self.connect(timeout)
        out = b""
        try:
            try:
                s.sendall(data)
                if shut_wr:
                    s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass
            while True:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    return out, False
                except ConnectionResetError:
                    return out, True
                if not chunk:
                    return out, True
                out += chunk
        finally:
            s.close()

    def raw_response(self, data, timeout=5.0, shut_wr=False):
        """Send bytes on a fresh connection and parse one response from what
        comes back (None if the agent closed without a reply)."""
        s = self.connect(timeout)
        try:
            try:
                s.sendall(data)
                if shut_wr:
                    s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                return ResponseReader(s).read()
            except ConnectionResetError:
                return None
        finally:
            s.close()

    def sse(self, path, headers=None, timeout=10.0, until=None, max_events=1000000):
        """Read an SSE reply (no chunking, Connection: close) until the agent
        closes it, until(event) is true, or the timeout passes."""
        out = SSEStream()
        h = {"Accept": "text/event-stream"}
        h.update(headers or {})
        c = UnixHTTPConnection(self.sock, timeout=scaled(timeout))
        end = time.monotonic() + scaled(timeout)
        try:
            c.request("GET", path, headers=h)
            r = c.getresponse()
            out.status = r.status
            out.headers = {k.lower(): v for k, v in r.getheaders()}
            if r.status != 200:
                out.body = r.read()
                out.closed = True
                return out
            cur = {}
            while len(out.events) < max_events:
                if time.monotonic() > end:
                    out.timed_out = True
                    break
                try:
                    line = r.readline()
                except socket.timeout:
                    out.timed_out = True
                    break
                if not line:
                    out.closed = True
                    break
                text = line.decode("utf-8").rstrip("\r\n")
                if text == "":
                    if cur:
                        if "data" in cur:
                            try:
                                cur["json"] = json.loads(cur["data"])
                            except ValueError:
                                cur["json"] = None
                        out.events.append(cur)
                        if until is not None and until(cur):
                            break
                    cur = {}
                elif text.startswith(":"):
                    out.comments.append(text[1:].strip())
                else:
                    field, _, value = text.partition(":")
                    if value.startswith(" "):
                        value = value[1:]
                    if field == "data":
                        cur["data"] = cur["data"] + "\n" + value if "data" in cur else value
                    else:
                        cur[field] = value
            return out
        finally:
            c.close()

    # -- processes

    def launch(self, argv, **fields):
        body = {"argv": argv}
        body.update(fields)
        return self.post("/v1/processes", body)

    def launch_ok(self, argv, **fields):
        r = self.launch(argv, **fields)
        if r.status != 200 or not isinstance(r.json, dict):
            raise AgentError("launch %r: %r" % (argv, r))
        return r.json

    def status(self, pid_id, **kw):
        return self.get("/v1/processes/%s" % pid_id, **kw)

    def wait_proc(self, pid_id, timeout_ms=10000):
        """POST .../wait; the ProcessStatus it returns (whatever its state)."""
        ms = int(timeout_ms * (3 if SLOW else 1))
        r = self.post("/v1/processes/%s/wait?timeout=%d" % (pid_id, ms), b"", timeout=ms / 1000.0 + 5)
        if r.status != 200 or not isinstance(r.json, dict):
            raise AgentError("wait %s: %r" % (pid_id, r))
        return r.json

    def wait_ended(self, pid_id, timeout_ms=10000):
        st = self.wait_proc(pid_id, timeout_ms)
        if st.get("state") == "running":
            raise AgentError("process %s still running after %d ms" % (pid_id, timeout_ms))
        return st

    def boot_dir(self, boot_id):
        return os.path.join(self.state, "boots", boot_id)

    def proc_dir(self, boot_id, pid_id):
        return os.path.join(self.state, "boots", boot_id, "procs", pid_id)



class HealthProbe:
    """GET /v1/health on a thread while an operation runs: every reply's
    time in lat, failures in errors, count the probes sent.  interval is
    the pause between probes; with late, a probe that waits longer than
    interval also stands for the probes it kept from being sent on time
    (d - interval, d - 2 * interval, ...), so that a loop held for a second
    counts as a second of slow health checks, not as one."""

    def __init__(self, agent, interval=0.003, timeout=10, late=False, settle=0.0):
        self.agent = agent
        self.interval = interval
        self.timeout = timeout
        self.late = late
        self.settle = settle
        self.lat = []
        self.errors = []
        self.count = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                r = self.agent.get("/v1/health", timeout=self.timeout)
                if r.status != 200:
                    self.errors.append(r)
            except OSError as e:
                self.errors.append(e)
            d = time.monotonic() - t
            self.lat.append(d)
            self.count += 1
            more = d - self.interval
            while self.late and more > 0:
                self.lat.append(more)
                more -= self.interval
            time.sleep(max(0.0, self.interval - d) if self.late else self.interval)

    @property
    def worst(self):
        return max(self.lat) if self.lat else 0.0

    def p99(self):
        s = sorted(self.lat)
        return s[min(len(s) - 1, int(len(s) * 0.99))] if s else 0.0

    def __enter__(self):
        self._t.start()
        time.sleep(self.settle)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(scaled(self.timeout + 5))

def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def poll(fn, timeout=5.0, interval=0.02):
    """Call fn until it returns something true; return that, or the last value."""
    end = time.monotonic() + scaled(timeout)
    while True:
        v = fn()
        if v or time.monotonic() > end:
            return v
        time.sleep(interval)


class AgentTestCase(unittest.TestCase):
    """Base of the agent tests: each agent is cleaned up, replies are
    checked against the bridge's error shape."""

    def setUp(self):
        # Fail loudly, not through some exit status that happens to match.
        self.assertTrue(os.access(TEND_BIN, os.X_OK), "TEND_BIN %s is not an executable" % TEND_BIN)

    def agent(self, healthy=True, **kw):
        a = Agent(**kw)
        self.addCleanup(a.close)
        if healthy:
            a.wait_healthy()
        return a

    def assertError(self, r, status, code=None):
        """The bridge's error shape: {"error": "<message>", "code": "<code>"}."""
        self.assertEqual(r.status, status, r)
        self.assertTrue(r.header("content-type", "").startswith("application/json"), r.headers)
        j = r.json
        self.assertIsInstance(j, dict, r)
        self.assertIsInstance(j.get("error"), str, j)
        self.assertTrue(j["error"], j)
        self.assertIsInstance(j.get("code"), str, j)
        if code is not None:
            self.assertEqual(j["code"], code, j)
        return j
