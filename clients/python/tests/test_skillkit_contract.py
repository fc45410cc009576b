"""sandboxrun.skillkit.ScriptExecutor walks skillkit's ScriptExecutor contract
(v0.3.0) case by case: the contract's required tests, against sandboxrun on
the real engine, through a server and through the local CLI."""

from __future__ import annotations

import math
import os
import shutil
import signal
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, Optional
from unittest import mock

import _harness
from sandboxrun import Client
from sandboxrun.skillkit import (
    ArgumentSerializationError,
    ArgumentSizeError,
    InterpreterNotFoundError,
    PathSecurityError,
    ScriptExecutionResult,
    ScriptExecutor,
    ScriptPermissionError,
    SkillMetadata,
)

MiB = 1024 * 1024
SCRIPTS = {
    "scripts/ok.py": "import json, os, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'args': args, 'cwd': os.getcwd()}))\n",
    "scripts/fail.py": "import sys\nprint('bad input', file=sys.stderr)\nsys.exit(1)\n",
    "scripts/sleep.py": "import time\nprint('partial', flush=True)\ntime.sleep(60)\n",
    "scripts/segv.py": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
    "scripts/kill.sh": "kill -KILL $$\n",
    "scripts/big.py": "import sys\nchunk = 'x' * 65536\nfor _ in range(11 * 16):\n    sys.stdout.write(chunk)\n",
    "scripts/bytes.py": "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')\nsys.stderr.buffer.write(b'\\xc3\\x28\\n')\n",
    "scripts/env.py": "import json, os\nprint(json.dumps({k: os.environ.get(k) for k in ['SKILL_NAME', 'SKILL_BASE_DIR', 'SKILL_VERSION', 'SKILLKIT_VERSION', 'SECRET_FROM_HOST']}))\n",
    "scripts/tool.rb": "#!/usr/bin/env ruby\nputs 1\n",
    "scripts/noext": "echo no interpreter\n",
    "scripts/setuid.py": "print(1)\n",
    "scripts/setgid.py": "print(1)\n",
}

root = Path()
skill_dir = Path()
meta = SkillMetadata(name="kit", version="2.1.0")
server: Optional[_harness.Server] = None


def setUpModule() -> None:
    global root, skill_dir, server
    _harness.require_docker()
    root = Path(tempfile.mkdtemp(prefix="sandboxrun-kit-"))
    os.chmod(root, 0o755)
    skill_dir = _harness.write_skill(root, "kit", 'metadata:\n  version: "2.1.0"\n', SCRIPTS)
    for p in skill_dir.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    os.chmod(skill_dir / "scripts/setuid.py", 0o4755)
    os.chmod(skill_dir / "scripts/setgid.py", 0o2755)
    (skill_dir / "scripts/outside.py").symlink_to("/etc/passwd")
    (skill_dir / "scripts/alias.py").symlink_to(skill_dir / "scripts/ok.py")
    server = _harness.Server(roots=[root])


def tearDownModule() -> None:
    if server is not None:
        server.stop()
    shutil.rmtree(root, ignore_errors=True)


class Contract:
    """The cases; a subclass says which Client (server or local CLI) runs them."""

    client: Client
    assertEqual: Any
    assertTrue: Any
    assertFalse: Any
    assertIn: Any
    assertIsNone: Any
    assertRaises: Any
    assertGreater: Any
    assertLessEqual: Any
    assertLogs: Any
    assertNotIn: Any

    def executor(self, **kw: Any) -> ScriptExecutor:
        return ScriptExecutor(client=self.client, **kw)

    def run_script(self, name: str, args: Optional[Dict[str, Any]] = None, **kw: Any) -> ScriptExecutionResult:
        ex = kw.pop("executor", None) or self.executor()
        res = ex.execute(skill_dir / name, args or {}, skill_dir, meta, **kw)
        self.check_postconditions(res)
        return res

    def check_postconditions(self, res: ScriptExecutionResult) -> None:
        self.assertTrue(isinstance(res, ScriptExecutionResult))
        self.assertTrue(isinstance(res.exit_code, int))
        self.assertTrue(isinstance(res.stdout, str) and isinstance(res.stderr, str))
        self.assertGreater(res.execution_time_ms, 0)
        if res.signal is not None:
            self.assertTrue(res.exit_code < 0)
            self.assertEqual(res.signal_number, -res.exit_code)
        if res.timeout:
            self.assertEqual(res.exit_code, 124)
            self.assertIn("Timeout", res.stderr)

    # -- required tests ------------------------------------------------------

    def test_success_exit_0(self) -> None:
        with self.assertLogs("sandboxrun.skillkit", level="INFO") as logs:
            res = self.run_script("scripts/ok.py", {"file": "doc.pdf"})
        self.assertTrue(res.success)
        self.assertEqual(res.exit_code, 0)
        self.assertIn('"args": {"file": "doc.pdf"}', res.stdout)
        self.assertEqual(res.script_path, skill_dir / "scripts/ok.py")
        self.assertFalse(res.signaled or res.timeout or res.stdout_truncated)
        self.assertIn("Script executed: ok.py | exit_code=0 | time=", logs.output[0])

    def test_failure_exit_1(self) -> None:
        with self.assertLogs("sandboxrun.skillkit", level="ERROR") as logs:
            res = self.run_script("scripts/fail.py")
        self.assertFalse(res.success)
        self.assertEqual(res.exit_code, 1)
        self.assertEqual(res.stderr, "bad input\n")
        self.assertIn("Script failed: fail.py | exit_code=1", logs.output[0])
        self.assertIn("error=bad input", logs.output[0])

    def test_timeout_exit_124(self) -> None:
        with self.assertLogs("sandboxrun.skillkit", level="WARNING") as logs:
            res = self.run_script("scripts/sleep.py", executor=self.executor(timeout=1))
        self.assertTrue(res.timeout)
        self.assertEqual(res.exit_code, 124)
        self.assertIn("Timeout", res.stderr)
        self.assertEqual(res.stdout, "partial\n")
        self.assertIsNone(res.signal)
        self.assertIn("Script timeout: sleep.py exceeded 1s", "\n".join(logs.output))
        # the per-call timeout overrides the default
        res = self.run_script("scripts/sleep.py", timeout=1)
        self.assertTrue(res.timeout)

    def test_timeout_outside_1_to_600_is_a_value_error(self) -> None:
        for bad in (0, 601, -5):
            with self.assertRaises(ValueError):
                ScriptExecutor(timeout=bad)
        with self.assertRaises(ValueError):
            self.executor().execute(skill_dir / "scripts/ok.py", {}, skill_dir, meta, timeout=700)

    def test_signals_sigsegv_and_sigkill(self) -> None:
        res = self.run_script("scripts/segv.py")
        self.assertTrue(res.signaled)
        self.assertEqual((res.signal, res.signal_number, res.exit_code), ("SIGSEGV", signal.SIGSEGV, -signal.SIGSEGV))
        res = self.run_script("scripts/kill.sh")
        self.assertEqual((res.signal, res.signal_number, res.exit_code), ("SIGKILL", 9, -9))

    def test_path_traversal_is_refused(self) -> None:
        ex = self.executor()
        for path in (skill_dir / "scripts/../../../etc/passwd", Path("/etc/passwd"), Path("../../etc/passwd")):
            with self.assertRaises(PathSecurityError) as cm:
                ex.execute(path, {}, skill_dir, meta)
            self.assertIn("Script path escapes skill directory", str(cm.exception))

    def test_symlinks(self) -> None:
        with self.assertRaises(PathSecurityError):
            self.executor().execute(skill_dir / "scripts/outside.py", {}, skill_dir, meta)
        res = self.run_script("scripts/alias.py", {"via": "link"})
        self.assertIn('"via": "link"', res.stdout)

    def test_setuid_and_setgid_are_refused(self) -> None:
        with self.assertRaises(ScriptPermissionError) as cm:
            self.executor().execute(skill_dir / "scripts/setuid.py", {}, skill_dir, meta)
        self.assertEqual(str(cm.exception), "Script has setuid bit: scripts/setuid.py")
        with self.assertRaises(ScriptPermissionError) as cm:
            self.executor().execute(skill_dir / "scripts/setgid.py", {}, skill_dir, meta)
        self.assertIn("setgid", str(cm.exception))

    def test_missing_interpreter(self) -> None:
        with self.assertRaises(InterpreterNotFoundError) as cm:
            self.executor().execute(skill_dir / "scripts/tool.rb", {}, skill_dir, meta)
        self.assertIn("Interpreter 'ruby' not found in PATH for tool.rb", str(cm.exception))
        with self.assertRaises(InterpreterNotFoundError):
            self.executor().execute(skill_dir / "scripts/noext", {}, skill_dir, meta)

    def test_missing_script_is_file_not_found(self) -> None:
        with self.assertRaises(FileNotFoundError):
            self.executor().execute(skill_dir / "scripts/missing.py", {}, skill_dir, meta)

    def test_serialisation_errors(self) -> None:
        circular: Dict[str, Any] = {}
        circular["self"] = circular
        for bad in ({"x": object()}, circular, {"x": math.nan}, ["not", "a", "dict"]):
            with self.assertRaises(ArgumentSerializationError) as cm:
                self.executor().execute(skill_dir / "scripts/ok.py", bad, skill_dir, meta)  # type: ignore[arg-type]
            self.assertIn("Cannot serialize arguments", str(cm.exception))

    def test_argument_size_limit(self) -> None:
        with self.assertRaises(ArgumentSizeError) as cm:
            self.executor().execute(skill_dir / "scripts/ok.py", {"x": "a" * (10 * MiB)}, skill_dir, meta)
        self.assertIn("Arguments too large", str(cm.exception))
        self.assertIn("(max 10MB)", str(cm.exception))
        res = self.run_script("scripts/ok.py", {"x": "a" * MiB})
        self.assertTrue(res.success)

    def test_output_truncation_at_10MB(self) -> None:
        res = self.run_script("scripts/big.py")
        self.assertTrue(res.stdout_truncated)
        self.assertEqual(len(res.stdout.encode()), 10 * MiB)
        res = self.run_script("scripts/big.py", executor=self.executor(max_output_size=1000))
        self.assertTrue(res.stdout_truncated)
        self.assertEqual(res.stdout, "x" * 1000)

    def test_non_utf8_output(self) -> None:
        res = self.run_script("scripts/bytes.py")
        self.assertTrue(res.success)
        self.assertEqual(res.stdout, "ok \ufffd\ufffd end\n")
        self.assertEqual(res.stderr, "\ufffd(\n")

    def test_environment_injection(self) -> None:
        with mock.patch.dict(os.environ, {"SECRET_FROM_HOST": "leak"}):
            res = self.run_script("scripts/env.py")
        import json

        env = json.loads(res.stdout)
        self.assertEqual(env["SKILL_NAME"], "kit")
        self.assertEqual(env["SKILL_BASE_DIR"], "/skills/kit")
        self.assertEqual(env["SKILL_VERSION"], "2.1.0")
        self.assertEqual(env["SKILLKIT_VERSION"], "0.3.0")
        self.assertIsNone(env["SECRET_FROM_HOST"])

    def test_concurrent_executions(self) -> None:
        ex = self.executor()
        with ThreadPoolExecutor(max_workers=6) as pool:
            futures = [pool.submit(ex.execute, skill_dir / "scripts/ok.py", {"n": i}, skill_dir, meta) for i in range(6)]
            results = [f.result() for f in futures]
        for i, res in enumerate(results):
            self.check_postconditions(res)
            self.assertIn(f'"n": {i}', res.stdout)


class OnServer(Contract, unittest.TestCase):
    def setUp(self) -> None:
        assert server is not None
        self.client = Client(server.url)

    def test_host_folder_maps_to_the_skill_name(self) -> None:
        # no metadata name: the folder's name is the skill's name on the server
        res = self.executor().execute(skill_dir / "scripts/ok.py", {}, skill_dir, SkillMetadata(name=""))
        self.assertTrue(res.success)
        self.assertIn('"cwd": "/workspace"', res.stdout)


class Locally(Contract, unittest.TestCase):
    def setUp(self) -> None:
        with mock.patch.dict(os.environ, _harness.local_env(), clear=True):
            self.client = Client()

    def test_runs_the_host_folder_with_the_skill_as_cwd(self) -> None:
        res = self.run_script("scripts/ok.py")
        self.assertIn('"cwd": "/skills/kit"', res.stdout)




if __name__ == "__main__":
    unittest.main()
