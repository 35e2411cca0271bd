from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "samples"


def write_trace(path: Path, n: int, n_files: int, seed: int = 7, alpha: float = 0.9, servers: int = 3,
                min_size: int = 1_000_000, max_size: int = 20_000_000, dt: float = 1.0) -> Path:
    """A CSV transfer log: Zipf-like popularity over ``n_files`` files, sizes uniform in
    [min_size, max_size], one request every ``dt`` seconds on average."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, n_files + 1, dtype=np.float64)
    p = ranks ** -alpha
    p /= p.sum()
    ids = rng.permutation(n_files)[rng.choice(n_files, size=n, p=p)]
    sizes = rng.integers(min_size, max_size + 1, size=n_files)
    t = np.cumsum(rng.exponential(dt, n))
    kinds = ("AODSIM", "MINIAODSIM", "NANOAODSIM", "RAW")
    with open(path, "w") as f:
        f.write("timestamp,file,size,server\n")
        for i in range(n):
            k = int(ids[i])
            f.write(f"{t[i]:.3f},/store/mc/Run3/{kinds[k % 4]}/v1/f{k}.root,{sizes[k]},fs{k % servers}\n")
    return path


@pytest.fixture
def trace_csv(tmp_path):
    return lambda n, n_files, **kw: write_trace(tmp_path / f"trace-{n}-{n_files}.csv", n, n_files, **kw)
