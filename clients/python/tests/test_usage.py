"""Client.usage and usage_all against a real server with a runs quota."""

from __future__ import annotations

import unittest
from typing import Optional

import _harness
from sandboxrun import BusyError, Client, RefusedError

TOKEN = "usage-token-0123456789abcdef"
POLICY = "tenants:\n  default:\n    quotas:\n      - {window: 24h, runs: 1}\n"
server: Optional[_harness.Server] = None


def setUpModule() -> None:
    global server
    _harness.require_docker()
    server = _harness.Server(token=TOKEN, policy=POLICY, flags=["--warm-pool", "0"])


def tearDownModule() -> None:
    if server is not None:
        server.stop()


class Usage(unittest.TestCase):
    def test_usage_adds_up_and_the_quota_refuses(self) -> None:
        assert server is not None
        c = Client(server.url, TOKEN)
        res = c.python("hello", "sum(range(100000))")
        with self.assertRaises(BusyError) as cm:
            c.python("hello", "print(1)")
        self.assertIn("quota runs per 24h", cm.exception.message)
        self.assertGreaterEqual(cm.exception.retry_after, 1)

        u = c.usage()
        self.assertTrue(u.label.startswith("token-"), u.label)
        self.assertNotIn(TOKEN, u.label)
        self.assertEqual(u.total.runs, 1)
        assert u.stored is not None
        self.assertEqual(u.stored.bytes, u.stored.session_bytes + u.stored.upload_bytes)
        self.assertEqual(u.stored.limit, 0, "no stored_bytes quota")
        self.assertEqual(u.total.cpu_time_ms, res.cpu_time_ms)
        day = u.windows[-1]
        self.assertEqual(day.window, "24h0m0s")
        self.assertEqual(day.used.runs, 1)
        assert day.limits is not None
        self.assertEqual(day.limits.runs, 1)

        with self.assertRaises(RefusedError):
            c.usage_all()


if __name__ == "__main__":
    unittest.main()
