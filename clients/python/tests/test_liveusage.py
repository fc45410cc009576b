"""Live usage events: how the client reads them and asks for them (no server)."""

from __future__ import annotations

import unittest
from typing import Any, Dict, Iterator, List

import _harness  # noqa: F401  (puts the package under test on the path)
from sandboxrun import Client, Event, LocalModeError, Result, Usage
from sandboxrun import client as client_mod


class FakeTransport:
    """Answers a stream with the lines given, and keeps the body sent."""

    def __init__(self, docs: List[Dict[str, Any]]) -> None:
        self.docs = docs
        self.body: Dict[str, Any] = {}

    def lines(self, method: str, path: str, body: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        self.body = body
        yield from self.docs


class LiveUsage(unittest.TestCase):
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
        self.assertEqual(ev.usage, Usage(elapsed_ms=1000, cpu_percent=98.5, memory_bytes=1048576, pids=3))
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


if __name__ == "__main__":
    unittest.main()
