"""Drop-in for the framework guide's ``ScriptExecutor``, sandboxed.

Change ``from skill_framework.core.script_executor import ScriptExecutor,
ExecutionConstraints, ExecutionResult`` to ``from sandboxrun.framework
import ...``. The constructor, ``execute``, ``is_command_allowed``,
``validate_script_path``, ``ExecutionConstraints`` and ``ExecutionResult``
keep the guide's names, fields and error messages.

What differs, and why:

- Commands are judged by sandboxrun's own checker, which parses the whole
  command as shell and requires *every* simple command in it to match the
  skill's ``allowed-tools``; the seed looked at the first word only, so
  ``python x.py; curl evil`` passed. Command and process substitution,
  ``eval`` and ``exec`` are refused.
- The command runs under bash in a fresh container, never through a host
  shell (the seed used ``shell=True`` on the host): no host filesystem
  beyond the skill (read-only) and the working folder, no network unless
  the skill declares it and the operator allows it, memory, CPU and pids
  caps, an unprivileged user.
- ``env`` is the only environment added: the host's environment is not
  inherited (the seed merged ``os.environ``, secrets included). Reserved
  names (PATH, HOME, SKILL_*, ...) and code-loading ones (LD_*,
  PYTHONPATH, ...) are refused. ``SKILL_DIR`` and ``SCRIPTS_DIR`` are the
  sandbox's paths (``/skills/<name>``).
- ``allowed_tools``, when given, decide which commands run, as in the
  guide: the code that builds an executor is the host's, not the model's.
  Locally (the CLI) they are the operator's grant for that skill
  (``--grant-tools``), so a skill whose SKILL.md declares none runs
  ``python scripts/test.py`` under ``Bash(python:*)``; a command must
  still match the executor's list, so a skill's own allowed-tools never
  widen it. Over a server the server's operator policy decides: the list
  can only narrow what it allows, and a refusal names the policy key that
  would grant it (``skills.<name>.allowed-tools``). The attribute keeps
  the string as given (sandboxrun parses it, not a second parser here);
  ``constraints.network_access`` cannot
  grant a network the skill and the operator do not (it is ignored);
  ``max_execution_time`` and ``max_memory`` are held to the operator's
  ceilings.
- ``working_dir`` (a host folder) is mounted read-only at ``/workspace``
  and is the working directory, locally; without it the skill's folder
  is. A server takes no host folders: there the working directory is
  ``/workspace`` and ``working_dir`` answers an error (use sessions).
- On a timeout, the partial stdout and stderr are kept.
- ``is_command_allowed`` asks whoever runs the commands: the server
  (``Client.explain``, the plan the run itself would follow) when one is
  configured, else the local CLI (``exec --dry-run``). A narrower
  ``allowed_tools`` list is a skill the server does not have, so that
  second check runs the local CLI in either case. ``execute`` is always
  judged by whoever runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from ._local import find_binary
from ._shared import default_client, skill_ref
from .client import Client
from .errors import RefusedError, SandboxrunError
from .types import Result

__all__ = ["ExecutionConstraints", "ExecutionResult", "ScriptExecutor"]


@dataclass
class ExecutionResult:
    """Result of one execution, with the guide's fields."""

    success: bool
    exit_code: int
    stdout: str
    stderr: str
    execution_time: float
    command: str
    error: Optional[str] = None


@dataclass
class ExecutionConstraints:
    """Resource constraints, the guide's fields. ``allowed_commands`` is kept
    for compatibility and, as in the guide's executor, not consulted."""

    max_execution_time: int = 300
    max_memory: Optional[int] = None
    network_access: bool = False
    allowed_commands: List[str] = field(default_factory=list)
    working_directory: Optional[Path] = None


class ScriptExecutor:
    """Run a skill's commands in sandboxrun containers, with the guide's interface.

    ``client`` (keyword only, not in the guide) picks the server or the
    local CLI; by default ``SANDBOXRUN_URL`` decides, else the local CLI.
    """

    def __init__(
        self,
        skill_name: str,
        skill_directory: Union[Path, str],
        allowed_tools: Optional[str] = None,
        constraints: Optional[ExecutionConstraints] = None,
        *,
        client: Optional[Client] = None,
    ) -> None:
        self.skill_name = skill_name
        self.skill_directory = Path(skill_directory)
        self.scripts_directory = self.skill_directory / "scripts"
        self.allowed_tools = allowed_tools.strip().strip("\"'") if allowed_tools else None
        self.constraints = constraints or ExecutionConstraints()
        self._client = client
        self._lock = threading.Lock()
        self._checker: Optional[Client] = None
        self._narrow_dir: Optional[str] = None

    @property
    def client(self) -> Client:
        with self._lock:
            if self._client is None:
                self._client = default_client()
            return self._client

    def _local_checker(self) -> Client:
        with self._lock:
            if self._checker is None:
                if self._client is not None and self._client.local:
                    self._checker = self._client
                else:
                    binary = find_binary()
                    if binary is None:
                        raise SandboxrunError(
                            "is_command_allowed runs sandboxrun's checker through the CLI: install sandboxrun on PATH or set SANDBOXRUN_BIN"
                        )
                    self._checker = Client(bin=binary, local=True)
            return self._checker

    def _narrowing_skill(self) -> str:
        """A skill folder that holds only a SKILL.md with the given
        allowed_tools, so the same checker judges the narrower list."""
        with self._lock:
            if self._narrow_dir is None:
                self._narrow_dir = tempfile.mkdtemp(prefix="sandboxrun-tools-")
                # Removed with the executor, or at exit.
                weakref.finalize(self, shutil.rmtree, self._narrow_dir, True)
                folder = Path(self._narrow_dir) / self.skill_name
                folder.mkdir()
                (folder / "SKILL.md").write_text(
                    "---\nname: {}\ndescription: {}\nallowed-tools: {}\n---\n".format(
                        json.dumps(self.skill_name),
                        json.dumps("allowed-tools given to the executor"),
                        json.dumps(self.allowed_tools or ""),
                    )
                )
            return str(Path(self._narrow_dir) / self.skill_name)

    def is_command_allowed(self, command: str) -> bool:
        """True when sandboxrun's checker allows every part of ``command`` for
        this skill (and, when given, for ``allowed_tools`` too)."""
        return bool(self._decide(command).get("allowed"))

    def _decide(self, command: str) -> Dict[str, Any]:
        """The checker's decision: the skill's own, then the narrower list's."""
        if not command or not command.strip():
            return {"allowed": False, "part": command, "reason": "empty command"}
        try:
            client = self.client
            if client.local:
                decision = self._local_checker()._local_cli().check_command(
                    str(self.skill_directory.resolve()), command, self.allowed_tools)
            else:
                decision = self._ask_server(client, command)
            if decision.get("allowed") and self.allowed_tools is not None:
                # The executor's list decides: a command the skill's own
                # allowed-tools allow must be in it too.
                decision = self._local_checker().check_command(self._narrowing_skill(), command)
        except RefusedError as e:
            return {"allowed": False, "part": command, "reason": e.message}
        return decision

    def _ask_server(self, client: Client, command: str) -> Dict[str, Any]:
        """The server's decision on the command, from the plan a run of it
        would follow, in the shape of the CLI's dry-run."""
        try:
            e = client.explain(skill_ref(client, self.skill_directory, self.skill_name), command=command)
        except RefusedError as refusal:
            return {"allowed": False, "part": refusal.part or command, "reason": refusal.reason or refusal.message,
                    "suggest": refusal.suggest, "by_server": True}
        return {"allowed": True, "command": e.command}

    def validate_script_path(self, script_path: str) -> Path:
        """The script's absolute path (symlinks resolved) when it is inside the
        skill's scripts/ folder; ValueError otherwise."""
        base = self.skill_directory.resolve()
        full = (self.skill_directory / script_path).resolve()
        if os.path.commonpath([str(full), str(base)]) != str(base):
            raise ValueError(f"Script path '{script_path}' is outside skill directory")
        if not full.exists():
            raise ValueError(f"Script not found: {script_path}")
        scripts = self.scripts_directory.resolve()
        if os.path.commonpath([str(full), str(scripts)]) != str(scripts) or full == scripts:
            raise ValueError(f"Script must be in scripts/ directory: {script_path}")
        return full

    def execute(
        self,
        command: str,
        working_dir: Optional[Path] = None,
        env: Optional[Dict[str, str]] = None,
    ) -> ExecutionResult:
        """Run ``command`` in the skill's sandbox. Failures are answered in the
        result (``error``), never raised, as the guide's executor does."""
        start = time.perf_counter()

        def failed(error: str, res: Optional[Result] = None) -> ExecutionResult:
            return ExecutionResult(
                success=False,
                exit_code=-1,
                stdout=res.stdout if res else "",
                stderr=res.stderr if res else "",
                execution_time=time.perf_counter() - start,
                command=command,
                error=error,
            )

        def denied(part: str, reason: str, suggest: str, by_server: bool = False) -> ExecutionResult:
            fix = ""
            if suggest and by_server:
                # The server's operator policy decides, not this executor.
                fix = (f"; the server's operator policy decides: to allow it, the server's operator adds {suggest} "
                       f"to skills.{self.skill_name}.allowed-tools in its policy")
            elif suggest:
                fix = f"; to allow it add {suggest}"
            detail = f" ({part!r} {reason}{fix})" if part else ""
            return failed(f"Command not allowed by skill permissions: {command}{detail}")

        try:
            if self.allowed_tools is not None:
                decision = self._decide(command)
                if not decision.get("allowed"):
                    return denied(decision.get("part", ""), decision.get("reason", ""), decision.get("suggest", ""),
                                  bool(decision.get("by_server")))
            client = self.client
            folder = working_dir or self.constraints.working_directory
            if folder is not None and not client.local:
                return failed(
                    "Execution error: working_dir is a host folder and a server takes none; "
                    "put the files in a session, or run locally (unset SANDBOXRUN_URL)"
                )
            opts: Dict[str, Any] = dict(
                env=dict(env) if env else None,
                timeout=self.constraints.max_execution_time,
                memory_mib=self.constraints.max_memory,
                workspace=str(folder) if folder is not None else None,
                cwd=None if (folder is not None or not client.local) else "skill",
            )
            ref = skill_ref(client, self.skill_directory, self.skill_name)
            if client.local and self.allowed_tools is not None:
                # The host's grant for this skill, as an operator gives it.
                res = client._local_cli().execute("exec", ref, command, dict(opts, grant_tools=self.allowed_tools))
            else:
                res = client.exec(ref, command, **opts)
        except RefusedError as e:
            if e.part:
                return denied(e.part, e.reason, e.suggest, by_server=not self.client.local)
            return failed(f"Execution error: {e}")
        except SandboxrunError as e:
            return failed(f"Execution error: {e}", e.result)
        if res.timed_out:
            return failed(f"Execution timeout ({self.constraints.max_execution_time}s)", res)
        error = None
        if res.oom_killed or res.signal:
            error = res.error or None
        return ExecutionResult(
            success=res.exit_code == 0,
            exit_code=res.exit_code,
            stdout=res.stdout,
            stderr=res.stderr,
            execution_time=time.perf_counter() - start,
            command=command,
            error=error,
        )
