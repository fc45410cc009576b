"""Drop-in for the ``run_python_script`` LLM tool, sandboxed.

Change the tool's import to ``from sandboxrun.tools import
run_python_script, RUN_PYTHON_SCRIPT_SCHEMA``. The name, the input schema
and the answers (success, timeout with ``returncode: -1``, and
``{"error": ...}`` for an invalid or unknown skill name) are the seed's.

What differs, and why:

- The code runs in the skill's sandbox, not on the host: no filesystem
  outside the skill (read-only) and the run's ``/workspace``, no network
  unless the skill declares it and the operator allows it, memory, CPU and
  pids caps. The seed gave model-written code the host user's rights
  ("full filesystem access (MVP simplification)").
- "The skill's venv" is the skill's image: packages a skill declares in
  SKILL.md (``python_packages``) are installed in its image by sandboxrun,
  so no skill lacks a venv and the "does not have a venv" error never
  occurs.
- The working directory is ``/workspace``, read-only without a session, so
  writing ``output.txt`` fails unless ``session=`` names a session (on a
  server); the seed wrote into the skill's own folder on the host. Files
  under the skill are at ``$SKILL_DIR``.
- The code reaches python3 on its standard input, so tracebacks name
  ``<stdin>`` where the seed's ``python -c`` said ``<string>``.
- ``timeout`` is held to the operator's ceiling.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ._shared import default_client
from .client import Client
from .errors import NotFoundError, SandboxrunError

__all__ = ["RUN_PYTHON_SCRIPT_SCHEMA", "RUN_PYTHON_SCRIPT_TOOL", "run_python_script"]

RUN_PYTHON_SCRIPT_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "skill_name": {"type": "string", "description": "Name of the skill whose venv to use"},
        "script": {"type": "string", "description": "Python code to execute"},
    },
    "required": ["skill_name", "script"],
}

# The tool as an OpenAI-style function definition.
RUN_PYTHON_SCRIPT_TOOL: Dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "run_python_script",
        "description": (
            "Execute a Python script in the specified skill's sandbox (the skill's packages installed, "
            "no network unless the skill needs it, the skill's files read-only). "
            "Returns stdout, stderr, and exit code."
        ),
        "parameters": RUN_PYTHON_SCRIPT_SCHEMA,
    },
}


def _valid_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and ".." not in name


def run_python_script(
    skill_name: str,
    script: str,
    timeout: int = 30,
    *,
    session: Optional[str] = None,
    client: Optional[Client] = None,
) -> Dict[str, Any]:
    """Run ``script`` with the skill's Python and answer in the tool's JSON shape.

    ``session`` and ``client`` are keyword-only additions: the session whose
    folder becomes the writable working directory, and the Client to use
    (default: ``SANDBOXRUN_URL``, else the local CLI).
    """
    if not _valid_name(skill_name):
        return {"error": f"Invalid skill name: '{skill_name}'. Skill names must not contain '/', '\\', or '..'"}
    try:
        c = client or default_client()
        res = c.python(skill_name, script, timeout=timeout, session=session)
    except NotFoundError:
        return {"error": f"Skill '{skill_name}' not found in skills folder"}
    except SandboxrunError as e:
        return {"error": f"Error executing script: {e}"}
    if res.timed_out:
        return {
            "skill_name": skill_name,
            "stdout": res.stdout,
            "stderr": res.stderr,
            "returncode": -1,
            "timed_out": True,
            "error": f"Script execution exceeded timeout of {timeout:g} seconds",
        }
    return {
        "skill_name": skill_name,
        "stdout": res.stdout,
        "stderr": res.stderr,
        "returncode": res.exit_code,
        "timed_out": False,
    }
