"""The client: every endpoint of the HTTP API, or the local CLI when no URL is set."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Optional, Union
from urllib.parse import quote

from ._local import Local, find_binary
from ._transport import Transport
from .errors import BadParamError, LocalModeError, PartialListError, SandboxrunError, error_for_status
from .session import Session
from .types import (
    Activation,
    Event,
    Explanation,
    FileEntry,
    Result,
    SessionInfo,
    SkillSummary,
    SkillVersion,
    Snapshot,
    StoredFile,
    Usage,
)

Timeout = Union[float, int, str]

# operationId in server/openapi.json -> the method serving it; a test keeps
# this in step with the API.
OPERATIONS = {
    "healthz": "healthz",
    "readyz": "readyz",
    "metrics": "metrics",
    "openapi": "openapi",
    "listSkills": "skills",
    "uploadSkill": "upload_skill",
    "listSkillVersions": "skill_versions",
    "deleteSkill": "delete_skill",
    "deleteSkillVersion": "delete_skill_version",
    "activateSkill": "activate",
    "run": "run",
    "exec": "exec",
    "python": "python",
    "explain": "explain",
    "createSession": "create_session",
    "listSessions": "list_sessions",
    "getSession": "get_session",
    "deleteSession": "delete_session",
    "createSnapshot": "create_snapshot",
    "listSnapshots": "list_snapshots",
    "deleteSnapshot": "delete_snapshot",
    "restoreSnapshot": "restore",
    "listFiles": "list_files",
    "putTar": "put_tar",
    "putFile": "put_file",
    "getFile": "get_file",
    "deleteFile": "delete_file",
    "getUsage": "usage",
}

# The endpoints that can answer as a stream, and their streaming methods.
STREAMING = {"run": "stream_run", "exec": "stream_exec", "python": "stream_python"}


def _seg(text: str, what: str = "id") -> str:
    """One path segment: an id or a name, refused when a router would clean it away."""
    if not isinstance(text, str) or text in ("", ".", "..") or "/" in text or "\\" in text:
        raise BadParamError(
            f"{what} {text!r}: ids and names are never empty, '.' or '..' and hold no '/' or '\\'; "
            "a server would resolve it to another resource (snapshots/.. is the session itself): pass the id or the name alone"
        )
    return quote(text, safe="")


def _fpath(path: str) -> str:
    """A file path relative to the workspace, its slashes kept."""
    if not isinstance(path, str) or any(seg in ("", ".", "..") for seg in path.split("/")):
        raise BadParamError(
            f"path {path!r}: a file path has no empty, '.' or '..' folder (no leading, trailing or double '/'); "
            "name the file relative to the workspace, clean, e.g. out/report.csv"
        )
    return quote(path, safe="/")


class Client:
    """A sandboxrun client.

    ``url`` is ``http://host:port`` or ``unix:/path/to.sock`` (default
    ``$SANDBOXRUN_URL``); ``token`` the bearer token (default
    ``$SANDBOXRUN_TOKEN``). With no URL at all the client runs the
    ``sandboxrun`` CLI on this host (``bin``, else ``$SANDBOXRUN_BIN``, else
    PATH) with the same return types; ``skills``, ``policy`` and
    ``workspace`` are then its --skills, --policy and --workspace (by
    default each run gets an empty private folder); ``local=True`` runs
    the CLI even when SANDBOXRUN_URL is set. Sessions, files,
    health and metrics need a server. ``timeout`` bounds one call, in
    seconds. A Client holds no connection: threads may share one.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: Optional[float] = 900.0,
        bin: Optional[str] = None,
        skills: Optional[str] = None,
        policy: Optional[str] = None,
        workspace: Optional[str] = None,
        local: bool = False,
    ) -> None:
        if local and url:
            raise ValueError("local=True runs the CLI: give no url with it")
        if not local:
            url = url or os.environ.get("SANDBOXRUN_URL") or None
        token = token or os.environ.get("SANDBOXRUN_TOKEN") or None
        self._http: Optional[Transport] = None
        self._local: Optional[Local] = None
        if url:
            self._http = Transport(url, token, timeout)
            return
        binary = find_binary(bin)
        if binary is None:
            raise SandboxrunError(
                "no server and no CLI: set SANDBOXRUN_URL (http://host:port or unix:/path), "
                "or install sandboxrun on PATH or set SANDBOXRUN_BIN"
            )
        self._local = Local(binary, skills, policy, workspace, timeout)

    @property
    def local(self) -> bool:
        """True when calls run the CLI on this host rather than a server."""
        return self._local is not None

    def _local_cli(self) -> Local:
        """The CLI behind a local-mode client, for the framework drop-in,
        whose executor passes the host's grant (``--grant-tools``)."""
        if self._local is None:
            raise LocalModeError("the operator's grant goes to the local CLI; on a server its policy decides")
        return self._local

    @property
    def url(self) -> str:
        return self._http.url if self._http else ""

    def _server(self, what: str) -> Transport:
        if self._http is None:
            raise LocalModeError(f"{what} needs a server: set SANDBOXRUN_URL or pass url=")
        return self._http

    # -- health and description ------------------------------------------------

    def healthz(self) -> Dict[str, Any]:
        """GET /healthz: the server process answers."""
        doc: Dict[str, Any] = self._server("healthz").json("GET", "/healthz")
        return doc

    def readyz(self) -> Dict[str, Any]:
        """GET /readyz: the engine answers; UnavailableError when it does not."""
        doc: Dict[str, Any] = self._server("readyz").json("GET", "/readyz")
        return doc

    def metrics(self) -> str:
        """GET /metrics in the Prometheus text format."""
        _, _, data = self._server("metrics").call("GET", "/metrics")
        return data.decode("utf-8", "replace")

    def openapi(self) -> Dict[str, Any]:
        """GET /v1/openapi.json, the API's description."""
        doc: Dict[str, Any] = self._server("openapi").json("GET", "/v1/openapi.json")
        return doc

    # -- usage -----------------------------------------------------------------

    def usage(self) -> Usage:
        """GET /v1/usage: what your token used, per window, with its quotas.
        A run past a quota raises BusyError naming the quota, with
        ``retry_after`` the seconds until the next window."""
        return Usage.from_json(self._server("usage").json("GET", "/v1/usage"))

    def usage_all(self) -> List[Usage]:
        """GET /v1/usage?all=true: every token's use, by label; for a token the
        server's policy lists under tenants.operators (RefusedError otherwise)."""
        doc = self._server("usage").json("GET", "/v1/usage?all=true")
        return [Usage.from_json(u) for u in doc.get("tenants", [])]

    # -- skills ----------------------------------------------------------------

    def skills(self) -> List[SkillSummary]:
        """The skills, name and description only."""
        if self._local:
            return self._local.skills()
        doc = self._server("skills").json("GET", "/v1/skills")
        return [SkillSummary.from_json(s) for s in doc.get("skills", [])]

    def upload_skill(self, data: bytes, media: str = "application/x-tar") -> SkillVersion:
        """Upload one skill, a tar (or a zip with media="application/zip")
        holding SKILL.md at its root or in one top folder; the same content
        again returns the version already stored. Pin it in a run as
        ``name@version`` or ``name@sha256:<hex>``."""
        _, _, raw = self._server("skills").call("POST", "/v1/skills", bytes(data), {"Content-Type": media})
        return SkillVersion.from_json(json.loads(raw))

    def skill_versions(self, name: str) -> List[SkillVersion]:
        """The versions of one of your uploaded skills, oldest first."""
        doc = self._server("skills").json("GET", f"/v1/skills/{_seg(name, 'skill name')}/versions")
        return [SkillVersion.from_json(v) for v in doc.get("versions", [])]

    def delete_skill(self, name: str) -> None:
        """Remove every version of one of your uploaded skills."""
        self._server("skills").call("DELETE", "/v1/skills/" + _seg(name, 'skill name'))

    def delete_skill_version(self, name: str, version: str) -> None:
        """Remove one version (a version or sha256:<hex>) of an uploaded skill."""
        self._server("skills").call("DELETE", f"/v1/skills/{_seg(name, 'skill name')}/versions/{_seg(version, 'version')}")

    def activate(self, name: str) -> Activation:
        """A skill's instructions with {baseDir} resolved, its files and allowed tools."""
        if self._local:
            return self._local.activate(name)
        return Activation.from_json(self._server("activate").json("GET", "/v1/skills/" + _seg(name, 'skill name')))

    def check_command(self, skill: str, command: str) -> Dict[str, Any]:
        """Local mode only: sandboxrun's own command checker, without running
        anything (``exec --dry-run``): ``{allowed, command, part, reason, suggest}``.
        On a server, ``explain(skill, command=...)`` answers the same question."""
        if self._local is None:
            raise LocalModeError("check_command runs the local CLI; on a server use explain(skill, command=...)")
        return self._local.check_command(skill, command)

    def explain(
        self,
        skill: str,
        *,
        script: Optional[str] = None,
        command: Optional[str] = None,
        code: Optional[str] = None,
        args: Optional[Dict[str, Any]] = None,
        argv: Optional[List[str]] = None,
        env: Optional[Dict[str, str]] = None,
        timeout: Optional[Timeout] = None,
        memory_mib: Optional[int] = None,
        cpus: Optional[float] = None,
        session: Optional[str] = None,
    ) -> Explanation:
        """What ``run`` (script=), ``exec`` (command=) or ``python`` (code=)
        would be, decided as that run would decide it, without running it:
        limits, image, network, runner, workspace. A refusal raises
        RefusedError (``part``, ``reason``, ``suggest``; ``explanation`` is
        what was decided before it).

        Locally the CLI judges commands only (``exec --dry-run``) and the
        answer holds the decision (skill, action, command); a script or
        code needs a server (LocalModeError).
        """
        given = {k: v for k, v in (("script", script), ("command", command), ("code", code)) if v}
        if len(given) != 1:
            raise ValueError("explain: give exactly one of script=, command= and code=")
        (key, target), = given.items()
        opts = {"args": args, "argv": argv, "env": env, "timeout": timeout, "memory_mib": memory_mib, "cpus": cpus, "session": session}
        if self._local:
            if key != "command":
                raise LocalModeError("explain of a script or code needs a server; locally only commands are judged (exec --dry-run)")
            return self._local.explain_command(skill, target, opts)
        return Explanation.from_json(self._server("explain").json("POST", f"/v1/skills/{_seg(skill, 'skill name')}/explain", _body(key, target, opts)))

    # -- runs ------------------------------------------------------------------

    def run(
        self,
        skill: str,
        script: str,
        *,
        args: Optional[Dict[str, Any]] = None,
        argv: Optional[List[str]] = None,
        env: Optional[Dict[str, str]] = None,
        timeout: Optional[Timeout] = None,
        memory_mib: Optional[int] = None,
        cpus: Optional[float] = None,
        session: Optional[str] = None,
        cwd: Optional[str] = None,
        workspace: Optional[str] = None,
        usage_every_ms: Optional[int] = None,
    ) -> Result:
        """Run one of the skill's scripts (``scripts/x.py``); ``args`` arrive as JSON on its stdin.

        A non-zero exit is a Result, not an exception. ``cwd`` ("workspace"
        or "skill") and ``workspace`` (a host folder mounted at /workspace,
        read-only unless the skill has Write) are for local mode: a server
        starts runs in /workspace, a session's folder or an empty one.
        """
        return self._execute("run", skill, "script", script, locals())

    def exec(
        self,
        skill: str,
        command: str,
        *,
        args: Optional[Dict[str, Any]] = None,
        env: Optional[Dict[str, str]] = None,
        timeout: Optional[Timeout] = None,
        memory_mib: Optional[int] = None,
        cpus: Optional[float] = None,
        session: Optional[str] = None,
        cwd: Optional[str] = None,
        workspace: Optional[str] = None,
        usage_every_ms: Optional[int] = None,
    ) -> Result:
        """Run a shell command as an agent's Bash tool passes it, checked against the skill's allowed-tools."""
        return self._execute("exec", skill, "command", command, locals())

    def python(
        self,
        skill: str,
        code: str,
        *,
        args: Optional[Dict[str, Any]] = None,
        argv: Optional[List[str]] = None,
        env: Optional[Dict[str, str]] = None,
        timeout: Optional[Timeout] = None,
        memory_mib: Optional[int] = None,
        cpus: Optional[float] = None,
        session: Optional[str] = None,
        cwd: Optional[str] = None,
        workspace: Optional[str] = None,
        usage_every_ms: Optional[int] = None,
    ) -> Result:
        """Run Python source in the skill's sandbox."""
        return self._execute("python", skill, "code", code, locals())

    def stream_run(self, skill: str, script: str, **kw: Any) -> Iterator[Union[Event, Result]]:
        """As run, yielding stdout/stderr Events as they come and the Result last.

        ``usage`` Events (``Event.usage``, a LiveUsage) come every
        ``usage_every_ms`` (default 2000 on a server; 0 for none) while the
        script runs, on backends that can read the sandbox's use.
        """
        return self._stream("run", skill, "script", script, kw)

    def stream_exec(self, skill: str, command: str, **kw: Any) -> Iterator[Union[Event, Result]]:
        """As exec, yielding stdout/stderr Events as they come and the Result last."""
        return self._stream("exec", skill, "command", command, kw)

    def stream_python(self, skill: str, code: str, **kw: Any) -> Iterator[Union[Event, Result]]:
        """As python, yielding stdout/stderr Events as they come and the Result last."""
        return self._stream("python", skill, "code", code, kw)

    def _execute(self, kind: str, skill: str, key: str, target: str, kw: Dict[str, Any]) -> Result:
        opts = {k: v for k, v in kw.items() if k not in ("self", "skill", key)}
        if self._local:
            _no_local_usage(opts)
            return self._local.execute(kind, skill, target, opts)
        doc = self._server(kind).json("POST", f"/v1/skills/{_seg(skill, 'skill name')}/{kind}", _body(key, target, opts))
        return Result.from_json(doc)

    def _stream(self, kind: str, skill: str, key: str, target: str, kw: Dict[str, Any]) -> Iterator[Union[Event, Result]]:
        if self._local:
            # The CLI gives the Result only at the end: locally the events
            # come then, in one piece each, before it.
            _no_local_usage(kw)
            res = self._local.execute(kind, skill, target, kw)
            if res.stdout:
                yield Event(type="stdout", data=res.stdout)
            if res.stderr:
                yield Event(type="stderr", data=res.stderr)
            yield res
            return
        path = f"/v1/skills/{_seg(skill, 'skill name')}/{kind}"
        for doc in self._server(kind).lines("POST", path, _body(key, target, kw)):
            ev = Event.from_json(doc)
            if ev.type == "result" and ev.result is not None:
                yield ev.result
                return
            if ev.type == "error":
                err = ev.error or {}
                result = Result.from_json(err["result"]) if isinstance(err.get("result"), dict) else None
                # The status line (200) went out with the first output, so
                # the failure comes in the stream: the sandbox failed mid-run.
                raise error_for_status(500, str(err.get("error", "the run failed")), err, result)
            yield ev
        raise SandboxrunError(f"POST {path}: the stream ended without a Result")

    # -- sessions and files ------------------------------------------------------

    def create_session(self, ttl: Optional[Timeout] = None) -> Session:
        """A new session (a workspace kept across calls); use it as a context manager to delete it at the end."""
        doc = self._server("sessions").json("POST", "/v1/sessions", {} if ttl is None else {"ttl": ttl})
        return Session(self, SessionInfo.from_json(doc))

    def list_sessions(self) -> List[SessionInfo]:
        """The caller's sessions on every replica. Raises PartialListError,
        with the sessions that came in ``items``, when a replica did not answer."""
        doc = self._server("sessions").json("GET", "/v1/sessions")
        items = [SessionInfo.from_json(s) for s in doc.get("sessions", [])]
        if doc.get("partial"):
            unreachable = doc.get("unreachable") or []
            msg = ("the list lacks the sessions of replicas " + ", ".join(unreachable) + ", which did not answer: retry in a few seconds"
                   if unreachable else "the list holds one replica's sessions: the server was started without --replicas")
            raise PartialListError(msg, items=items, unreachable=unreachable, status=200, body=doc)
        return items

    def get_session(self, session_id: str) -> SessionInfo:
        return SessionInfo.from_json(self._server("sessions").json("GET", "/v1/sessions/" + _seg(session_id, 'session id')))

    def delete_session(self, session_id: str) -> None:
        """Delete a session: a run in it is cancelled, then its folder goes."""
        self._server("sessions").call("DELETE", "/v1/sessions/" + _seg(session_id, 'session id'))

    def fork(self, session_id: str, snapshot: Optional[str] = None, ttl: Optional[Timeout] = None) -> Session:
        """A new session with the files of session_id as they are now, or as its snapshot holds them."""
        source: Dict[str, Any] = {"session": session_id}
        if snapshot is not None:
            source["snapshot"] = snapshot
        body: Dict[str, Any] = {"from": source}
        if ttl is not None:
            body["ttl"] = ttl
        doc = self._server("sessions").json("POST", "/v1/sessions", body)
        return Session(self, SessionInfo.from_json(doc))

    def create_snapshot(self, session_id: str, label: Optional[str] = None) -> Snapshot:
        """Save the session's files as they are now (files only)."""
        body = {} if label is None else {"label": label}
        return Snapshot.from_json(self._server("sessions").json("POST", f"/v1/sessions/{_seg(session_id, 'session id')}/snapshots", body))

    def list_snapshots(self, session_id: str) -> List[Snapshot]:
        doc = self._server("sessions").json("GET", f"/v1/sessions/{_seg(session_id, 'session id')}/snapshots")
        return [Snapshot.from_json(s) for s in doc.get("snapshots", [])]

    def delete_snapshot(self, session_id: str, snapshot: str) -> None:
        self._server("sessions").call("DELETE", f"/v1/sessions/{_seg(session_id, 'session id')}/snapshots/{_seg(snapshot, 'snapshot')}")

    def restore(self, session_id: str, snapshot: str) -> SessionInfo:
        """Make the session's workspace exactly the snapshot: files added since go, deleted ones come back."""
        doc = self._server("sessions").json("POST", f"/v1/sessions/{_seg(session_id, 'session id')}/restore", {"snapshot": snapshot})
        return SessionInfo.from_json(doc)

    def put_file(self, session_id: str, path: str, data: Union[bytes, str]) -> StoredFile:
        """Write one file (folders on the way are made); str is written as UTF-8."""
        body = data.encode() if isinstance(data, str) else bytes(data)
        _, _, raw = self._server("files").call(
            "PUT", f"/v1/sessions/{_seg(session_id, 'session id')}/files/{_fpath(path)}", body,
            {"Content-Type": "application/octet-stream"},
        )
        return StoredFile.from_json(json.loads(raw))

    def get_file(self, session_id: str, path: str) -> bytes:
        _, _, raw = self._server("files").call("GET", f"/v1/sessions/{_seg(session_id, 'session id')}/files/{_fpath(path)}")
        return raw

    def delete_file(self, session_id: str, path: str) -> None:
        """Delete a file, or a folder with what it holds; a link goes, never its target."""
        self._server("files").call("DELETE", f"/v1/sessions/{_seg(session_id, 'session id')}/files/{_fpath(path)}")

    def list_files(self, session_id: str, path: Optional[str] = None) -> List[FileEntry]:
        q = "" if path is None else "?path=" + quote(path, safe="/")
        doc = self._server("files").json("GET", f"/v1/sessions/{_seg(session_id, 'session id')}/files{q}")
        return [FileEntry.from_json(f) for f in doc.get("files", [])]

    def get_tar(self, session_id: str) -> bytes:
        """The whole workspace as a tar (links stay links)."""
        _, _, raw = self._server("files").call(
            "GET", f"/v1/sessions/{_seg(session_id, 'session id')}/files", headers={"Accept": "application/x-tar"}
        )
        return raw

    def put_tar(self, session_id: str, data: bytes) -> List[StoredFile]:
        """Unpack a tar of regular files and folders into the workspace, all or nothing."""
        _, _, raw = self._server("files").call(
            "PUT", f"/v1/sessions/{_seg(session_id, 'session id')}/files", bytes(data), {"Content-Type": "application/x-tar"}
        )
        return [StoredFile.from_json(f) for f in json.loads(raw).get("files", [])]


def _no_local_usage(opts: Dict[str, Any]) -> None:
    if opts.get("usage_every_ms"):
        raise LocalModeError("usage_every_ms: live usage samples come from a server; locally the Result has cpu_time_ms and peak_rss_kb")


def _body(key: str, target: str, opts: Dict[str, Any]) -> Dict[str, Any]:
    if opts.get("cwd") not in (None, "workspace"):
        raise LocalModeError("cwd: a server starts every run in /workspace; cwd='skill' is for local mode")
    if opts.get("workspace") is not None:
        raise LocalModeError("workspace: a server never mounts host folders; put the files in a session instead")
    body: Dict[str, Any] = {key: target}
    for name in ("args", "argv", "env", "timeout", "memory_mib", "cpus", "session", "usage_every_ms"):
        value = opts.get(name)
        if value is not None:
            body[name] = value
    return body
