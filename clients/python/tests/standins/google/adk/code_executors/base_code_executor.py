"""Stand-in of google.adk.code_executors.base_code_executor (google-adk 1.x).

The real class is a pydantic BaseModel; this one keeps what a subclass
relies on: fields declared as annotations with defaults, set by keyword at
construction (a required field missing or an unknown one is an error), and
names starting with "_" left to the subclass as private attributes.
"""

from __future__ import annotations

import abc
import copy
from typing import Any, List, Tuple

from .code_execution_utils import CodeExecutionInput, CodeExecutionResult

_MISSING = object()


class BaseCodeExecutor(abc.ABC):
    optimize_data_file: bool = False
    stateful: bool = False
    error_retry_attempts: int = 2
    code_block_delimiters: List[Tuple[str, str]] = [("```tool_code\n", "\n```"), ("```python\n", "\n```")]
    execution_result_delimiters: Tuple[str, str] = ("```tool_output\n", "\n```")

    def __init__(self, **data: Any) -> None:
        for name in _fields(type(self)):
            if name in data:
                value = data.pop(name)
            else:
                value = getattr(type(self), name, _MISSING)
                if value is _MISSING:
                    raise TypeError(f"{type(self).__name__}: field {name!r} is required")
                value = copy.copy(value)
            setattr(self, name, value)
        if data:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(data)}")

    @abc.abstractmethod
    def execute_code(self, invocation_context: Any, code_execution_input: CodeExecutionInput) -> CodeExecutionResult:
        ...


def _fields(cls: type) -> List[str]:
    names: List[str] = []
    for klass in reversed(cls.__mro__):
        for name in getattr(klass, "__annotations__", {}):
            if not name.startswith("_") and name not in names:
                names.append(name)
    return names
