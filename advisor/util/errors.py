"""User-facing errors: each carries one line that says what was wrong and where.

The CLI prints ``str(error)`` and exits with ``error.exit_code``; a traceback is only
shown with ``--debug``.
"""

from __future__ import annotations

#: how every error storadvise prints begins (one style: the command line's own errors, site-file
#: errors, a host that cannot be used; advisor.cli.root.main)
ERROR_PREFIX = "storadvise: error: "


class StoradviseError(Exception):
    """An error the user can act on; its message is a single line."""

    exit_code = 1

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split("\n")).strip())


class SiteFileError(StoradviseError):
    """A site file (or inventory) that cannot be read or validated.

    The message names the file, the line (when known) and the field.
    """

    def __init__(self, path: str, message: str, line: int | None = None, field: str | None = None):
        self.path = str(path)
        self.line = line
        self.field = field
        where = self.path if line is None else f"{self.path}:{line}"
        what = f"{field}: {message}" if field else message
        super().__init__(f"{where}: {what}")


class UsageError(StoradviseError):
    """Bad command-line usage (an option value that makes no sense)."""


class RuleDefinitionError(StoradviseError):
    """A rule pack, profile or waiver that is malformed."""


class PluginError(StoradviseError):
    """An installed plug-in (an entry point of ours) that cannot be loaded or does not fit."""
