"""How the job sizes a local Spark session: its cores, hence its shuffle partitions (no session started)."""

from __future__ import annotations

import os

import pytest

from analysis.stuck import SERIAL_GC_INPUT_BYTES, SMALL_INPUT_BYTES, START_FAST_JVM, jvm_flags_for, local_cores


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


def test_one_garbage_collector_thread_up_to_a_few_times_ten_million_rows() -> None:
    # 10^7 snapshot rows (82 MB) take less CPU with one collector thread; 10^8 (1.3 GB) keep the JVM's default
    assert jvm_flags_for("local[2]", 8 << 20) == START_FAST_JVM
    assert jvm_flags_for("local[2]", 82 << 20) == "-XX:+UseSerialGC"
    assert 82 << 20 < SERIAL_GC_INPUT_BYTES < 1 << 30
    assert jvm_flags_for("local[*]", 1 << 30) == ""
    # another master, or a size not known: the JVM as it is
    assert jvm_flags_for("spark://10.1.2.3:7077", 82 << 20) == ""
    assert jvm_flags_for("local[2]", None) == ""


def test_a_local_driver_is_sized_to_large_input_and_its_sort_cut_into_partitions() -> None:
    from analysis.stuck import AUTO, driver_memory_for, shuffle_partitions_for

    quarter_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4 >> 20
    gb = 1 << 30
    # 10^8 snapshot rows are 1.3 GB of Parquet: 512m of heap ran out merging the sort's spills
    assert driver_memory_for(AUTO, "local[*]", int(1.3 * gb)) == f"{min(3 * int(1.3 * gb) >> 20, quarter_mib)}m"
    assert driver_memory_for(AUTO, "local[2]", 100 * gb) == f"{quarter_mib}m"
    # small input, other masters and an unknown size keep 512m; a given size is kept as given
    assert driver_memory_for(AUTO, "local[2]", SMALL_INPUT_BYTES) == "512m"
    assert driver_memory_for(AUTO, "local[2]", None) == "512m"
    assert driver_memory_for(AUTO, "spark://10.1.2.3:7077", 100 * gb) == "512m"
    assert driver_memory_for("200m", "local[2]", 100 * gb) == "200m"
    # one shuffle partition per 32 MB above the small input, at least 8; small input: one per core
    assert shuffle_partitions_for(2, 8 << 20) == 2
    assert shuffle_partitions_for(None, 82 << 20) == 8
    assert shuffle_partitions_for(None, int(1.3 * gb)) == 42
    assert shuffle_partitions_for(None, None) == 8
