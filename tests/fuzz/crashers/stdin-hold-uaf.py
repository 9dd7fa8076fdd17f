#!/usr/bin/env python3
# Reproduce: a held stdin writer (proc_stdin_hold) whose request then
# fails to parse is freed without on_close; proc_stdin_release later
# writes to the freed http_conn.
#
# Usage: stdin-hold-uaf.py TEND_BIN EMPTY_DIR   (an ASan build of tend shows the report)
# Exit status 1 if the agent died.
import json, os, socket, subprocess, sys, time
tend, d = sys.argv[1], sys.argv[2]
sock = os.path.join(d, "s")
agent = subprocess.Popen([tend, "agent", "--socket", sock, "--state-dir",
                          os.path.join(d, "state")], stderr=open(os.path.join(d, "agent.err"), "w"))
for _ in range(100):
    if os.path.exists(sock): break
    time.sleep(0.05)
def req(raw):
    s = socket.socket(socket.AF_UNIX); s.connect(sock); s.sendall(raw)
    s.shutdown(socket.SHUT_WR); out = b""
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
    s.close(); return out
body = json.dumps({"argv": ["sh", "-c", "sleep 1; cat >/dev/null"],
                   "stdin": "pipe", "id": "p"}).encode()
print(req(b"POST /v1/processes HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body).split(b"\r\n")[0])
# One chunk just over PROC_STDIN_HIGH + the 64 KiB pipe, then junk where
# the next chunk size should be: the hold and the parse error happen while
# parsing the same read.
X = (1 << 20) + 65536 + 64
s = socket.socket(socket.AF_UNIX); s.connect(sock)
s.sendall(b"POST /v1/processes/p/stdin HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
          + b"%x\r\n" % X + b"a" * X + b"\r\nZZ\r\n")
s.settimeout(5)
try: print("reply:", s.recv(4096).split(b"\r\n")[0])
except Exception as e: print("reply:", e)
s.close()
time.sleep(3)     # cat drains the pipe: proc_stdin_release(p)
alive = agent.poll() is None
print("agent alive:", alive)
agent.terminate(); agent.wait()
print(open(os.path.join(d, "agent.err")).read()[-6000:])
sys.exit(0 if alive else 1)
