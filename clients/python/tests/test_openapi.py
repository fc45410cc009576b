"""The client against server/openapi.json: an endpoint, a Result field or a
request field the API has and the client lacks fails here."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import unittest
from pathlib import Path
from typing import Any, Dict, List

import _harness
import sandboxrun
from sandboxrun import client as client_mod
from sandboxrun import errors, types

# schema name in openapi.json -> the dataclass that carries it
SCHEMAS = {
    "Result": types.Result,
    "Limits": types.Limits,
    "Event": types.Event,
    "LiveUsage": types.LiveUsage,
    "SkillSummary": types.SkillSummary,
    "Activation": types.Activation,
    "Session": types.SessionInfo,
    "StoredFile": types.StoredFile,
    "FileEntry": types.FileEntry,
    "FileChange": types.FileChange,
    "Explanation": types.Explanation,
    "Snapshot": types.Snapshot,
    "Usage": types.Usage,
    "UsageWindow": types.UsageWindow,
    "UsageFigures": types.UsageFigures,
    "UsageLimits": types.UsageLimits,
}

# request schema -> (Client method, the positional parameter its required field maps to)
REQUESTS = {
    "RunRequest": "run",
    "ExecRequest": "exec",
    "PythonRequest": "python",
    "ExplainRequest": "explain",
    "SessionCreate": "create_session",
    "SnapshotCreate": "create_snapshot",
    "RestoreRequest": "restore",
}

# request fields a method of their own carries ("from" is a keyword in Python)
REQUEST_METHODS = {("SessionCreate", "from"): "fork"}

# list documents: their one key must be read by the client
LISTS = ["SkillList", "SessionList", "StoredFiles", "FileList", "SnapshotList", "UsageAll"]


def load() -> Dict[str, Any]:
    spec: Dict[str, Any] = json.loads(Path(_harness.OPENAPI).read_text())
    return spec


def missing_operations(spec: Dict[str, Any]) -> List[str]:
    out = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if not isinstance(op, dict) or "operationId" not in op:
                continue
            op_id = op["operationId"]
            name = client_mod.OPERATIONS.get(op_id)
            if name is None or not callable(getattr(sandboxrun.Client, name, None)):
                out.append(f"{method.upper()} {path} ({op_id}): no Client method")
                continue
            content = op.get("responses", {}).get("200", {}).get("content", {})
            if "application/x-ndjson" in content:
                stream = client_mod.STREAMING.get(op_id)
                if stream is None or not callable(getattr(sandboxrun.Client, stream, None)):
                    out.append(f"{method.upper()} {path} ({op_id}): streams, and the Client has no streaming method")
            for status in op.get("responses", {}):
                code = int(status)
                if code >= 400 and type(errors.error_for_status(code, "x")) is errors.SandboxrunError:
                    out.append(f"{method.upper()} {path} ({op_id}): status {code} has no typed exception")
    return out


def _props(spec: Dict[str, Any], schema: Dict[str, Any]) -> Dict[str, Any]:
    props: Dict[str, Any] = schema.get("properties", {})
    return props


def missing_fields(spec: Dict[str, Any]) -> List[str]:
    out = []
    schemas = spec["components"]["schemas"]
    for name, cls in SCHEMAS.items():
        fields = {f.name for f in dataclasses.fields(cls)}
        for prop in _props(spec, schemas[name]):
            if prop not in fields:
                out.append(f"{name}.{prop}: not a field of {cls.__name__}")
    tool_props = schemas["Activation"]["properties"]["allowed_tools"]["items"]["properties"]
    for prop in tool_props:
        if prop not in {f.name for f in dataclasses.fields(types.AllowedTool)}:
            out.append(f"Activation.allowed_tools[].{prop}: not a field of AllowedTool")
    for name, method in REQUESTS.items():
        params = inspect.signature(getattr(sandboxrun.Client, method)).parameters
        for prop in _props(spec, schemas[name]):
            other = REQUEST_METHODS.get((name, prop))
            if other is not None:
                if not callable(getattr(sandboxrun.Client, other, None)):
                    out.append(f"{name}.{prop}: no Client.{other}")
            elif prop not in params:
                out.append(f"{name}.{prop}: not a parameter of Client.{method}")
    for prop in _props(spec, schemas["Error"]):
        carried = {"error": "message", "result": "result"}.get(prop, prop)
        if not hasattr(errors.RefusedError("x"), carried):
            out.append(f"Error.{prop}: the exceptions do not carry it")
    source = inspect.getsource(client_mod)
    for name in LISTS:
        for key in _props(spec, schemas[name]):
            if f'"{key}"' not in source:
                out.append(f"{name}.{key}: the client never reads it")
    return out


class OpenAPI(unittest.TestCase):
    def test_every_endpoint_has_a_method(self) -> None:
        self.assertEqual(missing_operations(load()), [])

    def test_every_field_is_carried(self) -> None:
        self.assertEqual(missing_fields(load()), [])

    def test_the_check_catches_what_is_missing(self) -> None:
        spec = copy.deepcopy(load())
        spec["paths"]["/v1/skills/{name}/debug"] = {"post": {"operationId": "debug", "responses": {}}}
        spec["components"]["schemas"]["Result"]["properties"]["gpu_ms"] = {"type": "integer"}
        spec["components"]["schemas"]["RunRequest"]["properties"]["gpus"] = {"type": "integer"}
        spec["components"]["schemas"]["Error"]["properties"]["hint"] = {"type": "string"}
        self.assertEqual(len(missing_operations(spec)), 1)
        self.assertEqual(len(missing_fields(spec)), 3)

    def test_every_required_result_field_is_read_from_json(self) -> None:
        spec = load()
        doc: Dict[str, Any] = {}
        for prop in spec["components"]["schemas"]["Result"]["required"]:
            doc[prop] = {"limits": {"timeout_s": 3}, "command": ["x"], "output": {"k": 1}}.get(prop, 7 if prop.endswith(("_ms", "_bytes", "code")) else "v")
        res = types.Result.from_json(doc)
        self.assertEqual(res.extra, {})
        self.assertEqual(res.limits.timeout_s, 3)
        res = types.Result.from_json({**doc, "future_field": 1})
        self.assertEqual(res.extra, {"future_field": 1})


if __name__ == "__main__":
    unittest.main()
