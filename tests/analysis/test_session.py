"""How the job sizes a local Spark session: its cores, hence its shuffle partitions (no session started)."""

from __future__ import annotations

import os

import pytest

from analysis.stuck import SMALL_INPUT_BYTES, START_FAST_JVM, local_cores


@pytest.mark.parametrize(("master", "cores"), [
    ("local", 1), ("local[1]", 1), ("local[2]", 2), ("local[4,3]", 4), ("local[*]", os.cpu_count() or 1),
    (" local[2] ", 2), ("spark://10.1.2.3:7077", None), ("yarn", None), ("local-cluster[2,1,1024]", None),
    ("localhost", None),
])
def test_local_cores(master: str, cores: int | None) -> None:
    assert local_cores(master) == cores


def test_a_fast_starting_jvm_only_for_small_input() -> None:
    # 10^6 snapshot rows are about 8 MB of Parquet; 10^7 (82 MB) run long enough for the full JIT to pay
    assert 8 << 20 < SMALL_INPUT_BYTES < 82 << 20
    assert START_FAST_JVM.split() == ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
