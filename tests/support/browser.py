"""Debian's chromium driven by playwright (never a downloaded browser): a page per test, console collected."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def chromium_path() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium missing: install.sh installs Debian's chromium package")
        pytest.skip("chromium not installed (bash install.sh)")
    return path


@contextmanager
def open_page(file_path, width: int = 1280, height: int = 800):
    """Yield (page, problems): problems collects console errors, page errors, dialogs and any network request."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="storadvise-chromium-") as profile, sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=exe, headless=True, args=CHROMIUM_ARGS,
                                                    viewport={"width": width, "height": height})
        try:
            page = ctx.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
            url = f"file://{file_path}"
            page.on("request", lambda r: problems.append(f"request: {r.url}") if r.url != url else None)
            page.goto(url)
            yield page, problems
        finally:
            ctx.close()
