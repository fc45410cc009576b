"""Stand-in of google.adk.code_executors.code_execution_utils (google-adk 1.x)."""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Union


@dataclasses.dataclass(frozen=True)
class File:
    name: str
    # base64 text, or (since 1.x's later releases) the raw bytes
    content: Union[str, bytes]
    mime_type: str = "text/plain"


@dataclasses.dataclass
class CodeExecutionInput:
    code: str
    input_files: List[File] = dataclasses.field(default_factory=list)
    execution_id: Optional[str] = None


@dataclasses.dataclass
class CodeExecutionResult:
    stdout: str = ""
    stderr: str = ""
    output_files: List[File] = dataclasses.field(default_factory=list)
