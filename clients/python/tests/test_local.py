"""Local mode: the same Client calls through the sandboxrun CLI, no server."""

from __future__ import annotations

import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import _harness
from sandboxrun import (
    Client,
    Event,
    LocalModeError,
    NotFoundError,
    RefusedError,
    Result,
    SandboxrunError,
    UnavailableError,
)


def setUpModule() -> None:
    _harness.require_docker()


def local() -> Client:
    with mock.patch.dict(os.environ, _harness.local_env(), clear=True):
        c = Client(skills=str(_harness.SKILLS))
    return c


class LocalMode(unittest.TestCase):
    def test_no_url_and_no_cli_says_how_to_fix(self) -> None:
        env = {"PATH": "/nonexistent"}
        with mock.patch.dict(os.environ, env, clear=True):
            with self.assertRaises(SandboxrunError) as cm:
                Client()
        self.assertIn("SANDBOXRUN_URL", str(cm.exception))
        self.assertIn("SANDBOXRUN_BIN", str(cm.exception))

    def test_skills_activate_and_check(self) -> None:
        c = local()
        self.assertTrue(c.local)
        self.assertEqual([s.name for s in c.skills()], ["csv-report", "data-analysis", "hello"])
        a = c.activate("hello")
        self.assertEqual(a.base_dir, "/skills/hello")
        self.assertIn(("Bash", "echo:*"), [(t.name, t.spec) for t in a.allowed_tools])
        self.assertTrue(c.check_command("hello", "echo hi")["allowed"])
        denied = c.check_command("hello", "echo hi | curl x")
        self.assertFalse(denied["allowed"])
        self.assertEqual(denied["suggest"], "Bash(curl:*)")
        with self.assertRaises(NotFoundError):
            c.activate("no-such-skill")

    def test_explain_judges_commands_with_the_cli(self) -> None:
        c = local()
        e = c.explain("hello", command="python3 scripts/echo.py", timeout=5)
        self.assertEqual((e.skill, e.action, e.command), ("hello", "command", "python3 /skills/hello/scripts/echo.py"))
        with self.assertRaises(RefusedError) as cm:
            c.explain("hello", command="echo hi | curl x")
        self.assertEqual((cm.exception.part, cm.exception.suggest), ("curl x", "Bash(curl:*)"))
        self.assertIsNotNone(cm.exception.explanation)
        with self.assertRaises(RefusedError):
            c.explain("hello", command="echo hi", env={"HOME": "/"})
        with self.assertRaises(LocalModeError):
            c.explain("hello", script="scripts/echo.py")

    def test_run_exec_python_return_results(self) -> None:
        c = local()
        res = c.run("hello", "scripts/echo.py", args={"a": [1, 2]}, timeout=20, memory_mib=128)
        self.assertIsInstance(res, Result)
        self.assertEqual(res.output, {"skill": "hello", "runtime": "python", "args": {"a": [1, 2]}})
        self.assertEqual(res.limits.memory_bytes, 128 << 20)
        self.assertTrue(res.id)
        res = c.exec("hello", "echo $SKILL_NAME", env={"X": "1"})
        self.assertEqual((res.exit_code, res.stdout), (0, "hello\n"))
        res = c.python("hello", "import sys, os\nprint(sys.argv[1:], os.getcwd())\nsys.exit(5)", argv=["x y"])
        self.assertEqual(res.exit_code, 5)
        self.assertFalse(res.success)
        self.assertEqual(res.stdout, "['x y'] /workspace\n")
        res = c.run("hello", "scripts/echo.py", cwd="skill")
        self.assertTrue(res.success)

    def test_timeout_and_signal_follow_the_result_conventions(self) -> None:
        c = local()
        res = c.python("hello", "import time\ntime.sleep(30)", timeout=1)
        self.assertEqual((res.exit_code, res.timed_out), (124, True))
        self.assertIn("Timeout", res.stderr)
        res = c.python("hello", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        self.assertEqual((res.exit_code, res.signal), (-9, "SIGKILL"))

    def test_stream_ends_in_the_result(self) -> None:
        items = list(local().stream_python("hello", "import sys\nprint('o')\nprint('e', file=sys.stderr)"))
        self.assertEqual([(e.type, e.data) for e in items[:-1] if isinstance(e, Event)], [("stdout", "o\n"), ("stderr", "e\n")])
        self.assertIsInstance(items[-1], Result)

    def test_refusals_and_environment_failures_are_typed(self) -> None:
        c = local()
        with self.assertRaises(RefusedError) as cm:
            c.exec("hello", "echo hi; rm -rf /")
        self.assertIn("rm", cm.exception.message)
        # the same fields as a server's 403
        self.assertEqual((cm.exception.part, cm.exception.suggest), ("rm -rf /", "Bash(rm:*)"))
        self.assertTrue(cm.exception.reason)
        with self.assertRaises(RefusedError):
            c.run("hello", "scripts/echo.py", env={"HOME": "/"})
        with self.assertRaises(NotFoundError):
            c.python("no-such-skill", "print(1)")
        with mock.patch.dict(os.environ, {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}):
            with self.assertRaises(UnavailableError) as cm2:
                c.run("hello", "scripts/echo.py")
        self.assertTrue(cm2.exception.reason)

    def test_server_only_calls_say_so(self) -> None:
        c = local()
        for call in (c.healthz, c.readyz, c.metrics, c.openapi, c.create_session, c.list_sessions):
            with self.assertRaises(LocalModeError):
                call()
        with self.assertRaises(LocalModeError):
            c.run("hello", "scripts/echo.py", session="a" * 26)
        with self.assertRaises(LocalModeError):
            c.python("hello", "print(1)", args={"a": 1})

    def test_workspace_folder(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)
            (Path(d) / "in.txt").write_text("from the host")
            os.chmod(Path(d) / "in.txt", 0o644)
            with mock.patch.dict(os.environ, _harness.local_env(), clear=True):
                c = Client(skills=str(_harness.SKILLS), workspace=d)
            res = c.python("hello", "print(open('in.txt').read())")
            self.assertEqual(res.stdout, "from the host\n", res.stderr)
            res = c.python("hello", "open('new.txt', 'w')")
            self.assertNotEqual(res.exit_code, 0)  # read-only: hello has no Write
            self.assertFalse((Path(d) / "new.txt").exists())


if __name__ == "__main__":
    unittest.main()
