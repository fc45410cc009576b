"""What the drop-ins share: one client per process unless given, and the
mapping of a host skill folder to the skill a run names."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Optional

from .client import Client

_lock = threading.Lock()
_default: Optional[Client] = None


def default_client() -> Client:
    """A Client from the environment (SANDBOXRUN_URL, else the local CLI), made once."""
    global _default
    with _lock:
        if _default is None:
            _default = Client()
        return _default


def skill_ref(client: Client, skill_dir: Path, name: Optional[str]) -> str:
    """The skill a run names: locally the host folder itself (the CLI runs
    that folder), on a server the skill's name (a server never takes host
    paths): ``name`` when given, else the folder's name."""
    if client.local:
        return os.path.realpath(str(skill_dir))
    return name or Path(os.path.realpath(str(skill_dir))).name
