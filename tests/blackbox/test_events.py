"""GET /v1/events: the boot's lifecycle events, durable and resumable.

The JSON page and the SSE stream, cursors (since, Last-Event-ID,
since=end), filters by type and by ID, the order of process.exited after
the final status and the whole output, an earlier boot's events with the
Tend-Boot pin, records lost by a crash, the bound (events.truncated), a
restart of the agent mid-follow, a follower that never reads, and
hostile queries.
"""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import unittest

from harness import AgentTestCase, RFC3339_MS, SLOW, TEND_BIN, poll, scaled, request_bytes


def seq(cursor):
    return int(cursor.split("-")[0])


class EventsTest(AgentTestCase):

    def page(self, a, query="", headers=None):
        r = a.get("/v1/events" + query, headers=headers or {})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("content-type", "").startswith("application/json"), r.headers)
        j = r.json
        self.assertIsInstance(j, dict, r)
        self.assertIsInstance(j["events"], list)
        return j

    def all_events(self, a, query="", headers=None):
        """Every event there is, page after page."""
        out = []
        parts = [p for p in query.lstrip("?").split("&") if p and not p.startswith("since=")]
        j = self.page(a, query, headers)
        for _ in range(10000):
            if not j["events"]:
                return out
            out += j["events"]
            j = self.page(a, "?" + "&".join(parts + ["since=" + j["next"]]), headers)
        self.fail("the pages never end")

    def wait_event(self, a, typ, pid_id=None, timeout=5.0):
        def find():
            for e in self.all_events(a, "?types=" + typ):
                if pid_id is None or e.get("id") == pid_id:
                    return e
            return None
        e = poll(find, timeout)
        self.assertIsNotNone(e, "no %s event for %s" % (typ, pid_id))
        return e

    # ---------------------------------------------------------------- shape

    def test_page_shape_and_order(self):
        a = self.agent()
        boot = a.health()["bootId"]
        st = a.launch_ok(["sh", "-c", "exit 3"], id="three", tags={"k": "v"})
        a.wait_ended("three")
        e = self.wait_event(a, "process.exited", "three")
        evs = self.all_events(a)
        self.assertEqual(evs[0]["type"], "agent.started", evs)
        self.assertEqual(evs[0]["pid"], 1)
        self.assertIsInstance(evs[0]["version"], str)
        seqs = [seq(x["cursor"]) for x in evs]
        self.assertEqual(seqs, list(range(1, len(evs) + 1)))
        for x in evs:
            self.assertEqual(x["bootId"], boot)
            self.assertRegex(x["time"], RFC3339_MS)
            self.assertEqual(list(x)[:2], ["type", "cursor"])
        started = [x for x in evs if x["type"] == "process.started"][0]
        self.assertEqual(started["id"], "three")
        self.assertEqual(started["pid"], st["pid"])
        self.assertEqual(started["argv0"], "sh")
        self.assertEqual(started["tags"], {"k": "v"})
        final = a.status("three").json
        self.assertEqual(e["exit"], final["exit"])
        self.assertEqual(e["exit"]["code"], 3)
        self.assertIsInstance(e["durationMs"], (int, float))
        self.assertLess(evs.index(started), evs.index([x for x in evs if x["type"] == "process.exited"][0]))
        # A page ends with next: the cursor of the last event; after it, nothing.
        j = self.page(a)
        self.assertEqual(j["next"], j["events"][-1]["cursor"])
        j2 = self.page(a, "?since=" + j["next"])
        self.assertEqual(j2, {"events": [], "next": j["next"]})
        # since=end: nothing now, and next is the end.
        j3 = self.page(a, "?since=end")
        self.assertEqual(j3["events"], [])
        self.assertEqual(j3["next"], j["next"])

    def test_sse_shape(self):
        a = self.agent()
        a.launch_ok(["true"], id="t")
        a.wait_ended("t")
        self.wait_event(a, "process.exited", "t")
        s = a.sse("/v1/events", until=lambda e: e.get("event") == "process.exited")
        self.assertEqual(s.status, 200)
        self.assertTrue(s.headers["content-type"].startswith("text/event-stream"))
        for e in s.events:
            self.assertEqual(e["id"], e["json"]["cursor"])
            self.assertEqual(e["event"], e["json"]["type"])
        self.assertEqual(s.events[0]["event"], "agent.started")
        # follow=0 with SSE asked: the JSON page all the same.
        r = a.get("/v1/events?follow=0", headers={"Accept": "text/event-stream"})
        self.assertIn("events", r.json)

    def test_sse_since_end_sees_only_what_comes(self):
        a = self.agent()
        got = {}

        def follow():
            got["s"] = a.sse("/v1/events?since=end", timeout=10,
                             until=lambda e: e.get("event") == "process.exited")
        t = threading.Thread(target=follow)
        t.start()
        time.sleep(0.3)
        a.launch_ok(["true"], id="later")
        t.join(scaled(15))
        evs = got["s"].events
        self.assertEqual([e["event"] for e in evs], ["process.started", "process.exited"], evs)
        self.assertEqual(evs[0]["json"]["id"], "later")

    def test_heartbeat(self):
        a = self.agent()
        s = a.sse("/v1/events?since=end", timeout=12)
        self.assertTrue(s.timed_out)
        self.assertEqual(s.events, [])
        self.assertIn("ping", s.comments)

    # ---------------------------------------------------------------- order

    def test_exited_after_final_status_and_output(self):
        a = self.agent()
        got = {}

        def follow():
            got["s"] = a.sse("/v1/events?since=end&types=process.exited", timeout=15,
                             until=lambda e: True)
            # Told: the status is final and the output whole, now.
            got["st"] = a.status("big").json
            got["out"] = a.get("/v1/processes/big/stdout").body
        t = threading.Thread(target=follow)
        t.start()
        time.sleep(0.3)
        a.launch_ok(["sh", "-c", "seq 1 200000"], id="big")
        t.join(scaled(20))
        self.assertEqual(got["s"].events[0]["json"]["id"], "big")
        self.assertEqual(got["st"]["state"], "exited")
        want = b"".join(b"%d\n" % i for i in range(1, 200001))
        self.assertEqual(len(got["out"]), len(want))
        self.assertEqual(got["st"]["stdoutBytes"], len(want))

    def test_exited_waits_for_a_pipe_held_outside_the_group(self):
        # The group is gone at once; a process of its own session keeps
        # stdout open and writes later: the event waits for that output.
        a = self.agent()
        a.launch_ok(["sh", "-c", "setsid sh -c 'sleep 0.5; echo late' & exit 0"], id="held")
        e = self.wait_event(a, "process.exited", "held", timeout=10)
        self.assertEqual(e["exit"]["code"], 0)
        self.assertEqual(a.get("/v1/processes/held/stdout").body, b"late\n")
        st = a.status("held").json
        self.assertEqual(st["stdoutBytes"], 5)

    def test_removed_and_timeout(self):
        a = self.agent()
        a.launch_ok(["sleep", "30"], id="slow", timeout=200)
        e = self.wait_event(a, "process.timeout", "slow")
        self.assertEqual(e["signal"], "TERM")
        x = self.wait_event(a, "process.exited", "slow")
        self.assertTrue(x["exit"]["timedOut"])
        self.assertEqual(x["exit"]["signal"], 15)
        self.assertEqual(a.delete("/v1/processes/slow").status, 204)
        self.wait_event(a, "process.removed", "slow")
        evs = self.all_events(a, "?id=slow")
        self.assertEqual([e["type"] for e in evs],
                         ["process.started", "process.timeout", "process.exited", "process.removed"])

    def test_terminal_events(self):
        a = self.agent()
        r = a.post("/v1/terminals", {"id": "tt", "argv": ["sh", "-c", "exit 5"]})
        self.assertEqual(r.status, 200, r)
        e = self.wait_event(a, "terminal.closed", "tt")
        self.assertEqual(e["exit"]["code"], 5)
        self.assertIsInstance(e["durationMs"], (int, float))
        opened = self.all_events(a, "?types=terminal.opened")
        self.assertEqual(opened[0]["id"], "tt")
        self.assertEqual(opened[0]["argv0"], "sh")
        self.assertEqual(a.delete("/v1/terminals/tt").status, 204)
        self.wait_event(a, "terminal.removed", "tt")
        self.assertEqual([x["type"] for x in self.all_events(a, "?id=tt")],
                         ["terminal.opened", "terminal.closed", "terminal.removed"])

    def test_bridge_namespace(self):
        a = self.agent()
        r = a.get("/v1/sandbox/sb-1/events")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["events"][0]["type"], "agent.started")

    def test_shim_events_and_through_the_shim(self):
        import http.client
        import tempfile
        from test_shim import TOKEN, free_port
        tmp = tempfile.mkdtemp(prefix="tend-ev-tok-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", tmp]))
        tok = os.path.join(tmp, "token")
        with open(tok, "w") as f:
            f.write(TOKEN + "\n")
        port = free_port()
        a = self.agent(extra=["--shim-listen", "127.0.0.1:%d" % port, "--shim-token-file", tok])
        os.chmod(a.tmp, 0o711)
        st = self.wait_event(a, "shim.started")
        self.assertEqual(st["listen"], "127.0.0.1:%d" % port)

        def through():
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/v1/events?types=shim.", headers={"Authorization": "Bearer " + TOKEN})
                r = c.getresponse()
                return json.loads(r.read()) if r.status == 200 else None
            except OSError:
                return None
            finally:
                c.close()
        j = poll(through, 5)
        self.assertEqual(j["events"][0]["type"], "shim.started")
        os.kill(a.host_pid_of(st["pid"]), signal.SIGKILL)
        ex = self.wait_event(a, "shim.exited")
        self.assertEqual(ex["signal"], 9)
        self.assertTrue(ex["restarting"])
        self.assertGreaterEqual(ex["backoffS"], 0.5)

    # ---------------------------------------------------------------- cursors

    def test_resume_without_gap_or_duplicate(self):
        a = self.agent()
        for i in range(3):
            a.launch_ok(["true"], id="r%d" % i)
        for i in range(3):
            self.wait_event(a, "process.exited", "r%d" % i)
        first = a.sse("/v1/events", max_events=4)
        self.assertEqual(len(first.events), 4)
        last = first.events[-1]["id"]
        for i in range(3, 6):
            a.launch_ok(["true"], id="r%d" % i)
        for i in range(3, 6):
            self.wait_event(a, "process.exited", "r%d" % i)
        total = len(self.all_events(a))
        # Last-Event-ID, as a browser's EventSource sends it on reconnect.
        second = a.sse("/v1/events", headers={"Last-Event-ID": last},
                       until=lambda e: seq(e["id"]) == total)
        seqs = [seq(e["id"]) for e in first.events + second.events]
        self.assertEqual(seqs, list(range(1, total + 1)))
        # ?since= wins over the header.
        third = a.sse("/v1/events?since=" + first.events[1]["id"], headers={"Last-Event-ID": last},
                      max_events=1)
        self.assertEqual(seq(third.events[0]["id"]), 3)

    def test_filters(self):
        a = self.agent()
        a.launch_ok(["true"], id="fa")
        a.launch_ok(["false"], id="fb")
        self.wait_event(a, "process.exited", "fa")
        self.wait_event(a, "process.exited", "fb")
        ex = self.all_events(a, "?types=process.exited")
        self.assertEqual(sorted(e["id"] for e in ex), ["fa", "fb"])
        self.assertTrue(all(e["type"] == "process.exited" for e in ex))
        pre = self.all_events(a, "?types=process.")
        self.assertEqual({e["type"] for e in pre}, {"process.started", "process.exited"})
        both = self.all_events(a, "?types=agent.started,process.exited")
        self.assertEqual(len(both), 3)
        self.assertEqual(self.all_events(a, "?types=process"), [])
        byid = self.all_events(a, "?id=fb")
        self.assertEqual([e["type"] for e in byid], ["process.started", "process.exited"])
        self.assertEqual(byid[1]["exit"]["code"], 1)
        one = self.all_events(a, "?id=fb&types=process.exited")
        self.assertEqual(len(one), 1)
        # A filtered page's next passes what was left out.
        j = self.page(a, "?types=nothing.")
        self.assertEqual(j["events"], [])
        self.assertEqual(seq(j["next"]), len(self.all_events(a)))
        # SSE, filtered.
        s = a.sse("/v1/events?types=process.exited&id=fa", max_events=1)
        self.assertEqual(s.events[0]["json"]["id"], "fa")

    def test_limit(self):
        a = self.agent()
        for i in range(5):
            a.launch_ok(["true"], id="l%d" % i)
        for i in range(5):
            self.wait_event(a, "process.exited", "l%d" % i)
        j = self.page(a, "?limit=2")
        self.assertEqual(len(j["events"]), 2)
        self.assertEqual(j["next"], j["events"][1]["cursor"])
        j2 = self.page(a, "?limit=2&since=" + j["next"])
        self.assertEqual(seq(j2["events"][0]["cursor"]), 3)

    def test_hostile_queries(self):
        a = self.agent()
        cur = self.page(a)["next"]
        tag = cur.split("-")[1]
        bad = ["zzz", "1-", "-1-" + tag, "01-" + tag, "1-" + tag.upper(), "99999-" + tag,
               "1-00000000", "1-" + tag + "x", "x" * 5000, "end2"]
        for b in bad:
            r = a.get("/v1/events?since=" + b)
            self.assertEqual(r.status, 400, b)
            self.assertError(r, 400, "invalid_request")
            r = a.get("/v1/events", headers={"Last-Event-ID": b if len(b) < 4000 else "x"})
            self.assertError(r, 400, "invalid_request")
            s = a.sse("/v1/events?since=" + b)
            self.assertEqual(s.status, 400, b)
        for q in ["types=", "types=,", "types=a,,b", "types=Process.exited", "types=a%20b",
                  "types=" + "a" * 5000, "follow=banana", "limit=0", "limit=-1", "limit=x",
                  "id=", "id=" + "x" * 5000]:
            r = a.get("/v1/events?" + q)
            self.assertEqual(r.status, 400, q)
            self.assertError(r, 400, "invalid_request")
        self.assertError(a.get("/v1/events", headers={"Tend-Boot": "0" * 32}), 410, "stale_boot")
        self.assertError(a.get("/v1/events", headers={"Tend-Boot": "nonsense"}), 410, "stale_boot")
        self.assertEqual(a.post("/v1/events", {}).status, 405)
        # Still healthy, still answering.
        self.assertEqual(a.get("/v1/health").status, 200)
        self.assertEqual(self.page(a)["events"][0]["type"], "agent.started")

    # ---------------------------------------------------------------- boots

    def test_earlier_boot_with_the_pin(self):
        a = self.agent()
        b1 = a.health()["bootId"]
        a.launch_ok(["true"], id="old")
        self.wait_event(a, "process.exited", "old")
        old_cursor = self.page(a)["next"]
        self.assertEqual(a.stop(), 0)
        b = self.agent(state_dir=a.state)
        b2 = b.health()["bootId"]
        self.assertNotEqual(b1, b2)
        mine = self.all_events(b)
        self.assertEqual(mine[0]["type"], "agent.started")
        self.assertEqual(mine[0]["previousBoot"], b1)
        # The earlier boot's, whole, ending with agent.stopping.
        old = self.all_events(b, headers={"Tend-Boot": b1})
        types = [e["type"] for e in old]
        self.assertEqual(types[0], "agent.started")
        self.assertIn("process.exited", types)
        self.assertEqual(types[-1], "agent.stopping")
        self.assertTrue(all(e["bootId"] == b1 for e in old))
        # ?boot= pins as the header does.
        self.assertEqual(len(self.all_events(b, "?boot=" + b1)), len(old))
        # Its cursor is not one of this boot.
        self.assertError(b.get("/v1/events?since=" + old_cursor), 400, "invalid_request")
        # With the pin it resumes there; an SSE follow of an old boot ends.
        rest = self.all_events(b, "?since=" + old_cursor, headers={"Tend-Boot": b1})
        self.assertEqual([e["type"] for e in rest], ["agent.stopping"])
        s = b.sse("/v1/events", headers={"Tend-Boot": b1}, timeout=5)
        self.assertTrue(s.closed)
        self.assertFalse(s.timed_out)
        self.assertEqual(len(s.events), len(old))

    def test_lost_after_a_crash(self):
        a = self.agent()
        b1 = a.health()["bootId"]
        a.launch_ok(["sleep", "100"], id="doomed")
        self.wait_event(a, "process.started", "doomed")
        a.kill()
        b = self.agent(state_dir=a.state)
        evs = self.all_events(b)
        self.assertEqual(evs[0]["type"], "agent.started")
        lost = [e for e in evs if e["type"] == "process.lost"]
        self.assertEqual(len(lost), 1, evs)
        self.assertEqual(lost[0]["id"], "doomed")
        self.assertEqual(lost[0]["boot"], b1)
        # The crashed boot's log ends without agent.stopping.
        old = self.all_events(b, headers={"Tend-Boot": b1})
        self.assertEqual([e["type"] for e in old][-1], "process.started")

    def test_restart_mid_follow(self):
        a = self.agent()
        b1 = a.health()["bootId"]
        got = {}

        def follow():
            got["s"] = a.sse("/v1/events", timeout=20)
        t = threading.Thread(target=follow)
        t.start()
        time.sleep(0.3)
        a.launch_ok(["true"], id="m1")
        self.wait_event(a, "process.exited", "m1")
        time.sleep(0.2)
        self.assertEqual(a.stop(), 0)
        t.join(scaled(25))
        s = got["s"]
        self.assertTrue(s.closed, "the stream ends with the agent")
        last = s.events[-1]["id"]
        b = self.agent(state_dir=a.state)
        # The rest of the old boot, with the pin, then the new boot.
        rest = self.all_events(b, "?since=" + last, headers={"Tend-Boot": b1})
        seen = [e["json"]["type"] for e in s.events] + [e["type"] for e in rest]
        self.assertEqual(seen[-1], "agent.stopping")
        self.assertEqual(seen.count("process.exited"), 1)
        allold = self.all_events(b, headers={"Tend-Boot": b1})
        self.assertEqual(len(seen), len(allold))
        new = b.sse("/v1/events", max_events=1)
        self.assertEqual(new.events[0]["json"]["previousBoot"], b1)

    # ---------------------------------------------------------------- bounds

    def test_truncation(self):
        a = self.agent(extra=["--max-event-bytes", "4096"])
        first = self.page(a)["events"][0]["cursor"]
        tags = {"pad": "x" * 300}
        for i in range(30):
            a.launch_ok(["true"], id="t%d" % i, tags=tags)
        self.wait_event(a, "process.exited", "t29")
        evs = self.all_events(a)
        self.assertNotEqual(evs[0]["type"], "agent.started")
        self.assertGreater(seq(evs[0]["cursor"]), 1)
        self.assertLessEqual(sum(len(json.dumps(e)) for e in evs), 4096 + 40 * len(evs))
        old = self.page(a, "?since=" + first)["events"]
        self.assertEqual(old[0]["type"], "events.truncated")
        self.assertEqual(old[0]["skipped"], seq(evs[0]["cursor"]) - 2)
        self.assertEqual(seq(old[0]["cursor"]), seq(evs[0]["cursor"]) - 1)
        self.assertEqual(old[1]["cursor"], evs[0]["cursor"])
        s = a.sse("/v1/events?since=" + first, max_events=2)
        self.assertEqual(s.events[0]["event"], "events.truncated")
        self.assertEqual(s.events[1]["id"], evs[0]["cursor"])
        # Released space goes back to the disk: the file holds about the bound.
        path = os.path.join(a.boot_dir(a.health()["bootId"]), "events")
        self.assertLess(os.stat(path).st_blocks * 512, 4096 + 256 * 1024)

    def test_follower_that_never_reads(self):
        a = self.agent()

        def stuck_follower(query):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(a.sock)
            s.sendall(request_bytes("GET", "/v1/events" + query))
            self.addCleanup(s.close)
            return s
        stuck_follower("?follow=1")
        time.sleep(0.2)
        tags = {"pad": "y" * 3000}
        worst = 0.0
        for i in range(300):
            a.launch_ok(["true"], id="n%d" % i, tags=tags)
            if i % 30 == 0:
                t0 = time.monotonic()
                self.assertEqual(a.get("/v1/health").status, 200)
                worst = max(worst, time.monotonic() - t0)
        self.wait_event(a, "process.exited", "n299", timeout=20)
        self.assertLess(worst, scaled(0.5))
        # About 1 MB of events: followers from the start that never read
        # hold the files' place, not the events.
        rss0 = a.rss_kib()
        for _ in range(5):
            stuck_follower("?follow=1")
        time.sleep(0.5)
        self.assertEqual(a.get("/v1/health").status, 200)
        # A sanitizer's allocator keeps freed memory in quarantine.
        self.assertLess(a.rss_kib() - rss0, 8192 if SLOW else 512, "RSS grew by the events not read")
        # A reader that reads gets every one of them.
        evs = self.all_events(a, "?types=process.started")
        self.assertEqual(len(evs), 300)

    def test_many_followers(self):
        a = self.agent()
        results = [None] * 8

        def follow(k):
            results[k] = a.sse("/v1/events?since=end&types=process.exited", timeout=20,
                               max_events=20)
        ts = [threading.Thread(target=follow, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        time.sleep(0.5)
        for i in range(20):
            a.launch_ok(["true"], id="m%d" % i)
        for t in ts:
            t.join(scaled(25))
        for r in results:
            self.assertEqual(len(r.events), 20)
            seqs = [seq(e["id"]) for e in r.events]
            self.assertEqual(seqs, sorted(seqs))
            self.assertEqual(sorted(e["json"]["id"] for e in r.events),
                             sorted("m%d" % i for i in range(20)))

    # ---------------------------------------------------------------- the CLI

    def cli(self, a, *args, timeout=10):
        return subprocess.run([TEND_BIN, "events", "--socket", a.sock] + list(args),
                              capture_output=True, timeout=scaled(timeout))

    def test_cli(self):
        a = self.agent()
        a.launch_ok(["sh", "-c", "exit 4"], id="c1")
        self.wait_event(a, "process.exited", "c1")
        r = self.cli(a)
        self.assertEqual(r.returncode, 0, r)
        lines = r.stdout.decode().splitlines()
        self.assertIn(" agent.started - ", lines[0])
        self.assertTrue(any(" process.exited c1 exit=4 " in l for l in lines), lines)
        r = self.cli(a, "--json", "--type", "process.", "--id", "c1")
        evs = [json.loads(l) for l in r.stdout.decode().splitlines()]
        self.assertEqual([e["type"] for e in evs], ["process.started", "process.exited"])
        r = self.cli(a, "--json", "--since", evs[0]["cursor"], "-t", "process.exited")
        self.assertEqual([json.loads(l)["id"] for l in r.stdout.decode().splitlines()], ["c1"])
        self.assertEqual(self.cli(a, "--type", "Bad").returncode, 2)
        self.assertEqual(self.cli(a, "--since", "nonsense").returncode, 1)
        # -f: what comes, as it comes.
        p = subprocess.Popen([TEND_BIN, "events", "--socket", a.sock, "-f", "--since", "end",
                              "--json", "-t", "process.exited"], stdout=subprocess.PIPE)
        try:
            time.sleep(0.3)
            a.launch_ok(["true"], id="c2")
            line = p.stdout.readline()
            self.assertEqual(json.loads(line)["id"], "c2")
        finally:
            p.kill()
            p.wait()


class EventsDiskTest(AgentTestCase):
    """The events of a start on a full state dir: held until it takes them."""

    def test_degraded_start_keeps_its_events(self):
        from test_harden_disk import DiskCase
        disk = DiskCase("tmpfs")
        disk.addCleanup = self.addCleanup
        disk.skipTest = self.skipTest
        disk.assertRaises = self.assertRaises
        mnt, state = disk.tmpfs()
        filler = disk.fill(mnt)
        a = self.agent(state_dir=state)
        self.assertEqual(a.health()["state"], "degraded")
        a.launch_ok(["true"], id="mem")
        a.wait_ended("mem")
        os.unlink(filler)
        self.assertTrue(poll(lambda: a.health()["state"] == "ok", 5), a.health())
        ev = EventsTest("test_page_shape_and_order")
        types = poll(lambda: [e["type"] for e in ev.all_events(a)]
                     if "state.recovered" in [e["type"] for e in ev.all_events(a)] else None, 5)
        self.assertIsNotNone(types)
        self.assertEqual(types[0], "agent.started", types)
        self.assertLess(types.index("process.exited"), types.index("state.recovered"), types)


if __name__ == "__main__":
    unittest.main()
