"""The framework guide's own unit tests for its executor (code-execution
spec, section 5.1), held against sandboxrun.framework.ScriptExecutor on
the real engine. Their skill's SKILL.md declares no allowed-tools: the
executor's ``allowed_tools`` decide, as in the guide. Locally they are the
host's grant for the skill; over a server its operator policy decides,
and a refusal names the policy key to set.

Differences from the guide kept on purpose: ``allowed_tools`` stays the
string given (sandboxrun's checker parses it), and every part of a
command is checked, not its first word."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import Any, Optional
from unittest import mock

import _harness
from sandboxrun import Client
from sandboxrun.framework import ExecutionConstraints, ScriptExecutor

SKILL = "data-analysis-seed"
SCRIPTS = {
    "scripts/test.py": "#!/usr/bin/env python3\nprint('Hello from script')\n",
    "scripts/long.py": "import time; time.sleep(10)\n",
}

root = Path()
skill_dir = Path()
greedy_dir = Path()
server: Optional[_harness.Server] = None
granting: Optional[_harness.Server] = None


def setUpModule() -> None:
    global root, skill_dir, greedy_dir, server, granting
    _harness.require_docker()
    root = Path(tempfile.mkdtemp(prefix="sandboxrun-seed-"))
    skill_dir = _harness.write_skill(root, SKILL, "", SCRIPTS)
    # A skill that asks for more than the host's code grants it.
    greedy_dir = _harness.write_skill(root, SKILL + "-greedy", "allowed-tools: Bash(curl:*) Bash(python:*)\n", SCRIPTS)
    for p in [root, *root.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    server = _harness.Server(roots=[root])
    granting = _harness.Server(roots=[root], policy=f"skills:\n  {SKILL}:\n    allowed-tools: Bash(python:*)\n")


def tearDownModule() -> None:
    for s in (server, granting):
        if s is not None:
            s.stop()
    shutil.rmtree(root, ignore_errors=True)


class Seed:
    """The guide's cases; each class says who runs the commands."""

    client: Client
    assertEqual: Any
    assertTrue: Any
    assertFalse: Any
    assertIn: Any
    assertRaises: Any
    assertGreater: Any

    def executor(self, allowed_tools: Optional[str], constraints: Optional[ExecutionConstraints] = None,
                 folder: Optional[Path] = None) -> ScriptExecutor:
        folder = folder or skill_dir
        return ScriptExecutor(folder.name, folder, allowed_tools=allowed_tools, constraints=constraints, client=self.client)

    def test_allowed_tools_are_kept_as_given(self) -> None:
        ex = self.executor("Bash(git:*) Bash(python:*) Read Write")
        self.assertEqual(ex.allowed_tools, "Bash(git:*) Bash(python:*) Read Write")

    def test_validate_script_path(self) -> None:
        ex = self.executor("Bash(python:*)")
        self.assertTrue(ex.validate_script_path("scripts/test.py").exists())
        with self.assertRaises(ValueError) as cm:
            ex.validate_script_path("../../etc/passwd")
        self.assertIn("outside skill directory", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            ex.validate_script_path("scripts/nonexistent.py")
        self.assertIn("Script not found", str(cm.exception))

    def test_execute_permission_denied(self) -> None:
        res = self.executor("Bash(git:*)").execute("python scripts/test.py")
        self.assertFalse(res.success)
        self.assertIn("not allowed", (res.error or "").lower())

    def test_the_skill_never_widens_the_list(self) -> None:
        ex = self.executor("Bash(python:*)", folder=greedy_dir)
        self.assertFalse(ex.is_command_allowed("curl http://evil.com"))
        res = ex.execute("curl http://evil.com")
        self.assertFalse(res.success)
        self.assertIn("not allowed", (res.error or "").lower())


class Locally(Seed, unittest.TestCase):
    def setUp(self) -> None:
        with mock.patch.dict(os.environ, _harness.local_env(), clear=True):
            self.client = Client()

    def test_allowed_tools_are_parsed(self) -> None:
        ex = self.executor("Bash(git:*) Bash(python:*) Read Write")
        self.assertTrue(ex.is_command_allowed("git status"))
        self.assertTrue(ex.is_command_allowed("python scripts/test.py"))
        self.assertFalse(ex.is_command_allowed("rm -rf /"))

    def test_is_command_allowed(self) -> None:
        ex = self.executor("Bash(python:*) Bash(git:*)")
        self.assertTrue(ex.is_command_allowed("python scripts/test.py"))
        self.assertTrue(ex.is_command_allowed("git status"))
        self.assertFalse(ex.is_command_allowed("rm -rf /"))
        self.assertFalse(ex.is_command_allowed("curl http://evil.com"))
        # every part, not the first word
        self.assertFalse(ex.is_command_allowed("python scripts/test.py; curl http://evil.com"))

    def test_execute_success(self) -> None:
        res = self.executor("Bash(python:*)").execute("python scripts/test.py")
        self.assertTrue(res.success, res)
        self.assertEqual(res.exit_code, 0)
        self.assertIn("Hello from script", res.stdout)
        self.assertGreater(res.execution_time, 0)

    def test_execute_timeout(self) -> None:
        ex = self.executor("Bash(python:*)", ExecutionConstraints(max_execution_time=1))
        res = ex.execute("python scripts/long.py")
        self.assertFalse(res.success)
        self.assertIn("timeout", (res.error or "").lower())

    def test_no_list_no_grant(self) -> None:
        # Without the host's list, the skill declares nothing: refused.
        res = self.executor(None).execute("python scripts/test.py")
        self.assertFalse(res.success)
        self.assertIn("not allowed", (res.error or "").lower())


class OnServer(Seed, unittest.TestCase):
    def setUp(self) -> None:
        assert server is not None
        self.client = Client(server.url)
        # a narrower allowed_tools list is judged by the local CLI
        self._env = mock.patch.dict(os.environ, {"SANDBOXRUN_BIN": _harness.binary()})
        self._env.start()

    def tearDown(self) -> None:
        self._env.stop()

    def test_the_servers_policy_decides(self) -> None:
        ex = self.executor("Bash(python:*)")
        self.assertFalse(ex.is_command_allowed("python scripts/test.py"))
        res = ex.execute("python scripts/test.py")
        self.assertFalse(res.success)
        self.assertIn("not allowed", (res.error or "").lower())
        self.assertIn(f"skills.{SKILL}.allowed-tools", res.error or "")
        self.assertIn("Bash(python:*)", res.error or "")

    def test_granted_by_the_servers_policy(self) -> None:
        assert granting is not None
        self.client = Client(granting.url)
        ex = self.executor("Bash(python:*)")
        self.assertTrue(ex.is_command_allowed("python scripts/test.py"))
        res = ex.execute("python scripts/test.py")
        self.assertTrue(res.success, res)
        self.assertIn("Hello from script", res.stdout)
        res = self.executor("Bash(python:*)", ExecutionConstraints(max_execution_time=1)).execute("python scripts/long.py")
        self.assertFalse(res.success)
        self.assertIn("timeout", (res.error or "").lower())


if __name__ == "__main__":
    unittest.main()
