"""The shipped module_utils loader under threads: collection threads ask for a module at once (two inventory
names of one host did, and one thread got the module before its code had run)."""

from __future__ import annotations

import sys
import threading
import time

from advisor.util import shipped_code


def test_a_module_is_handed_out_only_once_its_code_has_run(tmp_path, monkeypatch):
    (tmp_path / "module_utils").mkdir()
    (tmp_path / "module_utils" / "slow_to_load.py").write_text("import time\ntime.sleep(0.4)\nVALUE = 42\n")
    monkeypatch.setattr(shipped_code, "playbooks_dir", lambda: tmp_path)
    monkeypatch.setattr(shipped_code, "_loaded", {}, raising=False)
    monkeypatch.delitem(sys.modules, "storadvise_module_utils.slow_to_load", raising=False)
    seen: list[object] = []

    def ask():
        seen.append(getattr(shipped_code.module_utils("slow_to_load"), "VALUE", None))

    first = threading.Thread(target=ask)
    first.start()
    time.sleep(0.1)  # the first thread is inside the module's code now
    second = threading.Thread(target=ask)
    second.start()
    first.join()
    second.join()
    sys.modules.pop("storadvise_module_utils.slow_to_load", None)
    assert seen == [42, 42]
