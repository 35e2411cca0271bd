"""Pydantic models built from values already known valid, at the cost of a dict.

The scan builds a model per host and probe (10,000 hosts: hundreds of thousands of them) from
data that was validated once already (parsed facts, a rule's own metadata). ``trusted`` builds
such an instance exactly as ``Model.model_construct`` does (no validation), without its
per-field alias and default lookups, and only when every field is given.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__
#: each model class's field names (pydantic computes ``model_fields`` anew on every access)
_FIELDS: dict[type, frozenset[str]] = {}


def trusted(cls: type[M], fields: dict[str, Any]) -> M:
    """An instance of ``cls`` holding ``fields`` (every field of ``cls``, values of the right types)."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(cls.model_fields)
    if fields.keys() != names:
        raise TypeError(f"{cls.__name__}: trusted() needs every field; got {sorted(fields)}")
    m = cls.__new__(cls)
    _set(m, "__dict__", fields)
    _set(m, "__pydantic_fields_set__", set(fields))
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m
