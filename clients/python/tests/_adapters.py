"""What the adapter tests share: a real ``sandboxrun serve`` with one skill
whose allowed-tools the adapters' commands go through, and the stand-ins of
the frameworks first on sys.path."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Optional

import _harness
import _standins  # noqa: F401 - puts the framework stand-ins on sys.path

SKILL = "agent"
# The commands the tests' agents run, and Write; curl, rm and the rest are
# refused, which is what the refusal tests rely on.
TOOLS = ("Bash(echo:*) Bash(printf:*) Bash(cat:*) Bash(wc:*) Bash(sleep:*) Bash(ln:*) Bash(python3:*) "
         "Bash(ls:*) Bash(test:*) Bash(mkdir:*) Write")
# A small output cap makes truncation reachable; a short timeout ceiling keeps a
# runaway test short.
POLICY = "limits:\n  output: {max: 4Ki}\n  timeout: {default: 60s, max: 120s}\n"


class AdapterServer:
    """The server and the skills folder it serves, for one test module."""

    def __init__(self) -> None:
        _harness.require_docker()
        self.root = Path(tempfile.mkdtemp(prefix="sandboxrun-adapters-"))
        _harness.write_skill(self.root, SKILL, f"allowed-tools: {TOOLS}\n")
        try:
            self.server: Optional[_harness.Server] = _harness.Server(roots=(self.root,), policy=POLICY)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        shutil.rmtree(self.root, ignore_errors=True)
