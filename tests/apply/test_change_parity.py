"""The plan's msgspec form of a saved scan (advisor/apply/plan_input.py) against the models it reads
(advisor/model/findings.py): a change is one type, and its msgspec copy holds, field by field, the same names,
types, optionality and defaults, in the same order. The finding's struct holds a subset of the
finding's fields (the decoder skips the rest), each as the model has it."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

import msgspec
import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from advisor.apply.plan_input import PlanBootValue, PlanChange, PlanFinding, PlanRemediation
from advisor.model.findings import BootSource, BootValue, Change, Finding, Remediation

#: each struct and the model it copies
PAIRS: dict[type, type[BaseModel]] = {PlanChange: Change, PlanBootValue: BootValue, PlanFinding: Finding,
                                      PlanRemediation: Remediation}

NO_DEFAULT = "required"


def _type(t: Any) -> Any:
    """A type with each struct replaced by its model, a union as the set of its members."""
    if t in PAIRS:
        return PAIRS[t]
    args = get_args(t)
    if not args:
        return t
    origin = get_origin(t)
    if origin in (Union, types.UnionType):
        return frozenset(_type(a) for a in args)
    return (origin, tuple(_type(a) for a in args))


def _default(value: Any) -> Any:
    """A struct's default (a PlanRemediation()) as its model's."""
    return PAIRS[type(value)].model_validate(value, from_attributes=True) if type(value) in PAIRS else value


def _like_change(name: str, extra: tuple[tuple, ...] = (), **types_of: Any) -> type:
    """PlanChange's fields (``types_of``: other types for some; ``extra``: more fields), as a new struct."""
    fields = [(f.name, types_of.get(f.name, f.type)) if f.default is msgspec.NODEFAULT else
              (f.name, types_of.get(f.name, f.type), f.default) for f in msgspec.structs.fields(PlanChange)]
    return msgspec.defstruct(name, fields + list(extra), kw_only=True)


def struct_fields(struct: type) -> dict[str, tuple[Any, Any]]:
    """name -> (type, default): NO_DEFAULT for a required field, a factory's value called."""
    out = {}
    for f in msgspec.structs.fields(struct):
        if f.default is not msgspec.NODEFAULT:
            default = f.default
        elif f.default_factory is not msgspec.NODEFAULT:
            default = f.default_factory()
        else:
            default = NO_DEFAULT
        out[f.name] = (_type(f.type), _default(default))
    return out


def model_fields(model: type[BaseModel]) -> dict[str, tuple[Any, Any]]:
    out = {}
    for name, f in model.model_fields.items():
        if f.is_required():
            default = NO_DEFAULT
        elif f.default_factory is not None:
            default = f.default_factory()
        else:
            default = f.default if f.default is not PydanticUndefined else NO_DEFAULT
        out[name] = (_type(f.annotation), default)
    return out


def _differences(struct: type, model: type[BaseModel], subset: bool) -> list[str]:
    mine, theirs = struct_fields(struct), model_fields(model)
    problems = [f"{struct.__name__}.{n}: not a field of {model.__name__}" for n in mine if n not in theirs]
    if not subset:
        problems += [f"{model.__name__}.{n}: missing in {struct.__name__}" for n in theirs if n not in mine]
        if not problems and list(mine) != list(theirs):
            problems.append(f"field order: {struct.__name__} {list(mine)} != {model.__name__} {list(theirs)}")
    for n in mine:
        if n in theirs and mine[n] != theirs[n]:
            problems.append(f"{struct.__name__}.{n}: (type, default) {mine[n]} != {model.__name__}.{n} {theirs[n]}")
    return problems


@pytest.mark.parametrize("struct", [PlanChange, PlanBootValue])
def test_the_change_struct_has_the_change_model_s_fields(struct):
    assert _differences(struct, PAIRS[struct], subset=False) == []


@pytest.mark.parametrize("struct", [PlanFinding, PlanRemediation])
def test_the_finding_struct_reads_finding_fields_as_the_model_types_them(struct):
    assert _differences(struct, PAIRS[struct], subset=True) == []


def test_a_field_on_one_side_only_or_typed_otherwise_is_a_difference():
    """The check itself: a field added to the struct alone, to the model alone, made optional, or
    given another type, each fails it."""

    class Bigger(Change):
        reason: str = ""

    assert _differences(PlanChange, Bigger, subset=False) == ["Bigger.reason: missing in PlanChange"]
    Extra = _like_change("Extra", extra=(("reason", str, ""),))
    assert _differences(Extra, Change, subset=False) == ["Extra.reason: not a field of Change"]
    # the required fields given a default
    fields = [(f.name, f.type, None if f.default is msgspec.NODEFAULT else f.default)
              for f in msgspec.structs.fields(PlanChange)]
    Optional = msgspec.defstruct("Optional", fields, kw_only=True)
    assert [p.split(":")[0] for p in _differences(Optional, Change, subset=False)] == [
        "Optional.host", "Optional.adapter", "Optional.key", "Optional.target"]
    Retyped = _like_change("Retyped", boot=dict[str, Any] | None)
    assert [p.split(":")[0] for p in _differences(Retyped, Change, subset=False)] == ["Retyped.boot"]
    assert _differences(_like_change("Same"), Change, subset=False) == []


def test_a_change_decoded_by_the_plan_is_the_change_the_report_wrote():
    """The same JSON through both: every field of the model equal on the struct."""
    change = Change(host="st01", adapter="sysctl", key="net.ipv4.tcp_sack", runtime="0", persisted="0", target="1",
                    boot=BootValue(value="1", source=BootSource.default, origin="kernel default"))
    decoded = msgspec.json.decode(change.model_dump_json(), type=PlanChange)
    assert Change.model_validate(decoded, from_attributes=True) == change
