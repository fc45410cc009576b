"""Ids, names and file paths a router would resolve to another resource are
refused before sending, and a redirect is never followed. These tests need
no sandboxrun server: a stdlib HTTP server records what reaches it."""

from __future__ import annotations

import http.server
import json
import threading
import unittest
from typing import List

import _harness  # noqa: F401  (puts the package under test on the path)
import sandboxrun


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request under /moved with a 307 to the same path
    without it (as Go's ServeMux does for a path it cleans); any other
    request is recorded and answered 204 (a DELETE) or a small JSON."""

    seen: List[str] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.path.startswith("/moved/"):
            self.send_response(307)
            self.send_header("Location", self.path[len("/moved"):])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.seen.append(f"{self.command} {self.path}")
        if self.command == "DELETE":
            self.send_response(204)
            self.end_headers()
            return
        body = json.dumps({"id": "S", "path": "x", "size": 1, "sha256": ""}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


class ParamsTest(unittest.TestCase):
    def setUp(self) -> None:
        _Recorder.seen = []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def test_unclean_ids_are_refused_before_sending(self) -> None:
        c = sandboxrun.Client(self.url, token="t")
        calls = {
            "snapshot ..": lambda: c.delete_snapshot("S", ".."),
            "snapshot .": lambda: c.delete_snapshot("S", "."),
            "snapshot empty": lambda: c.delete_snapshot("S", ""),
            "snapshot slash": lambda: c.delete_snapshot("S", "x/.."),
            "session ..": lambda: c.delete_session(".."),
            "session backslash": lambda: c.get_session("a\\b"),
            "version ..": lambda: c.delete_skill_version("greeter", ".."),
            "skill ..": lambda: c.delete_skill(".."),
            "skill slash": lambda: c.activate("a/b"),
            "run ..": lambda: c.run("..", "scripts/x.py"),
            "file ..": lambda: c.put_file("S", "a/../../x", b"x"),
            "file trailing": lambda: c.put_file("S", "a/", b"x"),
            "file absolute": lambda: c.delete_file("S", "/etc/passwd"),
            "file .": lambda: c.get_file("S", "./a"),
        }
        for name, call in calls.items():
            with self.subTest(name):
                with self.assertRaises(sandboxrun.BadParamError) as cm:
                    call()
                self.assertIsInstance(cm.exception, ValueError)
                self.assertIsInstance(cm.exception, sandboxrun.BadRequestError)
                self.assertIsNone(cm.exception.status, "no server answered")
                self.assertIn("'..'", cm.exception.message)
        self.assertEqual(_Recorder.seen, [], "nothing was sent")

        c.delete_snapshot("S", "1.2")  # a dot inside a name is fine
        c.put_file("S", "out/.hidden/a..b", b"x")
        self.assertEqual(_Recorder.seen, ["DELETE /v1/sessions/S/snapshots/1.2", "PUT /v1/sessions/S/files/out/.hidden/a..b"])

    def test_a_redirect_is_an_error_never_followed(self) -> None:
        c = sandboxrun.Client(self.url + "/moved", token="t")
        for name, call in {
            "delete": lambda: c.delete_session("S"),
            "get": lambda: c.get_session("S"),
            "put": lambda: c.put_file("S", "x", b"x"),
        }.items():
            with self.subTest(name):
                with self.assertRaises(sandboxrun.RedirectError) as cm:
                    call()
                self.assertEqual(cm.exception.status, 307)
                self.assertEqual(cm.exception.location, "/v1/sessions/S" + ("/files/x" if name == "put" else ""))
                self.assertIn("not followed", cm.exception.message)
        self.assertEqual(_Recorder.seen, [], "no redirect was followed")


if __name__ == "__main__":
    unittest.main()
