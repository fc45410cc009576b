"""Live usage events: how the client reads them and asks for them (no server)."""

from __future__ import annotations

import unittest
from typing import Any, Dict, Iterator, List, Optional

import _harness
from sandboxrun import Client, Event, LocalModeError, LiveUsage, Result
from sandboxrun import client as client_mod


class FakeTransport:
    """Answers a stream with the lines given, and keeps the body sent."""

    def __init__(self, docs: List[Dict[str, Any]]) -> None:
        self.docs = docs
        self.body: Dict[str, Any] = {}

    def lines(self, method: str, path: str, body: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        self.body = body
        yield from self.docs


class LiveUsageEvents(unittest.TestCase):
    def test_usage_events_are_yielded_before_the_result(self) -> None:
        fake = FakeTransport([
            {"type": "stdout", "data": "a\n"},
            {"type": "usage", "usage": {"elapsed_ms": 1000, "cpu_percent": 98.5, "memory_bytes": 1048576, "pids": 3}},
            {"type": "result", "result": {"id": "r", "success": True, "peak_cpu_percent": 98.5, "peak_memory_bytes": 1048576, "peak_pids": 3}},
        ])
        c = Client("http://127.0.0.1:1")
        c._server = lambda kind: fake  # type: ignore[assignment,method-assign]
        got = list(c.stream_exec("hello", "x", usage_every_ms=1000))
        self.assertEqual([type(g) for g in got], [Event, Event, Result])
        ev = got[1]
        assert isinstance(ev, Event)
        self.assertEqual(ev.type, "usage")
        self.assertEqual(ev.usage, LiveUsage(elapsed_ms=1000, cpu_percent=98.5, memory_bytes=1048576, pids=3))
        res = got[2]
        assert isinstance(res, Result)
        self.assertEqual((res.peak_cpu_percent, res.peak_memory_bytes, res.peak_pids), (98.5, 1048576, 3))
        self.assertEqual(fake.body["usage_every_ms"], 1000)

    def test_zero_is_sent(self) -> None:
        self.assertEqual(client_mod._body("command", "x", {"usage_every_ms": 0})["usage_every_ms"], 0)
        self.assertNotIn("usage_every_ms", client_mod._body("command", "x", {}))

    def test_local_mode_says_it_has_no_samples(self) -> None:
        with self.assertRaisesRegex(LocalModeError, "usage_every_ms"):
            client_mod._no_local_usage({"usage_every_ms": 1000})


BURN = """import time
held = bytearray(64 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
end = time.time() + 3
while time.time() < end:
    pass
print("done")
"""


class AgainstAServer(unittest.TestCase):
    """A real serve on the real engine: a 3 s run shows its use."""

    server: Optional[_harness.Server] = None

    @classmethod
    def setUpClass(cls) -> None:
        _harness.require_docker()
        cls.server = _harness.Server(flags=["--warm-pool", "0"])

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.server is not None:
            cls.server.stop()

    def test_a_busy_run_shows_usage_events(self) -> None:
        assert self.server is not None
        items = list(Client(self.server.url).stream_python("hello", BURN, usage_every_ms=1000))
        res = items[-1]
        assert isinstance(res, Result)
        self.assertTrue(res.success, res.stderr)
        usage = [i.usage for i in items if isinstance(i, Event) and i.type == "usage" and i.usage is not None]
        self.assertGreaterEqual(len(usage), 1, items)
        self.assertTrue(all(u.memory_bytes > 0 for u in usage), usage)
        self.assertEqual(res.peak_memory_bytes, max(u.memory_bytes for u in usage))
        self.assertGreaterEqual(res.peak_memory_bytes, 48 << 20)


if __name__ == "__main__":
    unittest.main()
