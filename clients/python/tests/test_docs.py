"""The Python examples of docs/clients.md run as written, against a real
server, and print what the page says they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Tuple

import _harness

DOC = _harness.REPO / "docs" / "clients.md"
SECTIONS = ("## Python", "## Drop-in executors")
server: Optional[_harness.Server] = None


def examples() -> List[Tuple[str, str, Optional[str]]]:
    """(heading, code, expected output or None) of every python block in the sections."""
    text = DOC.read_text()
    out = []
    for part in re.split(r"(?m)^(?=## )", text):
        if not part.startswith(SECTIONS):
            continue
        heading = ""
        for m in re.finditer(r"(?ms)^(### [^\n]*)$|^```python\n(.*?)^```\n(?:\nprints:\n\n```text\n(.*?)^```)?", part):
            if m.group(1):
                heading = m.group(1)
                continue
            out.append((heading, m.group(2), m.group(3)))
    return out


def setUpModule() -> None:
    global server
    _harness.require_docker()
    server = _harness.Server()


def tearDownModule() -> None:
    if server is not None:
        server.stop()


class Docs(unittest.TestCase):
    def test_the_page_has_examples_for_the_client_and_each_drop_in(self) -> None:
        headings = {h for h, _, _ in examples()}
        for want in ("### Run a script, a command, or Python", "### Stream output as it comes", "### Sessions and files",
                     "### Python: skillkit `ScriptExecutor`", "### Python: `run_python_script` tool",
                     "### Python: framework `ScriptExecutor`"):
            self.assertIn(want, headings)

    def test_examples_print_what_the_page_says(self) -> None:
        assert server is not None
        env = dict(os.environ, SANDBOXRUN_URL=server.url, SANDBOXRUN_BIN=_harness.binary(),
                   PYTHONPATH=str(_harness.HERE.parent))

        def run(code: str) -> "subprocess.CompletedProcess[str]":
            return subprocess.run([sys.executable, "-c", code], cwd=_harness.REPO, env=env,
                                  capture_output=True, text=True, timeout=120, check=False)

        cases = examples()
        with ThreadPoolExecutor(max_workers=4) as pool:
            procs = list(pool.map(run, [code for _, code, _ in cases]))
        for (heading, code, want), proc in zip(cases, procs):
            with self.subTest(heading=heading, code=code.splitlines()[0]):
                self.assertEqual(proc.returncode, 0, proc.stderr)
                if want is not None:
                    self.assertEqual(proc.stdout, want)


if __name__ == "__main__":
    unittest.main()
