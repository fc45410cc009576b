"""Stand-in of agents.sandbox.types: ExecResult and User."""

from __future__ import annotations


class ExecResult:
    def __init__(self, *, stdout: bytes, stderr: bytes, exit_code: int) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code

    def ok(self) -> bool:
        return self.exit_code == 0


class User:
    def __init__(self, name: str) -> None:
        self.name = name
