"""A few lines in place of pydantic, which the real agents.sandbox models use:
fields declared as annotations with defaults, keyword construction that
refuses unknown or missing fields, model_dump / model_validate / model_copy,
frozen models, and subclass registries keyed by the ``type`` default."""

from __future__ import annotations

import enum
import uuid
from pathlib import PurePath
from typing import Any, Callable, Dict, Optional

_REQUIRED = object()


class _Factory:
    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def Field(default: Any = _REQUIRED, *, default_factory: Optional[Callable[[], Any]] = None) -> Any:  # noqa: N802
    return _Factory(default_factory) if default_factory is not None else default


class Model:
    _frozen = False
    _fields: Dict[str, Any] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        fields: Dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name, ann in getattr(klass, "__annotations__", {}).items():
                if name.startswith("_") or "ClassVar" in str(ann):
                    continue
                fields[name] = klass.__dict__.get(name, fields.get(name, _REQUIRED))
        cls._fields = fields

    def __init__(self, **data: Any) -> None:
        for name, default in self._fields.items():
            if name in data:
                value = self._convert(name, data.pop(name))
            elif default is _REQUIRED:
                raise TypeError(f"{type(self).__name__}: field {name!r} is required")
            else:
                value = default.make() if isinstance(default, _Factory) else default
            object.__setattr__(self, name, value)
        if data:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(data)}")

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen and not name.startswith("_"):
            raise TypeError(f"{type(self).__name__} is frozen")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.model_dump() == other.model_dump()  # type: ignore[attr-defined]

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        return value

    def model_dump(self, mode: str = "python") -> Dict[str, Any]:
        return {name: _dump(getattr(self, name), mode) for name in self._fields}

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
        return cls(**dict(data))

    def model_copy(self, update: Optional[Dict[str, Any]] = None) -> Any:
        data = {name: getattr(self, name) for name in self._fields}
        data.update(update or {})
        return type(self)(**data)


def _dump(value: Any, mode: str) -> Any:
    if isinstance(value, Model):
        return value.model_dump(mode)
    if mode != "json":
        return value
    if isinstance(value, (uuid.UUID, PurePath)):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_dump(v, mode) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v, mode) for k, v in value.items()}
    return value
