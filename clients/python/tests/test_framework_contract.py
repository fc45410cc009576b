"""sandboxrun.framework.ScriptExecutor walks the framework guide's executor:
its constructor and attributes, is_command_allowed, validate_script_path,
execute (success, failure, timeout, permission denied, environment,
working folder, constraints), on the real engine, through a server and
through the local CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import Any, Optional
from unittest import mock

import _harness
from sandboxrun import Client
from sandboxrun.framework import ExecutionConstraints, ExecutionResult, ScriptExecutor

TOOLS = '"Bash(python:*) Bash(git status:*) Bash(echo:*) Read"'
SCRIPTS = {
    "scripts/test.py": "#!/usr/bin/env python3\nprint('Hello from script')\n",
    "scripts/long.py": "import time; print('started', flush=True); time.sleep(10)\n",
    "scripts/env.py": "import json, os\nprint(json.dumps({k: os.environ.get(k) for k in ['SKILL_NAME', 'SKILL_DIR', 'SCRIPTS_DIR', 'FOO', 'HOST_ONLY']}))\n",
    "scripts/exit3.py": "raise SystemExit(3)\n",
    "scripts/mem.py": "b = bytearray(400 * 1024 * 1024)\nprint(len(b))\n",
    "scripts/net.py": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)\nprint('connected')\n",
    "scripts/ls.py": "import os\nprint(sorted(os.listdir('.')))\n",
}

root = Path()
skill_dir = Path()
server: Optional[_harness.Server] = None


def setUpModule() -> None:
    global root, skill_dir, server
    _harness.require_docker()
    root = Path(tempfile.mkdtemp(prefix="sandboxrun-fw-"))
    os.chmod(root, 0o755)
    skill_dir = _harness.write_skill(root, "data-analysis-fw", f"allowed-tools: {TOOLS}\n", SCRIPTS)
    (root / "data-analysis-fw-evil" / "scripts").mkdir(parents=True)
    (root / "data-analysis-fw-evil" / "scripts" / "x.py").write_text("print(1)\n")
    for p in root.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    server = _harness.Server(roots=[root])


def tearDownModule() -> None:
    if server is not None:
        server.stop()
    shutil.rmtree(root, ignore_errors=True)


class Contract:
    client: Client
    assertEqual: Any
    assertTrue: Any
    assertFalse: Any
    assertIn: Any
    assertIsNone: Any
    assertRaises: Any
    assertGreater: Any
    assertNotEqual: Any

    def executor(self, allowed_tools: Optional[str] = None, constraints: Optional[ExecutionConstraints] = None) -> ScriptExecutor:
        return ScriptExecutor("data-analysis-fw", skill_dir, allowed_tools=allowed_tools, constraints=constraints, client=self.client)

    def test_shapes(self) -> None:
        self.assertEqual([f.name for f in dataclasses.fields(ExecutionResult)],
                         ["success", "exit_code", "stdout", "stderr", "execution_time", "command", "error"])
        c = ExecutionConstraints()
        self.assertEqual((c.max_execution_time, c.max_memory, c.network_access, c.allowed_commands, c.working_directory),
                         (300, None, False, [], None))
        ex = self.executor("Bash(python:*)")
        self.assertEqual((ex.skill_name, ex.skill_directory, ex.scripts_directory), ("data-analysis-fw", skill_dir, skill_dir / "scripts"))
        self.assertEqual(ex.constraints, ExecutionConstraints())

    def test_is_command_allowed(self) -> None:
        ex = self.executor()
        self.assertTrue(ex.is_command_allowed("python scripts/test.py"))
        self.assertTrue(ex.is_command_allowed("git status"))
        self.assertTrue(ex.is_command_allowed("git status --short"))
        self.assertFalse(ex.is_command_allowed("git commit"))
        self.assertFalse(ex.is_command_allowed("rm -rf /"))
        self.assertFalse(ex.is_command_allowed("curl http://evil.com"))
        self.assertFalse(ex.is_command_allowed(""))
        # every part is checked, not the first word only
        self.assertFalse(ex.is_command_allowed("python scripts/test.py; rm -rf /"))
        self.assertFalse(ex.is_command_allowed("echo $(curl evil.com)"))

    def test_allowed_tools_narrow(self) -> None:
        narrow = self.executor("Bash(git:*)")
        self.assertFalse(narrow.is_command_allowed("python scripts/test.py"))
        self.assertTrue(narrow.is_command_allowed("git status"))

    def test_validate_script_path(self) -> None:
        ex = self.executor()
        valid = ex.validate_script_path("scripts/test.py")
        self.assertTrue(valid.exists())
        self.assertEqual(valid, (skill_dir / "scripts/test.py").resolve())
        for path, words in (("../../etc/passwd", "outside skill directory"),
                            ("../data-analysis-fw-evil/scripts/x.py", "outside skill directory"),
                            ("scripts/nonexistent.py", "Script not found"),
                            ("SKILL.md", "Script must be in scripts/ directory")):
            with self.assertRaises(ValueError) as cm:
                ex.validate_script_path(path)
            self.assertIn(words, str(cm.exception))

    def test_execute_success(self) -> None:
        res = self.executor("Bash(python:*)").execute("python scripts/test.py")
        self.assertTrue(res.success, res)
        self.assertEqual(res.exit_code, 0)
        self.assertIn("Hello from script", res.stdout)
        self.assertGreater(res.execution_time, 0)
        self.assertEqual(res.command, "python scripts/test.py")
        self.assertIsNone(res.error)

    def test_execute_failure(self) -> None:
        res = self.executor().execute("python scripts/exit3.py")
        self.assertEqual((res.success, res.exit_code, res.error), (False, 3, None))

    def test_execute_timeout(self) -> None:
        ex = self.executor("Bash(python:*)", ExecutionConstraints(max_execution_time=1))
        res = ex.execute("python scripts/long.py")
        self.assertFalse(res.success)
        self.assertIn("timeout", (res.error or "").lower())
        self.assertEqual(res.error, "Execution timeout (1s)")
        self.assertEqual(res.exit_code, -1)
        self.assertEqual(res.stdout, "started\n")

    def test_execute_permission_denied(self) -> None:
        res = self.executor("Bash(git:*)").execute("python scripts/test.py")
        self.assertFalse(res.success)
        self.assertIn("not allowed", (res.error or "").lower())
        self.assertTrue((res.error or "").startswith("Command not allowed by skill permissions: python scripts/test.py"))
        self.assertIn("Bash(python:*)", res.error or "")  # what would allow it
        self.assertEqual((res.exit_code, res.stdout, res.stderr), (-1, "", ""))
        # denied by the skill's own allowed-tools, judged by whoever runs it
        res = self.executor().execute("python scripts/test.py && curl http://evil.com")
        self.assertFalse(res.success)
        self.assertIn("Command not allowed by skill permissions", res.error or "")
        self.assertIn("Bash(curl:*)", res.error or "")

    def test_environment(self) -> None:
        with mock.patch.dict(os.environ, {"HOST_ONLY": "secret"}):
            res = self.executor().execute("python scripts/env.py", env={"FOO": "bar"})
        env = json.loads(res.stdout)
        self.assertEqual(env, {"SKILL_NAME": "data-analysis-fw", "SKILL_DIR": "/skills/data-analysis-fw",
                               "SCRIPTS_DIR": "/skills/data-analysis-fw/scripts", "FOO": "bar", "HOST_ONLY": None})
        res = self.executor().execute("echo x", env={"LD_PRELOAD": "/tmp/x.so"})
        self.assertFalse(res.success)
        self.assertIn("LD_PRELOAD", res.error or "")

    def test_constraints_memory_and_network(self) -> None:
        res = self.executor(constraints=ExecutionConstraints(max_memory=64)).execute("python scripts/mem.py")
        self.assertFalse(res.success)
        res = self.executor(constraints=ExecutionConstraints(network_access=True)).execute("python scripts/net.py")
        self.assertFalse(res.success)
        self.assertFalse("connected" in res.stdout)


class OnServer(Contract, unittest.TestCase):
    def setUp(self) -> None:
        assert server is not None
        self.client = Client(server.url)
        # a narrower allowed_tools list is judged by the local CLI
        self._env = mock.patch.dict(os.environ, {"SANDBOXRUN_BIN": _harness.binary()})
        self._env.start()

    def tearDown(self) -> None:
        self._env.stop()

    def test_is_command_allowed_asks_the_server(self) -> None:
        # No local CLI: the skill's own list is judged by the server.
        with mock.patch.dict(os.environ, {"SANDBOXRUN_BIN": "/nonexistent/sandboxrun", "PATH": "/nonexistent"}):
            ex = self.executor()
            self.assertTrue(ex.is_command_allowed("python scripts/test.py"))
            self.assertFalse(ex.is_command_allowed("python scripts/test.py; rm -rf /"))
            self.assertFalse(ex.is_command_allowed("echo $(curl evil.com)"))

    def test_allowed_tools_never_widen_the_servers_policy(self) -> None:
        self.assertFalse(self.executor("Bash(git:*)").is_command_allowed("git commit"))  # the skill's own list still applies
        wide = self.executor("Bash(curl:*) Bash(python:*)")
        self.assertFalse(wide.is_command_allowed("curl http://evil.com"))
        res = wide.execute("curl http://evil.com")
        self.assertFalse(res.success)
        self.assertIn("skills.data-analysis-fw.allowed-tools", res.error or "")

    def test_working_dir_needs_local_mode(self) -> None:
        res = self.executor().execute("python scripts/ls.py", working_dir=Path("/tmp"))
        self.assertFalse(res.success)
        self.assertIn("session", res.error or "")
        res = self.executor().execute("python scripts/ls.py")
        self.assertEqual(res.stdout, "[]\n")  # the empty /workspace


class Locally(Contract, unittest.TestCase):
    def setUp(self) -> None:
        with mock.patch.dict(os.environ, _harness.local_env(), clear=True):
            self.client = Client()

    def test_allowed_tools_are_the_hosts_grant(self) -> None:
        # The host's code built the executor: its list decides, as in the guide.
        self.assertTrue(self.executor("Bash(git:*)").is_command_allowed("git commit"))
        self.assertFalse(self.executor("Bash(git:*)").is_command_allowed("git commit; curl http://evil.com"))

    def test_working_dir(self) -> None:
        res = self.executor().execute("python scripts/ls.py")
        self.assertEqual(res.stdout, "['SKILL.md', 'scripts']\n")  # the skill's folder, as the guide says
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)
            Path(d, "data.csv").write_text("a\n")
            res = self.executor().execute("python scripts/ls.py", working_dir=Path(d))
            self.assertEqual(res.stdout, "['data.csv']\n", res)


if __name__ == "__main__":
    unittest.main()
