#!/usr/bin/env python3
"""The VM test's host side (scripts/vm runs it, with the kernel it fetched).

Builds an initramfs (newc cpio) of tend's static binary, busybox-static
with its applet links, tests/vm/init as /init and tests/vm/guest.sh as
/test.sh; boots it under qemu (software emulation, serial console) with
a fixed overall timeout; collects the guest's VMTEST lines and the
agent's event=ready; prints one line per case and the times.  Exits 1 on
any failed case, a missing `VMTEST done` or the timeout, 0 otherwise.

usage: run.py --kernel VMLINUZ --tend TEND_STATIC --busybox BUSYBOX
              --out DIR [--timeout S] [--verbose] [CASE...]
"""
import argparse
import json
import os
import re
import select
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class Cpio:
    """An uncompressed newc archive, written in order (parents first)."""

    def __init__(self):
        self.parts = []
        self.ino = 1

    def _add(self, name, mode, data=b"", rdev=(0, 0)):
        name = name.lstrip("/").encode()
        fields = [self.ino, mode, 0, 0, 1, 0, len(data), 0, 0,
                  rdev[0], rdev[1], len(name) + 1, 0]
        self.ino += 1
        head = b"070701" + b"".join(b"%08x" % f for f in fields)
        head += name + b"\0"
        head += b"\0" * (-len(head) % 4)
        self.parts.append(head + data + b"\0" * (-len(data) % 4))

    def dir(self, name):
        self._add(name, stat.S_IFDIR | 0o755)

    def file(self, name, data, mode=0o755):
        self._add(name, stat.S_IFREG | mode, data)

    def link(self, name, target):
        self._add(name, stat.S_IFLNK | 0o777, target.encode())

    def chardev(self, name, major, minor):
        self._add(name, stat.S_IFCHR | 0o600, rdev=(major, minor))

    def bytes(self):
        self.ino = 0
        self._add("TRAILER!!!", 0)
        return b"".join(self.parts)


def initramfs(path, tend, busybox):
    c = Cpio()
    for d in ("bin", "dev", "proc", "sys", "run", "tmp"):
        c.dir(d)
    # The kernel opens init's stdio on /dev/console before /init runs.
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3)
    with open(busybox, "rb") as f:
        c.file("bin/busybox", f.read())
    applets = subprocess.run([busybox, "--list"], capture_output=True,
                             text=True, check=True).stdout.split()
    for a in applets:
        if a not in ("busybox", "tend"):
            c.link("bin/" + a, "busybox")
    with open(tend, "rb") as f:
        data = f.read()
    c.file("bin/tend", data)
    # The live upgrade's second build: this one with another version
    # string of the same length (as tests/blackbox/test_upgrade.py).
    cur = json.loads(subprocess.run([tend, "handover-check"], capture_output=True,
                                    check=True).stdout)["version"]
    new = cur[:-1] + ("u" if cur[-1] != "u" else "v")
    c.file("bin/tend-new", data.replace(("\0%s\0" % cur).encode(),
                                        ("\0%s\0" % new).encode()))
    for src, dst in (("init", "init"), ("guest.sh", "test.sh")):
        with open(os.path.join(HERE, src), "rb") as f:
            c.file(dst, f.read())
    with open(path + ".tmp", "wb") as f:
        f.write(c.bytes())
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--tend", required=True)
    ap.add_argument("--busybox", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    rd = os.path.join(a.out, "initramfs.cpio")
    initramfs(rd, a.tend, a.busybox)
    append = "console=ttyS0 panic=-1 quiet rdinit=/init"
    if a.cases:
        append += " vmcases=" + ",".join(a.cases)
    cmd = [a.qemu, "-accel", "tcg", "-m", "512M", "-smp", "2",
           "-nographic", "-no-reboot", "-nic", "none", "-kernel", a.kernel, "-initrd", rd,
           "-append", append]

    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    console, buf = [], b""
    results, infos = [], []
    ready_host = ready_ms = None
    done = timed_out = False
    deadline = t0 + a.timeout
    done_at = None
    while True:
        now = time.monotonic()
        # After `done` the agent stops what is left and exits (its
        # grace is 2 s); the kernel's panic then ends qemu.
        end = min(deadline, done_at + 10) if done_at else deadline
        if now >= end:
            timed_out = not done
            break
        r, _, _ = select.select([p.stdout], [], [], end - now)
        if not r:
            continue
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            raw, buf = buf.split(b"\n", 1)
            line = raw.decode("utf-8", "replace").rstrip("\r")
            console.append(line)
            if a.verbose:
                print("  | " + line, flush=True)
            m = re.search(r"event=ready .* ms=(\d+)", line)
            if m and ready_ms is None:
                ready_ms = int(m.group(1))
                ready_host = time.monotonic() - t0
            m = re.match(r".*VMTEST (ok|fail|info|done)\b ?(.*)", line)
            if not m:
                continue
            kind, rest = m.group(1), m.group(2)
            if kind == "done":
                done, done_at = True, time.monotonic()
            elif kind == "info":
                infos.append(rest)
            else:
                results.append((kind, rest))
                print("vm: %-4s %5.1f s  %s" % (kind, time.monotonic() - t0,
                                                  rest), flush=True)
    if p.poll() is None:
        p.kill()
    p.wait()
    total = time.monotonic() - t0

    for i in infos:
        print("vm: info " + i)
    # The agent's own end once its main child ended: exit 0.  Its last
    # log line and the kernel's panic at the death of init share the
    # serial console and may be interleaved byte by byte: the kernel's
    # own line, which gives init's exit status, says it as well.
    if done:
        ok = any("event=exit code=0" in line or
                 "Attempted to kill init! exitcode=0x00000000" in line
                 for line in console)
        results.append(("ok" if ok else "fail",
                        "shutdown" + ("" if ok else " the agent logged no event=exit code=0")))
        print("vm: %-4s %5.1f s  %s" % (results[-1][0], total, results[-1][1]))
    fails = [r for r in results if r[0] == "fail"]
    print("vm: agent ready in %s ms of its own (event=ready), %s s after "
          "qemu started; whole run %.1f s; %d ok, %d failed" % (
              ready_ms if ready_ms is not None else "?",
              "%.1f" % ready_host if ready_host is not None else "?",
              total, len(results) - len(fails), len(fails)))
    why = None
    if timed_out:
        why = "timed out after %.0f s" % a.timeout
    elif not done:
        why = "the guest ended without VMTEST done"
    elif fails:
        why = "%d case(s) failed" % len(fails)
    if why:
        if not a.verbose:
            print("vm: the console's last lines:")
            for line in console[-40:]:
                print("  | " + line)
        print("vm: FAIL: " + why)
        return 1
    print("vm: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
