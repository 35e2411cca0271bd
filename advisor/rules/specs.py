"""Rule packs and profiles as data: loading and validation (docs/rules.md).

The engine (advisor.rules.engine) evaluates what this module loads.
"""

from __future__ import annotations

import fnmatch
import re
import string
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from advisor.util.errors import RuleDefinitionError, SiteFileError
from advisor.rules.change_templates import RemediationSpec
from advisor.model.findings import Severity
from advisor.rules.profile_vars import substitute_vars, whole_var, whole_vars_in  # noqa: F401  (substitute_vars: re-exported)
from advisor.rules.rule_regex import compile_rule_regex
from advisor.util.resources import rules_dir
from advisor.util.yaml_lines import load_located_yaml

#: the fields a rule's ``failure`` template may name (see :func:`failure_line`)
FAILURE_FIELDS = ("host", "subject", "observed", "expected", "comparison", "message")
OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "regex", "between", "present", "absent")
Operator = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "regex", "between", "present", "absent"]
_ID_RE = re.compile(r"[A-Z][A-Z0-9]*(-[A-Z0-9]+)+")


def check_regex(operator: str | None, expected: Any) -> None:
    """A ``regex`` comparison's pattern compiles (RE2, within its size: advisor.rules.rule_regex);
    a ``${var}`` is checked where its values are known (``rules lint``, the scan's evaluation)."""
    if operator == "regex" and whole_var(expected) is None:
        compile_rule_regex(expected)


class Condition(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    operator: Operator
    expected: Any = None

    @model_validator(mode="after")
    def _regex_compiles(self) -> "Condition":
        check_regex(self.operator, self.expected)
        return self


class RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    #: the healthy condition, what a passing finding says: "TCP selective acknowledgements are enabled"
    title: str
    #: what a failed finding says is wrong, in a few words beside the title: a template over
    #: FAILURE_FIELDS, rendered by :func:`failure_line` ("SACK is off on {host}",
    #: "{subject} on {host} at {observed}, wants {comparison}"). Shipped rules all carry one; a rule
    #: without one gets a line made of its fields.
    failure: str | None = None
    #: the unit of the observed and expected values (``%``, ``ms``, ``KiB``, ``bytes``, ``threads``):
    #: shown after each number (advisor.rules.comparisons.value_text)
    unit: str | None = None
    kind: Literal["check", "python"] = "check"
    roles: list[str] = Field(default_factory=list)
    probe: str | None = None
    fact: str | None = None
    for_each: str | None = None
    #: the item (or host) is judged only where this holds: one condition, or a list that must all hold
    where: Condition | list[Condition] | None = None
    operator: Operator | None = None
    expected: Any = None
    function: str | None = None
    severity: Severity
    rationale: str = Field(min_length=1)
    references: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    remediation: RemediationSpec = Field(default_factory=RemediationSpec)
    tags: list[str] = Field(default_factory=list)
    #: the pack file the rule came from (set by the loader)
    pack: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "RuleSpec":
        if not _ID_RE.fullmatch(self.id):
            raise ValueError(f"rule id {self.id!r} must be UPPER-KEBAB-CASE like NET-TCP-SACK")
        if self.failure is not None:
            _check_failure_template(self.failure)
        if self.kind == "check":
            missing = [f for f in ("probe", "fact", "operator") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"a check rule needs {', '.join(missing)}")
            if self.operator not in ("present", "absent") and self.expected is None:
                raise ValueError("a check rule needs 'expected' (a value or ${var})")
            check_regex(self.operator, self.expected)
        else:
            if not self.function:
                raise ValueError("a python rule needs 'function' (the registered id)")
        return self

    @property
    def conditions(self) -> list[Condition]:
        """``where`` as a list (empty: none)."""
        if self.where is None:
            return []
        return list(self.where) if isinstance(self.where, list) else [self.where]

    def variables(self) -> set[str]:
        """The profile variables the rule reads."""
        out: set[str] = set()
        for value in (self.expected, *(c.expected for c in self.conditions)):
            out |= whole_vars_in(value)
        return out


def _check_failure_template(text: str) -> None:
    try:
        names = [f for _, f, spec, conv in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        raise ValueError(f"failure {text!r}: {exc} (write a literal brace as {{{{ or }}}})") from None
    unknown = [n for n in names if n not in FAILURE_FIELDS]
    if unknown or not text.strip():
        raise ValueError(f"failure {text!r}: fields are {', '.join('{' + f + '}' for f in FAILURE_FIELDS)}"
                         + (f", not {', '.join('{' + n + '}' for n in unknown)}" if unknown else ""))


def failure_line(rule: RuleSpec | None, finding: Any) -> str:
    """What a failed (or waived) finding says is wrong: its rule's ``failure`` template rendered
    with the finding's own fields. ``{host}`` is the finding's hosts folded into ranges
    (``wn[01-04]``), ``{observed}`` and ``{expected}`` carry the rule's unit, ``{comparison}`` is the
    expectation as the rule states it (``!= 0``, ``< 75%``, ``one of fq, fq_codel``). A rule without
    a template (a site's own, or ``rule`` None: a rule no longer in the catalog) gets
    "SUBJECT on HOSTS: observed OBSERVED, expected COMPARISON".

    ``finding`` is anything with the fields of advisor.model.findings.Finding (``hosts``, ``subject``,
    ``observed``, ``expected``, ``operator``, ``message``, ``unit``)."""
    from advisor.rules.comparisons import comparison_text, value_text

    unit = getattr(finding, "unit", None) or (rule.unit if rule else None)
    operator = getattr(finding, "operator", None)
    fields = {
        "host": failure_hosts(finding.hosts),
        "subject": finding.subject or "",
        "observed": value_text(finding.observed, unit),
        "expected": value_text(finding.expected, unit),
        "comparison": comparison_text(operator, finding.expected, unit),
        "message": finding.message or "",
    }
    template = rule.failure if rule and rule.failure else None
    if template is None:
        where = f"{fields['subject']} on {fields['host']}" if finding.subject else fields["host"]
        return f"{where}: observed {fields['observed']}, expected {fields['comparison']}"
    return " ".join(template.format_map(fields).split())


def failure_hosts(hosts: list[str]) -> str:
    """What ``{host}`` stands for in a failure line: the hosts folded into ranges, at most six items."""
    from advisor.util.host_ranges import hosts_text

    return hosts_text(hosts, limit=6) or "the site"


def failure_for_host(finding: Any, host: str) -> str | None:
    """A finding's failure line as one of its hosts reads it (a JUnit case is one rule on one host):
    its hosts' ranges in the line become ``host``."""
    if not finding.failure:
        return None
    return finding.failure.replace(failure_hosts(finding.hosts), host) if len(finding.hosts) > 1 else finding.failure


class RulePackFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    vars: dict[str, Any] = Field(default_factory=dict)
    rules: list[RuleSpec] = Field(default_factory=list)


class ProfileSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    include: list[str] = Field(default_factory=list)
    select: list[str] = Field(default_factory=lambda: ["*"])
    exclude: list[str] = Field(default_factory=list)
    vars: dict[str, Any] = Field(default_factory=dict)
    severity: dict[str, Severity] = Field(default_factory=dict)
    #: the storage systems the profile is for (advisor.storage_kinds names): ``rules list --profile``
    #: shows their packs and the generic ones, as a site with these storage_systems loads them;
    #: empty (and not inherited through ``include``): any
    storage_systems: list[str] = Field(default_factory=list)
    source: str = Field("", exclude=True)


class RuleCatalog(BaseModel):
    """Every rule of every pack, with the pack-level variable defaults."""

    rules: dict[str, RuleSpec]
    pack_vars: dict[str, Any]
    #: site-local rule directories loaded besides the shipped packs (``--rules DIR``, ``rules_dirs:``):
    #: their ``profiles/`` are looked up after the shipped ones
    site_dirs: list[Path] = Field(default_factory=list)


def site_rule_dirs(dirs: list[Path] | tuple[Path, ...] | None) -> list[Path]:
    """The site-local rule directories, each once, checked: a missing one is a one-line error."""
    out: list[Path] = []
    for d in dirs or ():
        p = Path(d).expanduser()
        if not p.is_dir():
            raise RuleDefinitionError(f"{d}: rules directory not found (--rules DIR or the site's rules_dirs:)")
        if p.resolve() not in [q.resolve() for q in out]:
            out.append(p)
    return out


def rule_pack_paths(directory: Path | None = None, site_dirs: list[Path] | tuple[Path, ...] = (),
                    storage_systems: list[str] | tuple[str, ...] | None = None) -> list[Path]:
    """The shipped packs (every ``*.yml`` of the rules directory) plus the packs of storage kinds
    registered from elsewhere (advisor.storage_kinds), then every ``*.yml`` of each site-local rules
    directory (``--rules DIR``: data rules only, no Python is loaded from there).

    ``storage_systems`` (a site's): the packs of the storage kinds it does not name are left out;
    the generic packs and the site's own always load."""
    d = directory or rules_dir()
    paths = sorted(d.glob("*.yml"))
    if directory is None:
        from advisor.storage_kinds import rule_packs

        for pack in rule_packs():
            p = Path(pack) if Path(pack).is_absolute() else d / pack
            if p not in paths:
                paths.append(p)
    if storage_systems:
        from advisor.storage_kinds import storage_gate

        gate = storage_gate(storage_systems)
        paths = [p for p in paths if gate.pack_loads(p)]
    for site_dir in site_dirs:
        paths.extend(p for p in sorted(Path(site_dir).glob("*.yml")) if p not in paths)
    return paths


def load_catalog(directory: Path | None = None, site_dirs: list[Path] | tuple[Path, ...] | None = None,
                 storage_systems: list[str] | tuple[str, ...] | None = None) -> RuleCatalog:
    """Every pack: the shipped ones (or those of ``directory``) and those of the site-local rule
    directories ``site_dirs``, loaded and validated the same way (a duplicate id is refused).
    ``storage_systems``: only these storage kinds' packs (and the generic ones) load."""
    rules: dict[str, RuleSpec] = {}
    pack_vars: dict[str, Any] = {}
    extra = site_rule_dirs(site_dirs)
    site_packs = {p for d in extra for p in Path(d).glob("*.yml")}
    for path in rule_pack_paths(directory, extra, storage_systems):
        # a site directory's packs: regular files of the directory only, never what a symlink names
        doc = load_located_yaml(path, "rule pack", regular_only=path in site_packs)
        if doc.data is None:
            continue
        if not isinstance(doc.data, dict):
            raise RuleDefinitionError(f"{path}:1: a rule pack is a mapping with 'rules' (and optional 'vars')")
        try:
            pack = RulePackFile.model_validate(doc.data)
        except ValidationError as exc:
            err = doc.error_from_validation(exc)
            raise RuleDefinitionError(str(err)) from None
        for index, rule in enumerate(pack.rules):
            if rule.id in rules:
                line = doc.line_of(("rules", index, "id"))
                raise RuleDefinitionError(f"{path}:{line}: duplicate rule id {rule.id} (also in {rules[rule.id].pack})")
            if path in site_packs and rule.kind == "python":
                line = doc.line_of(("rules", index, "kind"))
                raise RuleDefinitionError(f"{path}:{line}: rule {rule.id}: a site rules directory holds data rules "
                                          "only (kind: check); no Python is loaded from it")
            rule.pack = str(path) if path in site_packs else path.name
            rules[rule.id] = rule
        for k, v in pack.vars.items():
            if k in pack_vars and pack_vars[k] != v:
                raise RuleDefinitionError(f"{path}: variable {k!r} has a different default in another pack")
            pack_vars[k] = v
    return RuleCatalog(rules=rules, pack_vars=pack_vars, site_dirs=extra)


def profiles_dir(directory: Path | None = None) -> Path:
    return (directory or rules_dir()) / "profiles"


def available_profiles(directory: Path | None = None, site_dirs: list[Path] | tuple[Path, ...] = ()) -> list[str]:
    return sorted({p.stem for d in [profiles_dir(directory), *(Path(s) / "profiles" for s in site_dirs)]
                   for p in d.glob("*.yml")})


def load_profile_file(name_or_path: str, directory: Path | None = None,
                      site_dirs: list[Path] | tuple[Path, ...] = ()) -> ProfileSpec:
    """A profile by path, or by name from the shipped profiles, then each site rules directory's
    ``profiles/`` (a name defined in two places is refused: which one applies would be a guess)."""
    p = Path(name_or_path)
    if p.suffix not in (".yml", ".yaml"):
        found = [d / f"{name_or_path}.yml" for d in [profiles_dir(directory), *(Path(s) / "profiles" for s in site_dirs)]
                 if (d / f"{name_or_path}.yml").is_file()]
        if not found:
            known = ", ".join(available_profiles(directory, site_dirs)) or "none"
            raise RuleDefinitionError(f"unknown profile {name_or_path!r} (known: {known})")
        if len(found) > 1:
            raise RuleDefinitionError(f"profile {name_or_path!r} is defined twice: {found[0]} and {found[1]}")
        p = found[0]
    in_site_dir = any(p.parent == Path(s) / "profiles" for s in site_dirs)
    try:
        doc = load_located_yaml(p, "profile", regular_only=in_site_dir)
    except SiteFileError as exc:
        raise RuleDefinitionError(str(exc)) from None
    if not isinstance(doc.data, dict):
        raise RuleDefinitionError(f"{p}:1: a profile is a mapping with 'name'")
    try:
        spec = ProfileSpec.model_validate(doc.data)
    except ValidationError as exc:
        raise RuleDefinitionError(str(doc.error_from_validation(exc))) from None
    spec.source = str(p)
    return spec


def profile_storage_systems(names: list[str], directory: Path | None = None,
                            site_dirs: list[Path] | tuple[Path, ...] = ()) -> list[str]:
    """The storage systems ``names`` are for: those each profile or a profile it includes names, together;
    empty when one of them is for any (names none anywhere in its chain)."""
    found: list[str] = []

    def chain(name: str, stack: tuple[str, ...]) -> list[str]:
        if name in stack:
            raise RuleDefinitionError(f"profile include cycle: {' -> '.join(stack + (name,))}")
        spec = load_profile_file(name, directory, site_dirs)
        out = list(spec.storage_systems)
        for inc in spec.include:
            out += chain(inc, stack + (name,))
        return out

    for name in names:
        systems = chain(name, ())
        if not systems:
            return []
        found += [s for s in systems if s not in found]
    return found


class ResolvedProfile(BaseModel):
    """One or more profiles flattened: which rules run, with which variables and severities."""

    names: list[str]
    rule_ids: list[str]
    vars: dict[str, Any]
    severity: dict[str, Severity]


def resolve_profiles(names: list[str], catalog: RuleCatalog, directory: Path | None = None,
                     overrides: dict[str, Any] | None = None) -> ResolvedProfile:
    """Flatten profiles (``include:`` first, depth-first) into rules, vars and severities.

    Several profiles given together apply in order: a rule runs if any selects it (and that
    profile does not exclude it); later profiles' variables and severities win. Site variables
    (``overrides``) win over all profiles.
    """
    selected: set[str] = set()
    variables: dict[str, Any] = dict(catalog.pack_vars)
    severities: dict[str, Severity] = {}

    def flatten(name: str, stack: tuple[str, ...]) -> list[ProfileSpec]:
        if name in stack:
            raise RuleDefinitionError(f"profile include cycle: {' -> '.join(stack + (name,))}")
        spec = load_profile_file(name, directory, catalog.site_dirs)
        out: list[ProfileSpec] = []
        for inc in spec.include:
            out.extend(flatten(inc, stack + (name,)))
        out.append(spec)
        return out

    for name in names or ["generic"]:
        chain = flatten(name, ())
        chosen: set[str] = set()
        for spec in chain:
            for rid in catalog.rules:
                if any(fnmatch.fnmatchcase(rid, g) for g in spec.select):
                    chosen.add(rid)
            for rid in list(chosen):
                if any(fnmatch.fnmatchcase(rid, g) for g in spec.exclude):
                    chosen.discard(rid)
            variables.update(spec.vars)
            severities.update(spec.severity)
        selected |= chosen
    if overrides:
        variables.update(overrides)
    return ResolvedProfile(names=list(names or ["generic"]), rule_ids=sorted(selected), vars=variables,
                           severity=severities)
