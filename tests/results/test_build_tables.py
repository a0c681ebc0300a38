"""build_tables.py: build records in each target's own terms, which its Target entry gives."""

from __future__ import annotations

from rows import shape

from wgrad_cli.compile.occupancy import gfx950, sm90
from wgrad_cli.compile.resources import Resources
from wgrad_cli.results.build_tables import build_table
from wgrad_cli.results.records import BuildRecord


def record(target: str, resources: Resources) -> BuildRecord:
    return BuildRecord(shape=shape("one"), kernel="k", target=target, ok=True, code_object=None,
                       compile_seconds=0.1, cache_hit=False, compiler="clang 22", resources=resources,
                       errors=[])


def cells(target: str, resources: Resources) -> dict[str, str]:
    rows = build_table([record(target, resources)]).to_json()["rows"]
    assert isinstance(rows, list)
    row: dict[str, str] = rows[0]
    return row


def test_each_target_in_its_own_terms() -> None:
    amd = Resources("k", 40, 8, 30, 0, 0, 0, 64, gfx950(40, 8, 0, 256))
    assert (cells("gfx950", amd)["registers"], cells("gfx950", amd)["occupancy"]) == \
        ("40v 8a 30s", "8 WGs/CU, 8 waves/SIMD")
    nvidia = Resources("k", 128, None, None, 1024, 0, 0, 32, sm90(128, 1024, 128))
    assert (cells("sm_90a", nvidia)["registers"], cells("sm_90a", nvidia)["occupancy"]) == \
        ("128", "4 blocks/SM, 16 warps/SM")


def test_a_target_this_wgrad_does_not_know_leaves_its_words_blank() -> None:
    row = cells("gfx9999", Resources("k", 40, 8, 30, 0, 0, 0, 64, gfx950(40, 8, 0, 256)))
    assert (row["registers"], row["occupancy"], row["spills"]) == ("", "", "0")
