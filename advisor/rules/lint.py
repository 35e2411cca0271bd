"""``storadvise rules lint``: rule packs, profiles and a site's waivers, checked together."""

from __future__ import annotations

import datetime as dt
import fnmatch
from pathlib import Path

from advisor.util.errors import StoradviseError
import advisor.rules.analytic  # noqa: F401  (its modules register the shipped analytic rules)
from advisor.rules.context import analytic_functions
from advisor.rules.references import unshipped_files
from advisor.rules.specs import available_profiles, load_catalog, load_profile_file, resolve_profiles
from probes import all_probes


def lint(site_name: str | None = None, today: dt.date | None = None,
         directory: Path | None = None, site_dirs: list[Path] | tuple[Path, ...] = ()) -> tuple[list[str], list[str]]:
    """Return (problems, warnings); each a one-line message naming the file and the rule.

    *directory* holds the rule packs to check (default: the shipped ones); *site_dirs* are site-local
    rule directories (``--rules DIR``) checked with them, as are the site's ``rules_dirs``.
    """
    problems: list[str] = []
    warnings: list[str] = []
    site = None
    if site_name:
        from advisor.site.file import load_site

        try:
            site = load_site(site_name)
        except StoradviseError as exc:
            return [str(exc)], warnings
    try:
        catalog = load_catalog(directory, [*site_dirs, *(site.rules_dirs if site else [])])
    except StoradviseError as exc:
        return [str(exc)], warnings
    probes = all_probes()
    functions = analytic_functions()
    for rid, rule in sorted(catalog.rules.items()):
        where = f"{rule.pack}: {rid}"
        if rule.kind == "check" and rule.probe not in probes:
            problems.append(f"{where}: unknown probe {rule.probe!r}")
        if rule.kind == "python" and rule.function not in functions:
            problems.append(f"{where}: function {rule.function!r} is not registered (@analytic_rule)")
        for var in rule.variables():
            if var not in catalog.pack_vars:
                problems.append(f"{where}: variable {var!r} has no default in any pack's 'vars'")
        for ref in rule.references:
            for path in unshipped_files(ref):
                problems.append(f"{where}: reference {ref!r} cites {path}, which storadvise does not ship"
                                " (cite the public source: paper, vendor guide, RFC, man page)")
        if not rule.remediation.changes and not rule.remediation.text:
            warnings.append(f"{where}: no remediation text or changes")
        if not rule.failure:
            warnings.append(f"{where}: no 'failure' (its failures read as 'SUBJECT on HOSTS: observed X, "
                            "expected Y'; docs/rules.md)")
        problems += [f"{where}: remediation.changes: {p}" for p in change_template_problems(rule, catalog.pack_vars)]
        problems += [f"{where}: {p}" for p in regex_var_problems(rule, [("its pack's vars", catalog.pack_vars)])]
    for fn in sorted(set(functions) - {r.function for r in catalog.rules.values() if r.kind == "python"}):
        warnings.append(f"analytic function {fn!r} is registered but no rule uses it")
    for name in available_profiles(directory, catalog.site_dirs):
        try:
            spec = load_profile_file(name, directory, catalog.site_dirs)
            resolve_profiles([name], catalog, directory)
        except StoradviseError as exc:
            problems.append(str(exc))
            continue
        for path in unshipped_files(spec.description or ""):
            problems.append(f"{spec.source}: description cites {path}, which storadvise does not ship")
        for glob in spec.select + spec.exclude:
            if not any(fnmatch.fnmatchcase(r, glob) for r in catalog.rules):
                warnings.append(f"{spec.source}: pattern {glob!r} matches no rule")
        for rid in spec.severity:
            if rid not in catalog.rules:
                problems.append(f"{spec.source}: severity override for unknown rule {rid}")
        for var in spec.vars:
            if var not in catalog.pack_vars:
                warnings.append(f"{spec.source}: variable {var!r} is not read by any rule pack")
        for rid, rule in sorted(catalog.rules.items()):
            problems += [f"{spec.source}: {rid}: {p}" for p in regex_var_problems(rule, [("vars", spec.vars)])]
    if site is not None:
        src = site.source or site.name
        try:
            resolve_profiles(site.profiles, catalog)
        except StoradviseError as exc:
            problems.append(f"{src}: profiles: {exc}")
        for i, w in enumerate(site.waivers):
            label = f"{src}: waivers[{i}] ({w.rule or 'settings ' + ', '.join(w.settings)} on {w.hosts})"
            if w.rule and not any(fnmatch.fnmatchcase(r, w.rule) for r in catalog.rules):
                problems.append(f"{label}: matches no rule")
            if not site.select(w.hosts):
                warnings.append(f"{label}: matches no host of the site")
            if w.expired(today):
                warnings.append(f"{label}: expired on {w.expires}; the finding fails again")
            if not w.approved_by:
                warnings.append(f"{label}: no approved_by")
        for var in site.vars:
            if var not in catalog.pack_vars:
                warnings.append(f"{src}: vars: {var!r} is not read by any rule pack")
        for rid, rule in sorted(catalog.rules.items()):
            problems += [f"{src}: {rid}: {p}" for p in regex_var_problems(rule, [("vars", site.vars)])]
    return problems, warnings


def regex_var_problems(rule, sources: list[tuple[str, dict]]) -> list[str]:
    """A ``regex`` comparison whose pattern is a ``${var}``: each value the variable is given (a
    pack's default, a profile's, the site's) compiles as the rule's own pattern must."""
    from advisor.rules.profile_vars import whole_var
    from advisor.rules.rule_regex import compile_rule_regex

    out = []
    for operator, expected in ((rule.operator, rule.expected), *((c.operator, c.expected) for c in rule.conditions)):
        name = whole_var(expected) if operator == "regex" else None
        for label, variables in sources:
            if name is None or name not in variables:
                continue
            try:
                compile_rule_regex(variables[name])
            except ValueError as exc:
                out.append(f"{label}: {name}: {exc}")
    return out


def change_template_problems(rule, pack_vars: dict) -> list[str]:
    """Unknown adapters; for check rules (which hand over no values) fields other than the
    finding's; profile variables without a default."""
    from advisor.adapters import adapters
    from advisor.rules.change_templates import FINDING_FIELDS
    from advisor.rules.profile_vars import vars_in_text

    out = []
    known = adapters()
    for t in rule.remediation.changes:
        if t.adapter not in known:
            out.append(f"unknown adapter {t.adapter!r} (known: {', '.join(known)})")
        fields = t.fields() - {"item"} - ({t.each} if t.each else set())
        if rule.kind == "check":
            extra = sorted(fields - set(FINDING_FIELDS))
            if extra:
                out.append(f"a check rule's template may use {', '.join(FINDING_FIELDS)} only, not {', '.join(extra)}")
        for text in (t.key, t.target, t.host):
            for var in vars_in_text(text):
                if var not in pack_vars:
                    out.append(f"variable {var!r} has no default in any pack's 'vars'")
    return out
