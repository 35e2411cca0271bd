"""Analytic rules: Python functions registered with ``@analytic_rule(id)``.

Each module here is imported by the engine; the rules' metadata lives in ``rules/*.yml``
entries with ``kind: python``.
"""
