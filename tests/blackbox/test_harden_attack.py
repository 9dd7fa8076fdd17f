"""The new surfaces under attack (issue 25: items 5, 11, 12, 13, 14).

Each test is the regression test of one item: it fails on the agent the
issue was filed against and passes once the item is fixed.
"""
import os
import re
import unittest

from harness import AgentTestCase, request_bytes

HANDSHAKE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
             "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
SHELL = ["/bin/sh"]


# ---------------------------------------------------------------- item 13

class TestZeroTerminalSize(AgentTestCase):
    """proto §12: cols/rows are 1..10000 on attach; 0 is out of range, and
    refused as a non-number is, never upgraded."""

    def upgrade(self, a, path):
        r = a.raw_response(request_bytes("GET", path, headers=HANDSHAKE))
        self.assertIsNotNone(r, "closed without a reply: %s" % path)
        return r

    def test_connect_zero_sizes_refused(self):
        a = self.agent()
        r = a.post("/v1/terminals", {"argv": SHELL, "id": "z"})
        self.assertEqual(r.status, 200, r)
        for q in ("cols=0&rows=0", "cols=0&rows=24", "cols=80&rows=0"):
            r = self.upgrade(a, "/v1/terminals/z/connect?" + q)
            self.assertEqual(r.status, 400, (q, r))
            self.assertIn("cols and rows must be valid numbers", r.json["error"], r)
        # In range, and absent, still upgrade.
        for q in ("cols=80&rows=24", ""):
            self.assertEqual(self.upgrade(a, "/v1/terminals/z/connect?" + q).status, 101, q)

    def test_bridge_pty_zero_sizes_refused(self):
        a = self.agent()
        for q in ("cols=0&rows=0", "cols=0&rows=24", "cols=80&rows=0"):
            r = self.upgrade(a, "/v1/sandbox/sb1/pty?shell=/bin/sh&" + q)
            self.assertEqual(r.status, 400, (q, r))
            self.assertIn("cols and rows must be valid numbers", r.json["error"], r)
        # Nothing was created by the refusals.
        self.assertEqual(a.get("/v1/terminals").json, [])
        self.assertEqual(self.upgrade(a, "/v1/sandbox/sb1/pty?shell=/bin/sh&cols=1&rows=1").status,
                         101)


if __name__ == "__main__":
    unittest.main()
