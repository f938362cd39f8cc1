"""The paper presets' floors of ``experiments.bench_floors``: each preset's flops against the grid
it runs (counted here from the paper's description, independently of the studies' cost functions),
the floors and the targets' demands from a given peak, and the two-core peak measured at once."""

import math

import pytest

from experiments import bench_floors


def _ifca_flops(k, ms, ns, d, replicas, cells_per_mn=1, rounds=300, trials=40):
    """(k + 1) 2 m n d flops per replica-round, summed over the grid's (m, n)."""
    return sum((k + 1) * 2.0 * m * n * d for m in ms for n in ns) * cells_per_mn * replicas * rounds * trials


# paper-a/b: 5 values of r (one cell each), the 4 noise levels x 10 initialisations x 3 step sizes
# as the 120 replicas of a batch; paper-c/d: one cell per (m, n), the two r x 10 x 3 as 60 replicas
GRIDS = {
    "paper-a": _ifca_flops(2, [100], [100], 1000, 4 * 10 * 3, cells_per_mn=5),
    "paper-b": _ifca_flops(4, [400], [100], 1000, 4 * 10 * 3, cells_per_mn=5),
    "paper-c": _ifca_flops(2, [50, 70, 100, 150, 200, 300, 400], [50, 100, 200], 1000, 2 * 10 * 3),
    "paper-d": _ifca_flops(4, [100, 200, 300, 400, 800], [50, 100, 200], 1000, 2 * 10 * 3),
}


@pytest.mark.parametrize("study, preset", bench_floors.PRESETS)
def test_a_presets_flops_are_its_grid_at_ifcas_count(study, preset):
    assert bench_floors.preset_flops(study, preset) == pytest.approx(GRIDS[preset], rel=1e-12)


def test_floors_and_targets_follow_from_the_peak():
    peak = {"gflops": 400.0, "each": [200.0, 200.0], "dtype": "float32"}
    report = bench_floors.paper_floors(peak)
    assert report["peak"] is peak
    floors = {row["preset"]: row["floor_seconds"] for row in report["presets"]}
    for preset, flops in GRIDS.items():
        assert floors[preset] == pytest.approx(flops / 400e9, rel=1e-12)
    targets = {row["target"]: row for row in report["targets"]}
    a, all_four = targets["paper-a"], targets["all four panels"]
    assert a["seconds"] == 18 * 60 and a["floor_seconds"] == floors["paper-a"]
    assert a["needs_fraction_of_peak"] == pytest.approx(GRIDS["paper-a"] / 400e9 / (18 * 60))
    assert all_four["seconds"] == 6 * 3600
    assert all_four["floor_seconds"] == pytest.approx(sum(GRIDS.values()) / 400e9, rel=1e-12)
    assert all_four["needs_fraction_of_peak"] == pytest.approx(sum(GRIDS.values()) / 400e9 / (6 * 3600))


def test_the_peak_is_measured_in_two_processes_at_once(capsys):
    peak = bench_floors.concurrent_peak(workers=2, seconds=0.3, n=300, lead=1.5)
    assert len(peak["each"]) == 2 and all(g > 0 for g in peak["each"])
    assert math.isclose(peak["gflops"], sum(peak["each"]))
    assert len(peak["late_seconds"]) == len(peak["ready_before_start"]) == 2
    bench_floors.print_floors(bench_floors.paper_floors(peak))
    out = capsys.readouterr().out
    assert "paper-a" in out and "all four panels in 6.00 h" in out and "of the peak throughout" in out


def test_a_failing_peak_child_is_one_runtime_error_after_both_ended():
    with pytest.raises(RuntimeError, match=r"the peak's child process failed: TypeError: data type 'bogus'"):
        bench_floors.concurrent_peak(workers=2, seconds=0.1, n=10, dtype="bogus", lead=0.5)
