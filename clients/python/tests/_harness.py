"""A real ``sandboxrun serve`` on loopback for the tests, one per module.

Nothing here is mocked: the server runs the repository's bin/sandboxrun
(``make build``) on the real engine. An unreachable engine fails the tests
loudly rather than skipping them.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package under test, installed or not

REPO = HERE.parents[2]
SKILLS = REPO / "skills"
OPENAPI = REPO / "server" / "openapi.json"


def binary() -> str:
    path = os.environ.get("SANDBOXRUN_BIN") or str(REPO / "bin" / "sandboxrun")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} does not exist: run `make build` (or set SANDBOXRUN_BIN)")
    return path


def require_docker() -> None:
    """Fail loudly when the engine is unreachable: these tests exist to run on it."""
    try:
        proc = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"Docker is unreachable ({e}): the Python client tests need the real engine") from e
    if proc.returncode != 0:
        raise RuntimeError(f"Docker is unreachable: the Python client tests need the real engine: {proc.stderr.strip()}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def local_env() -> Dict[str, str]:
    """The environment of a local-mode client: the repository's CLI, no server."""
    env = dict(os.environ)
    env.pop("SANDBOXRUN_URL", None)
    env["SANDBOXRUN_BIN"] = binary()
    return env


class Server:
    """``sandboxrun serve`` with its own sessions folder and log."""

    def __init__(
        self,
        roots: Sequence[Path] = (SKILLS,),
        *,
        token: Optional[str] = None,
        policy: Optional[str] = None,
        unix: bool = False,
        flags: Sequence[str] = (),
        env: Optional[Dict[str, str]] = None,
        ready: bool = True,
    ) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="sandboxrun-pytest-"))
        cmd: List[str] = [binary(), "serve", "--skills", ":".join(str(r) for r in roots),
                          "--sessions", str(self.dir / "sessions")]
        if unix:
            self.url = "unix:" + str(self.dir / "api.sock")
            cmd += ["--listen", self.url]
        else:
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            cmd += ["--listen", f"127.0.0.1:{port}"]
        self.token = token
        if token:
            (self.dir / "tokens").write_text(token + "\n")
            cmd += ["--tokens", str(self.dir / "tokens")]
        if policy:
            (self.dir / "policy.yaml").write_text(policy)
            cmd += ["--policy", str(self.dir / "policy.yaml")]
        cmd += list(flags)
        full_env = dict(os.environ)
        full_env.pop("SANDBOXRUN_URL", None)
        full_env.update(env or {})
        self.log = open(self.dir / "serve.log", "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        try:
            self._wait(ready)
        except BaseException:
            self.stop()
            raise

    def _wait(self, ready: bool) -> None:
        from sandboxrun import Client, SandboxrunError

        client = Client(self.url, self.token, timeout=5)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sandboxrun serve exited with {self.proc.returncode}: {self.logs()}")
            try:
                client.healthz()
                break
            except SandboxrunError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"sandboxrun serve did not answer within 30 s: {self.logs()}")
                time.sleep(0.05)
        if ready:
            try:
                client.readyz()
            except SandboxrunError as e:
                raise RuntimeError(f"Docker is unreachable from sandboxrun serve ({e}): the tests need the real engine") from e

    def logs(self) -> str:
        self.log.flush()
        return (self.dir / "serve.log").read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def write_skill(root: Path, name: str, frontmatter: str = "", scripts: Optional[Dict[str, str]] = None) -> Path:
    """A skill folder with SKILL.md and scripts (text, or bytes via latin-1)."""
    folder = root / name
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {json.dumps('test skill ' + name)}\n{frontmatter}---\n\n# {name}\n"
    )
    for rel, text in (scripts or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def containers(**labels: str) -> List[str]:
    """Running sandboxrun containers with these io.sandboxrun.* labels."""
    cmd = ["docker", "ps", "-q"]
    for key, value in labels.items():
        cmd += ["--filter", f"label=io.sandboxrun.{key.replace('_', '-')}={value}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return out.split()


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:  # loopback only
        data: bytes = r.read()
        return data
