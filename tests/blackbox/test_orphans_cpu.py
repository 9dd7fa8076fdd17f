"""The cost of reaping a stream of orphans, and what it must not cost.

As PID 1 the agent inherits every orphan of the namespace.  Each waitpid
that finds no zombie walks the list of all its children, so the agent's
CPU for a burst grows with the number of reap passes: a pass per SIGCHLD
(one per death while deaths come slower than a pass takes) is what made it
cost more than catatonit.  A burst is reaped one pass per hold-off
(proto/README.md §6.2); these tests count the agent's wake-ups (voluntary
context switches, from the host's /proc) for deaths spread on a schedule,
and check that the statuses of launched processes, the group's settling
and "no zombie left" hold through it.
"""
import sys
import time
import unittest

from harness import AgentTestCase, poll, scaled, zombies_under

N = 400

# A parent that forks n children and exits at once: they are the agent's
# orphans.  Each dies at its own moment, gap s apart, from a common start
# (delay s after the first fork, so that the forks are all done by then):
# the deaths come at a rate set by the schedule, not by the machine.
STREAM = r"""
import os, sys, time
n, delay, gap = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
t0 = time.monotonic()
for i in range(n):
    if os.fork() == 0:
        time.sleep(max(0.0, t0 + delay + i * gap - time.monotonic()))
        os._exit(0)
os._exit(0)
"""


def wakeups(pid):
    """voluntary_ctxt_switches of a host pid: the agent blocking in epoll_wait."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches for pid %d" % pid)


def metric(a, name):
    for line in a.get("/v1/metrics").body.decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    raise AssertionError("metric %s missing" % name)


class TestOrphanStream(AgentTestCase):

    def stream(self, a, pid_id, n, gap, delay=1.0):
        r = a.launch([sys.executable, "-c", STREAM, str(n), str(scaled(delay)), str(gap)],
                     id=pid_id)
        self.assertEqual(r.status, 200, r)

    def assertAllReaped(self, a, host, n):
        self.assertEqual(poll(lambda: not a.descendants(), 5), True,
                         "left under the agent: %s (zombies %s)"
                         % (a.descendants(), zombies_under(host)))
        self.assertGreaterEqual(metric(a, "tend_orphans_reaped_total"), n)

    def test_stream_of_orphans_wakes_the_agent_per_burst_not_per_death(self):
        # 400 deaths 1 ms apart: a reaper woken by each SIGCHLD wakes about
        # 400 times (the base agent: 330-400); one pass per 5 ms hold-off
        # is about 80, plus the few requests and settle checks.
        a = self.agent()
        host = a.host_pid()
        before = wakeups(host)
        self.stream(a, "stream", N, 0.001)
        st = a.wait_ended("stream", scaled(20000))
        self.assertEqual(st["exit"]["code"], 0, st)
        self.assertAllReaped(a, host, N)
        woke = wakeups(host) - before
        self.assertLess(woke, N // 2, "the agent woke %d times for %d orphans" % (woke, N))

    def test_launched_exit_during_burst_keeps_its_status(self):
        # Orphans die all through the run; a launched process that exits
        # among them keeps its code, and its record ends at once, not when
        # the burst is over (it is not one of the orphans' group).
        a = self.agent()
        host = a.host_pid()
        self.stream(a, "burst", N, 0.002, delay=0.3)
        time.sleep(scaled(0.5))
        for i in range(5):
            t0 = time.monotonic()
            st = a.wait_ended(a.launch_ok(["sh", "-c", "exit %d" % (3 + i)])["id"], 5000)
            took = time.monotonic() - t0
            self.assertEqual(st["exit"]["code"], 3 + i, st)
            self.assertLess(took, scaled(0.5), "a launched exit waited %.3f s" % took)
        self.assertEqual(a.wait_ended("burst", scaled(20000))["exit"]["code"], 0)
        self.assertAllReaped(a, host, N)

    def test_group_settles_after_its_last_orphan(self):
        # The group's members are orphans reaped in bursts: the record ends
        # only once the last of them is gone, and soon after.
        a = self.agent()
        host = a.host_pid()
        t0 = time.monotonic()
        self.stream(a, "group", 200, 0.002, delay=0.3)
        st = a.wait_ended("group", scaled(20000))
        took = time.monotonic() - t0
        # The last member dies 0.3 + 200 * 0.002 = 0.7 s after the first fork.
        self.assertGreaterEqual(took, 0.7, "ended before its last member (%.2f s)" % took)
        self.assertLess(took, scaled(3.0), "ended %.2f s after launch" % took)
        # The record ends when its cgroup empties, which zombies do not
        # hold: the last of them are reaped at the next pass.
        self.assertEqual(poll(lambda: zombies_under(host) == [], 1), True, zombies_under(host))
        self.assertAllReaped(a, host, 200)


if __name__ == "__main__":
    unittest.main()
