"""Property: arbitrary host text given to every renderer (console, PLAN.md, HTML, JUnit,
Prometheus) comes out in an output that parses in its format with the text visible, or is
refused with a one-line error (the checks are bench/bench_fuzz.py's, run here by hypothesis)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_spec = importlib.util.spec_from_file_location("bench_fuzz", Path(__file__).resolve().parents[2] / "bench" / "bench_fuzz.py")
bench_fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_fuzz)

#: any code point (lone surrogates included), with the pieces of markup, Markdown, HTML and
#: terminal escapes that matter most mixed in
host_text = st.lists(st.text(st.characters(exclude_categories=()), max_size=8) | st.sampled_from(bench_fuzz.MARKUP), max_size=6).map("".join).map(
    lambda s: s[:40])


@pytest.mark.parametrize("renderer", sorted(bench_fuzz.RENDERERS))
@settings(max_examples=150, deadline=None)
@given(text=host_text)
def test_host_text_is_shown_safely_or_refused(renderer, text):
    assert bench_fuzz.check_renderer(renderer, text) is None
