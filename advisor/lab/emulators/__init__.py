"""CLI emulators used inside lab hosts only (storadvise lab emulator — not IBM software)."""
