"""Local mode: the same calls through the ``sandboxrun`` CLI on this host.

The CLI prints the Result as JSON (``--json``); its exit status says what
kind of failure a missing Result means: 2 refused before running, 3 the
environment failed before the start, 125 the sandbox failed mid-run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal as _signal
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .errors import LocalModeError, NotFoundError, RefusedError, SandboxrunError, ServerError, UnavailableError
from .types import Activation, Explanation, Result, SkillSummary

EXIT_REFUSED = 2
EXIT_ENV = 3
EXIT_MIDRUN = 125


def find_binary(explicit: Optional[str] = None) -> Optional[str]:
    """The CLI to run: the argument, else $SANDBOXRUN_BIN, else sandboxrun on PATH."""
    cand = explicit or os.environ.get("SANDBOXRUN_BIN")
    if cand:
        return cand
    return shutil.which("sandboxrun")


class Local:
    """Runs the CLI once per call. ``workspace`` is the host folder mounted at
    /workspace; when None each call gets a fresh empty folder, removed after,
    so a run sees nothing of this host that the caller did not name."""

    def __init__(
        self,
        binary: str,
        skills: Optional[str],
        policy: Optional[str],
        workspace: Optional[str],
        timeout: Optional[float],
    ) -> None:
        self.binary = binary
        self._globals: List[str] = []
        if skills:
            self._globals += ["--skills", skills]
        if policy:
            self._globals += ["--policy", policy]
        self.workspace = workspace
        self._timeout = timeout

    def _cli(self, args: Sequence[str], stdin: bytes = b"") -> Tuple[int, bytes, str]:
        cmd = [self.binary, *args[:1], *self._globals, *args[1:]]
        try:
            proc = subprocess.run(cmd, input=stdin, capture_output=True, timeout=self._timeout, check=False)
        except FileNotFoundError as e:
            raise SandboxrunError(
                f"the sandboxrun CLI {self.binary!r} does not exist: set SANDBOXRUN_BIN, put it on PATH, or set SANDBOXRUN_URL"
            ) from e
        except subprocess.TimeoutExpired as e:
            raise SandboxrunError(f"sandboxrun {args[0]} did not end within {self._timeout} s") from e
        return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")

    def skills(self) -> List[SkillSummary]:
        code, out, err = self._cli(["list", "--format", "json"])
        if code != 0:
            raise _failure(code, err)
        return [SkillSummary.from_json(s) for s in json.loads(out or b"[]")]

    def activate(self, name: str) -> Activation:
        code, out, err = self._cli(["show", "--json", name])
        if code != 0:
            raise _failure(code, err)
        return Activation.from_json(json.loads(out))

    def check_command(self, skill: str, command: str, grant_tools: Optional[str] = None) -> Dict[str, Any]:
        """The CLI's decision; ``grant_tools`` is the operator's grant for the
        skill (``--grant-tools``), from the host's code, never a model's."""
        grant = ["--grant-tools", grant_tools] if grant_tools else []
        code, out, err = self._cli(["exec", "--dry-run", "--json", *grant, skill, "--", command])
        if code not in (0, EXIT_REFUSED) or not out.strip():
            raise _failure(code, err)
        doc: Dict[str, Any] = json.loads(out)
        return doc

    def explain_command(self, skill: str, command: str, opts: Dict[str, Any]) -> Explanation:
        """The CLI's judgement of a command with the request's limits and
        environment (``exec --dry-run``): the decision, without the limits
        and image a server's explanation adds."""
        if opts.get("session"):
            raise LocalModeError("sessions live on a server: set SANDBOXRUN_URL")
        if opts.get("argv"):
            raise LocalModeError("argv does not go with a command: write the arguments into the command")
        code, out, err = self._cli(["exec", "--dry-run", "--json", *_request_flags(opts), skill, "--", command])
        doc = _json_or_none(out)
        if code not in (0, EXIT_REFUSED) or doc is None:
            raise _failure(code, err)
        explained = Explanation(skill=str(doc.get("skill", skill)), action="command", command=str(doc.get("command", "")))
        if doc.get("allowed"):
            return explained
        body = {k: doc[k] for k in ("part", "reason", "suggest") if doc.get(k)}
        message = str(doc.get("reason") or "refused")
        if doc.get("part"):
            message = f"command denied at {doc['part']!r}: {message}"
        body["error"] = message
        body["explanation"] = {"skill": explained.skill, "action": "command", "command": explained.command}
        raise RefusedError(message, body=body)

    def execute(self, kind: str, skill: str, target: str, opts: Dict[str, Any]) -> Result:
        """Run a script (kind run), a command (exec) or Python code (python)."""
        flags: List[str] = ["--json"]
        stdin = b""
        args = opts.get("args")
        if kind == "python":
            if args is not None:
                raise LocalModeError("python with args needs a server: the CLI gives the code the standard input")
            flags += ["--file", "/dev/stdin"]
            stdin = target.encode()
        elif args is not None:
            flags += ["--args", "-"]
            stdin = json.dumps(args).encode()
        flags += _request_flags(opts)
        if opts.get("cwd"):
            flags += ["--cwd", str(opts["cwd"])]
        if opts.get("session"):
            raise LocalModeError("sessions live on a server: set SANDBOXRUN_URL, or give the local client a workspace folder")
        argv = list(opts.get("argv") or [])
        if kind == "run":
            positional = [skill, target, "--", *argv]
        elif kind == "exec":
            positional = [skill, "--", target]
        else:
            positional = [skill, "--", *argv]
        tmp = None
        workspace = opts.get("workspace") or self.workspace
        if workspace is None:
            tmp = tempfile.mkdtemp(prefix="sandboxrun-ws-")
            # Empty, so nothing to hide; the sandbox's uid must enter it.
            os.chmod(tmp, 0o755)
            workspace = tmp
        start = time.monotonic()
        try:
            code, out, err = self._cli([kind, *flags, "--workspace", str(workspace), *positional], stdin)
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        elapsed_ms = int((time.monotonic() - start) * 1000)
        doc = _json_or_none(out)
        if kind == "python" and doc is not None:
            if code in (EXIT_REFUSED, EXIT_ENV) and not doc.get("stdout") and not doc.get("stderr"):
                raise _failure(code, err or str(doc.get("error", "")))
            res = _from_python_shape(doc, elapsed_ms)
        elif doc is not None:
            res = Result.from_json(doc)
        else:
            failure = _failure(code, err)
            if kind == "exec" and isinstance(failure, RefusedError):
                self._explain_denial(failure, skill, target, opts.get("grant_tools"))
            raise failure
        if code == EXIT_MIDRUN:
            raise ServerError(res.error or err.strip() or "the sandbox failed mid-run", result=res)
        return res


    def _explain_denial(self, failure: RefusedError, skill: str, command: str, grant_tools: Optional[str]) -> None:
        """Give a refused command the fields a server's 403 carries (part,
        reason, suggest): the CLI states them in words, its dry-run in JSON."""
        try:
            decision = self.check_command(skill, command, grant_tools)
        except SandboxrunError:
            return
        if not decision.get("allowed"):
            failure.body.update({k: decision[k] for k in ("part", "reason", "suggest") if decision.get(k)})
            failure.body.setdefault("error", failure.message)


def _request_flags(opts: Dict[str, Any]) -> List[str]:
    """The CLI flags of a request's environment and limits."""
    flags: List[str] = []
    for key, value in (opts.get("env") or {}).items():
        flags += ["--env", f"{key}={value}"]
    if opts.get("timeout") is not None:
        t = opts["timeout"]
        flags += ["--timeout", t if isinstance(t, str) else f"{float(t):g}s"]
    if opts.get("memory_mib"):
        flags += ["--memory", f"{int(opts['memory_mib'])}m"]
    if opts.get("cpus"):
        flags += ["--cpus", f"{float(opts['cpus']):g}"]
    if opts.get("grant_tools"):
        flags += ["--grant-tools", str(opts["grant_tools"])]
    return flags


def _json_or_none(out: bytes) -> Optional[Dict[str, Any]]:
    if not out.strip():
        return None
    try:
        doc = json.loads(out)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _from_python_shape(doc: Dict[str, Any], elapsed_ms: int) -> Result:
    """The CLI's python --json answers in the agent-tool shape; map it onto
    the Result's fields (those it does not carry stay at their defaults)."""
    rc = int(doc.get("returncode", -1))
    timed_out = bool(doc.get("timed_out"))
    sig = ""
    if timed_out:
        rc = 124
    elif rc < 0:
        try:
            sig = _signal.Signals(-rc).name
        except ValueError:
            sig = f"signal {-rc}"
    res = Result(
        skill=str(doc.get("skill_name", "")),
        exit_code=rc,
        success=rc == 0 and not timed_out,
        stdout=str(doc.get("stdout", "")),
        stderr=str(doc.get("stderr", "")),
        timed_out=timed_out,
        signal=sig,
        duration_ms=elapsed_ms,
        error=str(doc.get("error") or ""),
        runtime="python",
    )
    res.stdout_bytes = len(res.stdout.encode())
    res.stderr_bytes = len(res.stderr.encode())
    try:
        res.output = json.loads(res.stdout) if res.stdout.strip() else None
    except ValueError:
        res.output = None
    return res


def _failure(code: int, stderr: str) -> SandboxrunError:
    message = stderr.strip()
    if message.startswith("sandboxrun: "):
        message = message[len("sandboxrun: "):]
    message = message or f"sandboxrun exited with status {code}"
    if code == EXIT_REFUSED:
        # The CLI's only channel for the kind of refusal is its message.
        if message.startswith("skill not found"):
            return NotFoundError(message)
        return RefusedError(message)
    if code == EXIT_ENV:
        return UnavailableError(message)
    return SandboxrunError(message)
