"""Where a site file is found: ``--site NAME`` is looked up in ``./sites``, the user's configuration
directory and the lab's registry (``storadvise lab up`` registers its sites there), or given as a
path."""

from __future__ import annotations

import os
from pathlib import Path

from advisor.util.errors import SiteFileError


def site_search_dirs() -> list[Path]:
    """Where ``--site NAME`` is looked up, in order."""
    dirs = [Path.cwd() / "sites"]
    cfg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "storadvise" / "sites"
    dirs.append(cfg)
    dirs.append(lab_sites_dir())
    extra = os.environ.get("STORADVISE_SITES_PATH")
    if extra:
        dirs = [Path(p) for p in extra.split(os.pathsep) if p] + dirs
    return dirs


def lab_sites_dir() -> Path:
    """Where ``storadvise lab up`` registers the site files of running labs."""
    return Path(os.environ.get("STORADVISE_LAB_DIR", "/run/storadvise/labs")) / "sites"


def find_site_file(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yml", ".yaml", ".ini", ".cfg") or os.sep in name_or_path or p.is_file():
        if not p.exists():
            raise SiteFileError(str(p), "site file not found")
        return p
    for d in site_search_dirs():
        for ext in (".yml", ".yaml"):
            cand = d / f"{name_or_path}{ext}"
            if cand.is_file():
                return cand
    looked = ", ".join(str(d) for d in site_search_dirs())
    raise SiteFileError(name_or_path, f"no site named {name_or_path!r} (looked in {looked}; or give a path)")
