"""The collect playbook's one script for many hosts' batches (SharedScript), run by a real sh, and
the shipped decoder on its output: each batch by its number, each distinct probe script written
once, each host's batch by the host's name, an unknown number or name refused, and a pty's CR LF line ends (Ansible's ssh -tt) read as LF."""

from __future__ import annotations

import subprocess

from advisor.util.shipped_code import module_utils
from advisor.transport.base import Command
from advisor.transport.batch_framing import SharedScript

frames = module_utils("storadvise_batch_frames")


def _run(text: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-s", "--", *args], input=text.encode(), capture_output=True, timeout=60)


def _decode(shared: SharedScript, n: int, stdout: bytes) -> list[dict]:
    batch = shared.batches[n]
    parser = frames.FrameParser(shared.token, [c.key for c in batch.commands], batch.timeouts)
    parser.feed(stdout)
    assert parser.began and parser.done and not parser.fatal
    return parser.results()


def test_each_batch_runs_by_its_number_and_shares_the_scripts_it_has_in_common():
    common = Command(key="common", script="echo same on every host")
    shared = SharedScript.build([
        ([common, Command(key="a", script="printf 'a\\0b' ; echo err >&2; exit 3")], None),
        ([Command(key="b", script="echo b"), common], None),
    ])
    assert shared.text.count("echo same on every host") == 1
    first = _decode(shared, 0, _run(shared.text, "0").stdout)
    assert [(r["key"], r["rc"], r["stdout"], r["stderr"]) for r in first] == [
        ("common", 0, "same on every host\n", ""), ("a", 3, "a\0b", "err\n")]
    second = _decode(shared, 1, _run(shared.text, "1").stdout)
    assert [(r["key"], r["stdout"]) for r in second] == [("b", "b\n"), ("common", "same on every host\n")]


def test_an_unknown_batch_is_refused_and_a_ptys_line_ends_are_read():
    shared = SharedScript.build([([Command(key="x", script="echo x")], None)])
    cp = _run(shared.text, "7")
    assert cp.returncode == 64
    parser = frames.FrameParser(shared.token, ["x"], [30.0])
    parser.feed(cp.stdout)
    assert parser.fatal == "no batch 7 in this script"
    crlf = _run(shared.text, "0").stdout.replace(b"\n", b"\r\n")
    assert [r["stdout"] for r in _decode(shared, 0, crlf)] == ["x\n"]


def test_a_host_runs_its_batch_by_its_name_and_an_unlisted_name_is_refused():
    """The playbook passes ``--host {{ inventory_hostname }}``: names are matched literally (glob
    characters and quotes are not special), and a host the collection does not hold runs nothing."""
    shared = SharedScript.build(
        [([Command(key="x", script="echo x")], None), ([Command(key="y", script="echo y")], None)],
        {"n1": 0, "n*": 1, "it's": 1, "n2": 0})
    assert [r["stdout"] for r in _decode(shared, 0, _run(shared.text, "--host", "n2").stdout)] == ["x\n"]
    assert [r["stdout"] for r in _decode(shared, 1, _run(shared.text, "--host", "it's").stdout)] == ["y\n"]
    assert [r["stdout"] for r in _decode(shared, 1, _run(shared.text, "--host", "n*").stdout)] == ["y\n"]
    for name in ("n3", "n", ""):
        cp = _run(shared.text, "--host", name)
        parser = frames.FrameParser(shared.token, ["x"], [30.0])
        parser.feed(cp.stdout)
        assert cp.returncode == 64 and parser.fatal == f"no batch for host {name} in this script"
    assert [r["stdout"] for r in _decode(shared, 1, _run(shared.text, "1").stdout)] == ["y\n"]  # numbers still work


def test_decode_saved_names_what_ansible_brought_back():
    shared = SharedScript.build([([Command(key="x", script="echo x")], None)])
    batch = {"commands": [{"key": "x"}], "timeouts": [30.0]}
    ok = _run(shared.text, "0")
    results, error = frames.decode_saved({"rc": 0, "stdout": ok.stdout.decode()}, shared.token, batch, "h1")
    assert error is None and results[0]["stdout"] == "x\n"
    assert frames.decode_saved(None, shared.token, batch, "h1") == (
        None, "h1: no output from Ansible (unreachable or not in the play)")
    _, error = frames.decode_saved({"unreachable": True, "msg": "Failed to connect to the host via ssh: refused"},
                                   shared.token, batch, "h1")
    assert error == "h1: unreachable through Ansible: Failed to connect to the host via ssh: refused"
    _, error = frames.decode_saved({"rc": 127, "stdout": "", "msg": "non-zero return code",
                                    "stderr": "/bin/sh: not found"}, shared.token, batch, "h1")
    assert error == "h1: the remote shell did not run the batch: non-zero return code"
    cut = ok.stdout.decode().split("@@SA " + shared.token + " DONE")[0]
    results, error = frames.decode_saved({"rc": 143, "stdout": cut}, shared.token, batch, "h1")
    assert error is None and results[0]["stdout"] == "x\n"  # the results that arrived are kept


def test_read_saved_bounds_each_file_by_the_collections_longest_batch(tmp_path):
    collect = {"max_output_bytes": 1000, "hosts": {"a": {"batch": 0}, "b": {"batch": 1}, "c": {"batch": 1},
                                                   "d": {"batch": 1}},
               "batches": [{"commands": [{"key": "x"}]}, {"commands": [{"key": "x"}, {"key": "y"}]}]}
    limit = 2 * frames.max_encoded(1000) + (1 << 20)
    (tmp_path / "a.json").write_text('{"rc": 0, "stdout": "' + "x" * (limit - 40) + '"}')
    (tmp_path / "b.json").write_text('{"rc": 0, "stdout": "' + "x" * limit + '"}')
    (tmp_path / "c.json").write_text('["not", "an", "object"]')
    saved = frames.read_saved(tmp_path, collect)
    assert saved["a"]["rc"] == 0 and "d" not in saved  # d saved nothing
    assert saved["b"]["msg"].endswith("bytes, more than a batch makes") and saved["b"]["stdout"] == ""
    assert "unreadable: not a JSON object" in saved["c"]["msg"]
    assert set(frames.read_saved(tmp_path, collect, ["c"])) == {"c"}
