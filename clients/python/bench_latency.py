"""Latency of one call through the Python client: a server (warm pool on) and the local CLI.

Run from clients/python after `make images`:  SANDBOXRUN_BIN=../../bin/sandboxrun python3 bench_latency.py
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
import _harness  # noqa: E402  (tests/ is put on the path first)
from sandboxrun import Client
from sandboxrun.skillkit import ScriptExecutor, SkillMetadata

srv = _harness.Server()
try:
    def bench(label, fn, n=20):
        fn()  # the first run of a configuration is cold
        ts = []
        for _ in range(n):
            t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1000)
        print(f"{label:48s} n={n} median {statistics.median(ts):7.1f} ms  p90 {sorted(ts)[int(n*0.9)-1]:7.1f} ms")
    remote = Client(srv.url)
    local = Client(local=True, skills=str(_harness.SKILLS))
    base = (_harness.SKILLS / "hello").resolve()
    kit = ScriptExecutor(client=remote)
    bench("server: Client.run hello scripts/echo.py", lambda: remote.run("hello", "scripts/echo.py", args={"a": 1}))
    bench("server: skillkit ScriptExecutor.execute", lambda: kit.execute(base / "scripts/echo.py", {"a": 1}, base, SkillMetadata("hello")))
    bench("server: Client.python print(1)", lambda: remote.python("hello", "print(1)"))
    bench("local CLI: Client.run hello scripts/echo.py", lambda: local.run("hello", "scripts/echo.py", args={"a": 1}), n=10)
finally:
    srv.stop()
