"""sandboxrun.tools.run_python_script walks the run_python_script tool's
contract: its input schema, and each documented example and error row,
against sandboxrun on the real engine (server and local CLI)."""

from __future__ import annotations

import inspect
import json
import os
import tempfile
import unittest
from typing import Any, Optional
from unittest import mock

import _harness
from sandboxrun import Client
from sandboxrun.tools import RUN_PYTHON_SCRIPT_SCHEMA, RUN_PYTHON_SCRIPT_TOOL, run_python_script

server: Optional[_harness.Server] = None
SUCCESS_KEYS = {"skill_name", "stdout", "stderr", "returncode", "timed_out"}


def setUpModule() -> None:
    global server
    _harness.require_docker()
    server = _harness.Server()


def tearDownModule() -> None:
    if server is not None:
        server.stop()


class Contract:
    client: Client
    assertEqual: Any
    assertIn: Any
    assertNotEqual: Any
    assertFalse: Any

    def call(self, skill: str, script: str, **kw: Any) -> Any:
        out = run_python_script(skill, script, client=self.client, **kw)
        json.dumps(out)  # the tool result message carries it as JSON text
        return out

    def test_input_schema_and_signature(self) -> None:
        self.assertEqual(RUN_PYTHON_SCRIPT_SCHEMA, {
            "type": "object",
            "properties": {
                "skill_name": {"type": "string", "description": "Name of the skill whose venv to use"},
                "script": {"type": "string", "description": "Python code to execute"},
            },
            "required": ["skill_name", "script"],
        })
        self.assertEqual(RUN_PYTHON_SCRIPT_TOOL["function"]["name"], "run_python_script")
        params = inspect.signature(run_python_script).parameters
        self.assertEqual(list(params)[:3], ["skill_name", "script", "timeout"])
        self.assertEqual(params["timeout"].default, 30)

    def test_example_1_success(self) -> None:
        out = self.call("hello", "result = 2 + 2\nprint(f'Result: {result}')")
        self.assertEqual(out, {"skill_name": "hello", "stdout": "Result: 4\n", "stderr": "", "returncode": 0, "timed_out": False})

    def test_example_2_syntax_error(self) -> None:
        out = self.call("hello", "print(2 + )")
        self.assertEqual(set(out), SUCCESS_KEYS)
        self.assertEqual((out["stdout"], out["returncode"], out["timed_out"]), ("", 1, False))
        self.assertIn("SyntaxError: invalid syntax", out["stderr"])

    def test_example_3_runtime_error(self) -> None:
        out = self.call("hello", "x = 1 / 0")
        self.assertEqual(out["returncode"], 1)
        self.assertIn("Traceback (most recent call last):", out["stderr"])
        self.assertIn("ZeroDivisionError: division by zero", out["stderr"])

    def test_example_4_timeout(self) -> None:
        out = self.call("hello", "import time\nprint('partial', flush=True)\nwhile True:\n    time.sleep(1)", timeout=1)
        self.assertEqual(set(out), SUCCESS_KEYS | {"error"})
        self.assertEqual((out["returncode"], out["timed_out"]), (-1, True))
        self.assertEqual(out["error"], "Script execution exceeded timeout of 1 seconds")
        self.assertEqual(out["stdout"], "partial\n")

    def test_example_6_invalid_skill_name(self) -> None:
        for name in ("../../../etc", "a/b", "a\\b", "..", ""):
            out = self.call(name, "print('hello')")
            self.assertEqual(out, {"error": f"Invalid skill name: '{name}'. Skill names must not contain '/', '\\', or '..'"})

    def test_skill_not_found(self) -> None:
        self.assertEqual(self.call("no_such_skill", "print(1)"), {"error": "Skill 'no_such_skill' not found in skills folder"})

    def test_example_7_writes_without_a_session_touch_nothing(self) -> None:
        # The seed wrote into the skill's folder on the host; here the working
        # folder is read-only and the skill's folder is never written.
        out = self.call("hello", "with open('output.txt', 'w') as f:\n    f.write('Result: 42')\nprint('File written')")
        self.assertNotEqual(out["returncode"], 0)
        self.assertIn("Read-only file system", out["stderr"])
        self.assertFalse((_harness.SKILLS / "hello" / "output.txt").exists())

    def test_the_host_is_out_of_reach(self) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write("host secret")
            f.flush()
            os.chmod(f.name, 0o644)
            with mock.patch.dict(os.environ, {"HOST_ONLY": "secret"}):
                out = self.call("hello", f"import os\nprint(os.path.exists({f.name!r}), os.environ.get('HOST_ONLY'))")
        self.assertEqual(out["stdout"], "False None\n")
        out = self.call("hello", "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)")
        self.assertNotEqual(out["returncode"], 0)


class OnServer(Contract, unittest.TestCase):
    def setUp(self) -> None:
        assert server is not None
        self.client = Client(server.url)

    def test_example_7_with_a_session(self) -> None:
        with self.client.create_session() as s:
            out = self.call("hello", "with open('output.txt', 'w') as f:\n    f.write('Result: 42')\nprint('File written')",
                            session=s.id)
            self.assertEqual(out, {"skill_name": "hello", "stdout": "File written\n", "stderr": "", "returncode": 0, "timed_out": False})
            self.assertEqual(s.download("output.txt"), b"Result: 42")


class Locally(Contract, unittest.TestCase):
    def setUp(self) -> None:
        with mock.patch.dict(os.environ, _harness.local_env(), clear=True):
            self.client = Client(skills=str(_harness.SKILLS))


if __name__ == "__main__":
    unittest.main()
