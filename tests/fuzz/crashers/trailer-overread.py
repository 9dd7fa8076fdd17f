#!/usr/bin/env python3
# Reproduce: trailer headers of a chunked request are appended to the
# request's header list after on_headers_complete terminated it, so the
# list ends without its NUL and http_header() reads past the buffer.
#
# Usage: trailer-overread.py TEND_BIN EMPTY_DIR   (an ASan build of tend shows the report)
# Exit status 1 if the agent died.
import os, socket, subprocess, sys, time
tend, d = sys.argv[1], sys.argv[2]
sock = os.path.join(d, "s")
agent = subprocess.Popen([tend, "agent", "--socket", sock, "--state-dir",
                          os.path.join(d, "state")], stderr=open(os.path.join(d, "agent.err"), "w"))
for _ in range(100):
    if os.path.exists(sock): break
    time.sleep(0.05)
s = socket.socket(socket.AF_UNIX); s.connect(sock)
s.sendall(b"POST /v1/processes/p/kill HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"0\r\nX-Trailer: abc\r\n\r\n")
s.settimeout(5)
try: print("reply:", s.recv(4096).split(b"\r\n")[0])
except Exception as e: print("reply:", e)
time.sleep(0.5)
alive = agent.poll() is None
print("agent alive:", alive)
agent.terminate(); agent.wait()
print(open(os.path.join(d, "agent.err")).read()[-3000:])
sys.exit(0 if alive else 1)
