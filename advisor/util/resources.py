"""Where the shipped data (rule packs, playbooks) lives, installed or in a checkout."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parents[1]  # advisor/: this file is advisor/util/resources.py


def _data_dir(name: str) -> Path:
    installed = _PKG / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PKG.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"storadvise data directory {name!r} not found (looked in {installed} and {checkout})")


def rules_dir() -> Path:
    """Directory with the YAML rule packs (``*.yml``) and ``profiles/``."""
    return _data_dir("rules")


def playbooks_dir() -> Path:
    """Directory with ``apply-tuning.yml``, ``rollback.yml`` and ``roles/``."""
    return _data_dir("playbooks")
