"""A list of sessions that lacks a replica's is never taken for whole: the
client raises PartialListError with the sessions that came. A stdlib HTTP
server gives the answers a server of several replicas gives."""

from __future__ import annotations

import http.server
import json
import threading
import unittest

import _harness  # noqa: F401  (puts the package under test on the path)
import sandboxrun


class _Lists(http.server.BaseHTTPRequestHandler):
    answer: dict = {}

    def do_GET(self) -> None:
        body = json.dumps(self.answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class PartialListTest(unittest.TestCase):
    def setUp(self) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Lists)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.client = sandboxrun.Client(f"http://127.0.0.1:{self.server.server_address[1]}", token="t")

    def test_whole(self) -> None:
        _Lists.answer = {"sessions": [{"id": "r-0-a"}, {"id": "r-1-b"}], "partial": False, "unreachable": []}
        self.assertEqual([s.id for s in self.client.list_sessions()], ["r-0-a", "r-1-b"])

    def test_a_replica_away(self) -> None:
        _Lists.answer = {"sessions": [{"id": "r-0-a"}], "partial": True, "unreachable": ["r-1"]}
        with self.assertRaises(sandboxrun.PartialListError) as cm:
            self.client.list_sessions()
        self.assertEqual([s.id for s in cm.exception.items], ["r-0-a"])
        self.assertEqual(cm.exception.unreachable, ["r-1"])
        self.assertIn("r-1", cm.exception.message)

    def test_peers_unknown(self) -> None:
        _Lists.answer = {"sessions": [], "partial": True, "unreachable": []}
        with self.assertRaises(sandboxrun.PartialListError) as cm:
            self.client.list_sessions()
        self.assertIn("--replicas", cm.exception.message)


if __name__ == "__main__":
    unittest.main()
