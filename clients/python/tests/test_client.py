"""Every method of sandboxrun.Client against a real server, every error status."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import threading
import time
import unittest
from typing import List, Optional
from unittest import mock

import _harness
from sandboxrun import (
    Activation,
    AuthError,
    BadRequestError,
    BusyError,
    Client,
    ConflictError,
    Event,
    Explanation,
    NotFoundError,
    RefusedError,
    Result,
    ServerError,
    TooLargeError,
    TransportError,
    UnavailableError,
    UnsupportedMediaError,
)

TOKEN = "test-token-0123456789abcdef"
POLICY = "sessions:\n  quota: 64Ki\n  max_per_token: 3\n"
server: Optional[_harness.Server] = None


def setUpModule() -> None:
    global server
    _harness.require_docker()
    # One execution at a time and a short queue wait make 429 reachable;
    # no warm pool, so the only container of a run is the run's own.
    server = _harness.Server(token=TOKEN, policy=POLICY,
                             flags=["--warm-pool", "0", "--max-running", "1", "--max-queued", "1", "--queue-wait", "300ms"])


def tearDownModule() -> None:
    if server is not None:
        server.stop()


def client() -> Client:
    assert server is not None
    return Client(server.url, TOKEN)


class Description(unittest.TestCase):
    def test_health_ready_metrics_openapi(self) -> None:
        c = client()
        self.assertFalse(c.local)
        self.assertEqual(c.healthz(), {"status": "ok"})
        self.assertEqual(c.readyz(), {"status": "ready"})
        self.assertIn("# TYPE", c.metrics())
        self.assertIn("/v1/skills/{name}/run", c.openapi()["paths"])

    def test_environment_configures_the_client(self) -> None:
        assert server is not None
        with mock.patch.dict(os.environ, {"SANDBOXRUN_URL": server.url, "SANDBOXRUN_TOKEN": TOKEN}):
            c = Client()
        self.assertEqual(c.url, server.url)
        self.assertIn("hello", [s.name for s in c.skills()])

    def test_skills_and_activate(self) -> None:
        c = client()
        names = [s.name for s in c.skills()]
        self.assertEqual(names, sorted(["csv-report", "data-analysis", "hello"]))
        a = c.activate("hello")
        self.assertIsInstance(a, Activation)
        self.assertEqual(a.base_dir, "/skills/hello")
        self.assertIn("scripts/echo.py", a.scripts)
        self.assertIn("/skills/hello/scripts/echo.py", a.body)
        self.assertIn(("Bash", "python3:*"), [(t.name, t.spec) for t in a.allowed_tools])

    def test_bad_urls_are_refused_with_the_fix(self) -> None:
        for url, fix in (("ftp://x", "http://"), ("unix:", "unix:/"), ("localhost:8080", "http://")):
            with self.assertRaises(ValueError) as cm:
                Client(url)
            self.assertIn(fix, str(cm.exception))

    def test_unreachable_server(self) -> None:
        c = Client(f"http://127.0.0.1:{_harness.free_port()}", timeout=5)
        with self.assertRaises(TransportError) as cm:
            c.skills()
        self.assertIn("cannot reach", str(cm.exception))


class Runs(unittest.TestCase):
    def test_run(self) -> None:
        res = client().run("hello", "scripts/echo.py", args={"greeting": "hi"}, env={"EXTRA": "1"},
                           timeout="20s", memory_mib=128, cpus=0.5)
        self.assertIsInstance(res, Result)
        self.assertTrue(res.success)
        self.assertEqual(res.exit_code, 0)
        self.assertEqual(res.output, {"skill": "hello", "runtime": "python", "args": {"greeting": "hi"}})
        self.assertEqual(res.skill, "hello")
        self.assertEqual(res.command, ["python3", "/skills/hello/scripts/echo.py"])
        self.assertEqual(res.limits.memory_bytes, 128 << 20)
        self.assertEqual(res.limits.cpus, 0.5)
        self.assertEqual(res.limits.timeout_s, 20)
        self.assertFalse(res.limits.network)
        self.assertTrue(res.id)
        self.assertGreater(res.stdout_bytes, 0)
        self.assertIsNone(res.files)

    def test_run_argv_and_failure_is_a_result(self) -> None:
        res = client().python("hello", "import sys, os\nprint(sys.argv[1:], os.environ['EXTRA'])\nsys.exit(3)",
                              argv=["a b", "--x"], env={"EXTRA": "e"})
        self.assertFalse(res.success)
        self.assertEqual(res.exit_code, 3)
        self.assertEqual(res.stdout, "['a b', '--x'] e\n")

    def test_exec(self) -> None:
        res = client().exec("hello", "echo one && python3 scripts/echo.py", args={"n": 1})
        self.assertEqual(res.exit_code, 0, res.stderr)
        self.assertEqual(res.stdout.splitlines()[0], "one")
        self.assertIn('"n": 1', res.stdout)

    def test_python_args_on_stdin(self) -> None:
        res = client().python("hello", "import os\nprint(os.environ['SKILL_NAME'])")
        self.assertEqual(res.stdout, "hello\n")

    def test_timeout_and_signal(self) -> None:
        c = client()
        res = c.python("hello", "import time\nprint('started', flush=True)\ntime.sleep(30)", timeout=1)
        self.assertTrue(res.timed_out)
        self.assertEqual(res.exit_code, 124)
        self.assertIn("Timeout", res.stderr)
        self.assertEqual(res.stdout, "started\n")
        res = c.python("hello", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
        self.assertEqual((res.exit_code, res.signal), (-11, "SIGSEGV"))

    def _collect(self, events: List[object]) -> "tuple[List[Event], Result]":
        self.assertIsInstance(events[-1], Result)
        out = [e for e in events[:-1] if isinstance(e, Event)]
        self.assertEqual(len(out), len(events) - 1)
        return out, events[-1]  # type: ignore[return-value]

    def test_stream_python_yields_events_then_result(self) -> None:
        code = "import sys, time\nprint('a', flush=True)\ntime.sleep(0.3)\nprint('b', file=sys.stderr, flush=True)\nsys.exit(2)"
        events, res = self._collect(list(client().stream_python("hello", code)))
        self.assertEqual([(e.type, e.data) for e in events], [("stdout", "a\n"), ("stderr", "b\n")])
        self.assertEqual(res.exit_code, 2)
        self.assertEqual(res.stdout, "a\n")

    def test_stream_is_live(self) -> None:
        code = "import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second')"
        it = client().stream_python("hello", code)
        start = time.monotonic()
        first = next(it)
        self.assertIsInstance(first, Event)
        self.assertLess(time.monotonic() - start, 10)
        rest = list(it)
        self.assertIsInstance(rest[-1], Result)
        self.assertEqual(rest[-1].stdout, "first\nsecond\n")

    def test_stream_run_and_exec(self) -> None:
        c = client()
        events, res = self._collect(list(c.stream_run("hello", "scripts/echo.sh", args={"k": "v"})))
        self.assertTrue(res.success)
        self.assertEqual("".join(e.data for e in events if e.type == "stdout"), res.stdout)
        events, res = self._collect(list(c.stream_exec("hello", "echo streamed")))
        self.assertEqual([(e.type, e.data) for e in events], [("stdout", "streamed\n")])

    def test_stream_refusal_raises_before_any_event(self) -> None:
        with self.assertRaises(RefusedError):
            list(client().stream_exec("hello", "rm -rf /"))


class Explain(unittest.TestCase):
    def test_explain_is_the_run_that_follows(self) -> None:
        c = client()
        e = c.explain("hello", script="scripts/echo.py", timeout=7, memory_mib=128)
        self.assertIsInstance(e, Explanation)
        self.assertEqual((e.skill, e.action), ("hello", "script"))
        self.assertEqual(e.argv, ["python3", "/skills/hello/scripts/echo.py"])
        res = c.run("hello", "scripts/echo.py", timeout=7, memory_mib=128)
        self.assertEqual((e.limits.timeout_s, e.limits.memory_bytes, e.limits.network),
                         (res.limits.timeout_s, res.limits.memory_bytes, res.limits.network))
        self.assertEqual(e.image, res.image)
        self.assertEqual(c.explain("hello", command="python3 scripts/echo.py").command,
                         "python3 /skills/hello/scripts/echo.py")
        self.assertEqual(c.explain("hello", code="print(1)").action, "python")

    def test_explain_refusal_and_bad_calls(self) -> None:
        c = client()
        with self.assertRaises(RefusedError) as cm:
            c.explain("hello", command="echo hi; curl x")
        self.assertEqual((cm.exception.part, cm.exception.suggest), ("curl x", "Bash(curl:*)"))
        explained = cm.exception.explanation
        self.assertIsNotNone(explained)
        assert explained is not None
        self.assertEqual(explained.skill, "hello")
        with self.assertRaises(NotFoundError):
            c.explain("no-such-skill", code="print(1)")
        with self.assertRaises(ValueError):
            c.explain("hello")
        with self.assertRaises(ValueError):
            c.explain("hello", script="scripts/echo.py", code="print(1)")


class Errors(unittest.TestCase):
    def test_400_bad_request(self) -> None:
        with self.assertRaises(BadRequestError) as cm:
            client().run("hello", "scripts/echo.py", timeout="soon")
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("timeout", cm.exception.message)
        with self.assertRaises(BadRequestError):
            client().python("hello", "print(1)", argv=["nul\x00byte"])

    def test_401_without_or_with_a_wrong_token(self) -> None:
        assert server is not None
        for token in (None, "wrong-token-0123456789"):
            with mock.patch.dict(os.environ, {"SANDBOXRUN_TOKEN": ""}):
                c = Client(server.url, token)
            with self.assertRaises(AuthError) as cm:
                c.skills()
            self.assertEqual(cm.exception.status, 401)
        # health needs no token
        self.assertEqual(Client(server.url).healthz(), {"status": "ok"})

    def test_403_denied_command_says_what_and_how(self) -> None:
        with self.assertRaises(RefusedError) as cm:
            client().exec("hello", "echo hi; curl http://example.com")
        e = cm.exception
        self.assertEqual(e.status, 403)
        self.assertEqual(e.part, "curl http://example.com")
        self.assertEqual(e.suggest, "Bash(curl:*)")
        self.assertTrue(e.reason)
        with self.assertRaises(RefusedError) as cm:
            client().run("hello", "scripts/echo.py", env={"PATH": "/x"})
        self.assertIn("PATH", cm.exception.message)
        with self.assertRaises(RefusedError):
            client().run("hello", "scripts/../SKILL.md")

    def test_404_unknown_skill(self) -> None:
        with self.assertRaises(NotFoundError) as cm:
            client().activate("no-such-skill")
        self.assertIn("no-such-skill", cm.exception.message)
        with self.assertRaises(NotFoundError):
            client().python("no-such-skill", "print(1)")

    def test_429_when_every_slot_is_taken(self) -> None:
        c = client()
        done = threading.Event()
        first: List[Result] = []

        def slow() -> None:
            first.append(c.python("hello", "import time\ntime.sleep(4)"))
            done.set()

        t = threading.Thread(target=slow)
        t.start()
        try:
            deadline = time.monotonic() + 20
            while not _harness.containers(skill="hello", owner_pid=str(server.proc.pid)):  # type: ignore[union-attr]
                self.assertLess(time.monotonic(), deadline, "the slow run never started")
                time.sleep(0.05)
            with self.assertRaises(BusyError) as cm:
                c.python("hello", "print(1)")
            self.assertEqual(cm.exception.status, 429)
            self.assertGreaterEqual(cm.exception.retry_after, 1)
            self.assertIn("retry", cm.exception.message)
        finally:
            t.join(30)
        self.assertTrue(done.is_set())
        self.assertTrue(first[0].success)

    def test_500_sandbox_killed_mid_run_carries_the_result(self) -> None:
        code = "import os, time\nprint(os.environ['SANDBOXRUN_RUN_ID'], flush=True)\ntime.sleep(30)"
        it = client().stream_python("hello", code)
        first = next(it)
        assert isinstance(first, Event)
        run_id = first.data.strip()
        subprocess.run(["docker", "kill", "sandboxrun-" + run_id], check=True, capture_output=True)
        with self.assertRaises(ServerError) as cm:
            list(it)
        e = cm.exception
        self.assertNotIsInstance(e, UnavailableError)
        self.assertTrue(e.reason)
        self.assertIsNotNone(e.result)
        self.assertEqual(e.result.id, run_id)  # type: ignore[union-attr]

    def test_503_when_the_engine_is_unreachable(self) -> None:
        # A second server on a unix socket, its engine a socket that does not exist.
        broken = _harness.Server(unix=True, ready=False,
                                 env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
        try:
            c = Client(broken.url)
            self.assertTrue(c.url.startswith("unix:"))
            self.assertIn("hello", [s.name for s in c.skills()])  # served over the socket
            with self.assertRaises(UnavailableError) as cm:
                c.readyz()
            self.assertEqual(cm.exception.status, 503)
            with self.assertRaises(UnavailableError) as cm:
                c.run("hello", "scripts/echo.py")
            self.assertIsInstance(cm.exception, ServerError)
            self.assertTrue(cm.exception.reason)
        finally:
            broken.stop()


class Sessions(unittest.TestCase):
    def test_session_files_and_runs(self) -> None:
        c = client()
        with c.create_session(ttl="10m") as s:
            self.assertEqual(len(s.id), 26)
            self.assertIn(s.id, [x.id for x in c.list_sessions()])
            self.assertEqual(s.refresh().bytes_limit, 64 << 10)
            stored = s.upload("in/data file.txt", "3\n4\n")
            self.assertEqual((stored.path, stored.size), ("in/data file.txt", 4))
            self.assertEqual(len(stored.sha256), 64)
            self.assertEqual(s.download("in/data file.txt"), b"3\n4\n")
            entries = {e.path: e for e in s.files()}
            self.assertEqual(entries["in"].type, "dir")
            self.assertEqual(entries["in/data file.txt"].sha256, stored.sha256)
            self.assertEqual([e.path for e in s.files("in")], ["in/data file.txt"])

            res = s.python("hello", "n = sum(int(x) for x in open('in/data file.txt'))\nopen('out.txt', 'w').write(str(n))")
            self.assertEqual(res.exit_code, 0, res.stderr)
            self.assertEqual([(f.path, f.change) for f in res.files or []], [("out.txt", "created")])
            self.assertEqual(s.download("out.txt"), b"7")
            res = s.exec("hello", "echo appended >> out.txt")
            self.assertEqual([(f.path, f.change) for f in res.files or []], [("out.txt", "modified")])
            res = s.run("hello", "scripts/echo.py")
            self.assertEqual(res.files, [])

            s.remove("out.txt")
            with self.assertRaises(NotFoundError):
                s.download("out.txt")
            with self.assertRaises(ConflictError):
                s.download("in")

            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tf:
                info = tarfile.TarInfo("t/a.txt")
                info.size = 2
                tf.addfile(info, io.BytesIO(b"hi"))
            stored_all = s.upload_tar(buf.getvalue())
            self.assertEqual([f.path for f in stored_all], ["t/a.txt"])
            with tarfile.open(fileobj=io.BytesIO(s.download_tar())) as tf:
                self.assertIn("t/a.txt", tf.getnames())
                self.assertIn("in/data file.txt", tf.getnames())
            with self.assertRaises(BadRequestError):
                s.upload("../escape", "x")
            sid = s.id
        with self.assertRaises(NotFoundError):
            c.get_session(sid)

    def test_quota_media_and_count_limits(self) -> None:
        c = client()
        with c.create_session() as s:
            with self.assertRaises(TooLargeError) as cm:
                s.upload("big.bin", b"\0" * (100 << 10))
            self.assertEqual(cm.exception.status, 413)
            self.assertIn("quota", cm.exception.message)
            with self.assertRaises(UnsupportedMediaError):
                assert c._http is not None
                c._http.call("PUT", f"/v1/sessions/{s.id}/files", b"not a tar", {"Content-Type": "text/plain"})
            extra = [c.create_session(), c.create_session()]
            try:
                with self.assertRaises(BusyError) as cm2:
                    c.create_session()
                self.assertEqual(cm2.exception.status, 429)
                self.assertIn("max_per_token", cm2.exception.message)
            finally:
                for e in extra:
                    e.delete()

    def test_snapshots_restore_and_fork(self) -> None:
        c = client()
        with c.create_session() as s:
            c.put_file(s.id, "notes.txt", "v1")
            snap = c.create_snapshot(s.id, "before")
            self.assertEqual(snap.label, "before")
            self.assertEqual(snap.session, s.id)
            c.put_file(s.id, "notes.txt", "v2")
            c.put_file(s.id, "added.txt", "x")
            with c.fork(s.id, snap.id) as f:
                self.assertEqual(c.get_file(f.id, "notes.txt"), b"v1")
            c.restore(s.id, snap.id)
            self.assertEqual(c.get_file(s.id, "notes.txt"), b"v1")
            with self.assertRaises(NotFoundError):
                c.get_file(s.id, "added.txt")
            self.assertEqual([x.id for x in c.list_snapshots(s.id)], [snap.id])
            c.delete_snapshot(s.id, snap.id)
            with self.assertRaises(NotFoundError):
                c.restore(s.id, snap.id)

    def test_a_deleted_session_is_gone(self) -> None:
        c = client()
        with c.create_session() as s:
            c.delete_session(s.id)
            with self.assertRaises(NotFoundError):
                c.delete_session(s.id)
            with self.assertRaises(NotFoundError):
                s.files()


if __name__ == "__main__":
    unittest.main()
