"""Smoke test of the benchmark (``python -m experiments.bench_ifca --quick``): it runs end to end and
writes every section, the thread-placement one included; its arithmetic on fake timings; its command
line, which refuses bad input before measuring anything and ends every fault in one line."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from experiments import bench_floors, bench_ifca


def test_quick_run_writes_every_section(tmp_path, capsys):
    assert bench_ifca.main(["--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench_ifca.json").read_text())
    assert set(report["peak_gflops"]) == {"float32", "float64"}
    assert report["ifca"] and all(row["seconds_per_replica_round"] > 0 for row in report["ifca"])
    for row in report["ifca"]:  # a whole run of the paper's length costs its rounds and its fixed part
        assert row["fixed_seconds_per_run"] >= 0
        per_run = row["fixed_seconds_per_run"] + bench_ifca.PAPER_ROUNDS * row["B"] * row["seconds_per_replica_round"]
        assert math.isclose(row["seconds_per_replica_round_paper"] * bench_ifca.PAPER_ROUNDS * row["B"], per_run)
        assert row["fraction_of_peak_paper"] <= row["fraction_of_peak"] * (1 + 1e-12)  # equal with no fixed part
        # the prediction product is k of the round's k + 1 products; the bound: the round at the
        # prediction's measured time plus the other product at the peak
        assert row["prediction_flops"] == row["k"] * 2.0 * row["m"] * row["n"] * row["d"]
        peak, pred = report["peak_gflops"][row["dtype"]] * 1e9, row["prediction_seconds_per_replica_round"]
        assert math.isclose(row["prediction_fraction_of_peak"], row["prediction_flops"] / pred / peak)
        floor = (row["k"] + 1) * 2.0 * row["m"] * row["n"] * row["d"]
        assert row["flops_per_replica_round"] == floor
        assert math.isclose(row["bound_fraction_of_peak"], floor / (pred * peak + floor / (row["k"] + 1)))
    assert report["engine"]["parallel_efficiency"] > 0
    assert all(len(report[key]) == 3 for key in ("load_average_before", "load_average_after"))

    from mixreg.algorithms import builtin_algorithms
    drivers = {row["driver"]: row for row in report["drivers"]}
    assert set(drivers) == set(builtin_algorithms())  # every built-in driver, each with its floor
    for name, row in drivers.items():
        assert row["floor_flops_per_replica_round"] > 0 and row["diverged"] == 0, name
        assert 0 < row["fraction_of_peak"] and row["seconds_per_replica_round"] > 0
        assert row["fixed_seconds_per_run"] >= 0 and row["wall_seconds_per_replica_round"] > 0
        assert row["setup_seconds"] >= 0
        assert math.isclose(row["setup_rounds"] * row["seconds_per_replica_round"] * row["B"], row["setup_seconds"])
        assert math.isclose(row["fraction_of_peak"] * report["drivers_peak_gflops"]["used"], row["floor_gflops"])
        assert row["peak_gflops"] == report["drivers_peak_gflops"]["used"]
        assert row["fraction_of_peak_paired"] >= 0
    peaks = report["drivers_peak_gflops"]  # measured between the drivers' passes (2 repeats), the best used
    assert len(peaks["interleaved"]) == 3 * 2 and peaks["used"] == max(peaks["interleaved"]) > 0
    assert peaks["before"] > 0 and peaks["after"] > 0

    cases = report["competitors"]["cases"]
    assert {case["dtype"] for case in cases} == {"float32", "float64"}
    for case in cases:  # batched NumPy always; each program agreed with mixreg before it was timed
        assert {"mixreg", "numpy"} <= set(case["programs"])
        assert all(row["agreement"]["ok"] and row["agreement"]["assign_identical"]
                   for row in case["programs"].values())
        assert (case["best_competitor"] is None) == (case["speedup_vs_best"] is None) \
            == (case["speedup_vs_best_paired"] is None)
        def cpu_marginals(row):  # each repeat's own marginal CPU time, from its two runs
            return [t2[0] - t1[0] for t1, t2 in zip(row["samples"]["T"], row["samples"]["2T"])]

        base = cpu_marginals(case["programs"]["mixreg"])
        for row in case["programs"].values():  # every timed run kept; the paired ratio from them
            assert len(row["samples"]["T"]) == len(row["samples"]["2T"]) == case["repeats"]
            assert math.isclose(row["cpu_vs_mixreg_paired"], float(np.median(np.divide(cpu_marginals(row), base))))

    place = report["placement"]
    assert place["tasks"] == 4
    rows = place["placements"]
    assert [(label, row["jobs"], row["kernel_threads"]) for label, row in rows.items()] == \
        [(label, jobs, threads) for label, jobs, threads in bench_ifca.PLACEMENTS]
    for row in rows.values():
        assert math.isfinite(row["throughput_vs_a"]) and row["throughput_vs_a"] > 0
        assert math.isfinite(row["tasks_per_second"]) and row["tasks_per_second"] > 0
    assert rows["a"]["throughput_vs_a"] == 1.0
    # one BLAS thread per worker: the records do not depend on the number of workers
    assert rows["a"]["records_identical_to_d"] is True
    assert rows["d"]["records_identical_to_d"] is True
    assert "thread placement on 2 cores" in capsys.readouterr().out

    floors = report["paper_floors"]  # the paper presets against both cores' peak measured at once
    assert [row["preset"] for row in floors["presets"]] == [p for _, p in bench_floors.PRESETS]
    assert len(floors["peak"]["each"]) == 2 and floors["peak"]["gflops"] > 0
    for row in floors["presets"]:
        assert math.isclose(row["floor_seconds"] * floors["peak"]["gflops"] * 1e9, row["flops"])
    assert [row["target"] for row in floors["targets"]] == ["paper-a", "all four panels"]

    kernels = report["kernels"]["rows"]  # none without OpenBLAS or an AVX2 CPU
    for row in kernels:  # each child ran the kernels it was asked for: OPENBLAS_CORETYPE took
        assert row["kernels"] == [row["requested"]]
        assert row["peak_float32"] > 0 and row["ifca_seconds_per_replica_round"] > 0
    if kernels:
        assert kernels[0]["vs_first"] == {"peak_float32": 1.0, "peak_float64": 1.0,
                                          "ifca_seconds_per_replica_round": 1.0}


def test_every_builtin_driver_has_a_floor():
    """The drivers table names a floor for every built-in algorithm (a new one without a floor
    would show '-' where its fraction of peak belongs)."""
    from mixreg.algorithms import ALGORITHMS, builtin_algorithms

    assert set(builtin_algorithms()) <= set(bench_ifca.DRIVER_FLOORS)
    floor = bench_ifca.DRIVER_FLOORS["ifca_model"][0]  # tau = 2: one Gram product per client
    assert floor(10, 3, 2, ALGORITHMS["ifca_model"].options, np.array([2, 8])) == \
        (2 + 1) * 2 * 10 * 3 + (2 - 1) * 2 * (2 ** 2 + 3 ** 2)


def test_round_costs_interleave_the_programs_and_separate_the_fixed_part(monkeypatch):
    """Programs are timed A, B, A, B ... for each length; a round's cost and the fixed part come
    from the best time of each length, on the CPU clock and the wall clock separately."""
    order = []
    fake = {"a": (0.5, 0.01), "b": (0.1, 0.03)}  # fixed part, seconds per round (CPU)

    def timed(fn):
        name, T = fn()
        order.append((name, T))
        fixed, per = fake[name]
        return fixed + per * T, 2 * (fixed + per * T)  # the wall clock twice the CPU time

    monkeypatch.setattr(bench_ifca, "_timed", timed)
    costs = bench_ifca.round_costs({name: (lambda T, name=name: (name, T)) for name in fake}, rounds=10, repeats=2)
    assert order == [("a", 10), ("b", 10), ("a", 20), ("b", 20)] * 2
    for name, (fixed, per) in fake.items():
        assert math.isclose(costs[name]["cpu"], per) and math.isclose(costs[name]["wall"], 2 * per)
        assert math.isclose(costs[name]["fixed"], fixed) and math.isclose(costs[name]["fixed_wall"], 2 * fixed)
        assert costs[name]["marginal"]


def test_round_costs_call_the_probe_after_every_pass(monkeypatch):
    """The probe (the drivers section's GEMM peak) runs between the passes over the programs, so
    that it samples the same minutes as they do."""
    order = []
    monkeypatch.setattr(bench_ifca, "_timed", lambda fn: (fn(), (1.0, 1.0))[1])
    runs = {name: (lambda T, name=name: order.append((name, T))) for name in ("a", "b")}
    bench_ifca.round_costs(runs, rounds=5, repeats=2, probe=lambda: order.append("probe"))
    assert order == [("a", 5), ("b", 5), "probe", ("a", 10), ("b", 10), "probe"] * 2


def test_record_key_ignores_the_timing_and_sees_every_bit():
    record = {"cell": 0, "trial": 1, "dist": float("nan"), "wall_time": 1.0}
    assert bench_ifca._record_key(record) == bench_ifca._record_key(dict(record, wall_time=2.0))
    assert bench_ifca._record_key(dict(record, dist=0.1)) != \
        bench_ifca._record_key(dict(record, dist=math.nextafter(0.1, 1.0)))


def _fake_runs(monkeypatch, seconds_of):
    """Replace the benchmark's IFCA runs by stubs whose timed length ``T`` takes ``seconds_of(T)``
    (the naive loop by a no-op); returns the list of run lengths called."""
    lengths = []
    monkeypatch.setattr(bench_ifca, "ifca", lambda problem, theta0, gammas, n_rounds, **kw: lengths.append(n_rounds))
    monkeypatch.setattr(bench_ifca, "naive_round", lambda *args: None)

    def timed(fn):  # (cpu, wall): the same fake seconds on both clocks
        before = len(lengths)
        fn()
        seconds = seconds_of(lengths[-1]) if len(lengths) > before else 1.0
        return seconds, seconds

    monkeypatch.setattr(bench_ifca, "_timed", timed)
    return lengths


@pytest.mark.parametrize("fixed,per_round", [(0.05, 0.01), (0.0, 0.02), (0.7, 0.003)])
def test_round_cost_and_fixed_part_are_separated(monkeypatch, fixed, per_round):
    """With runs that take exactly ``fixed + per_round T``, the benchmark returns the round's
    cost and the fixed part (a swapped pair of lengths, a wrong divisor or the fixed part left in
    the round would not)."""
    lengths = _fake_runs(monkeypatch, lambda T: fixed + per_round * T)
    row = bench_ifca.bench_ifca(np.float32, (10, 10, 20, 2), B=3, rounds=20, naive_rounds=1, levels=2)
    assert sorted(set(lengths) - {2}) == [20, 40]
    replicas = 6
    assert row["marginal"] and row["B"] == replicas
    assert math.isclose(row["seconds_per_replica_round"] * replicas, per_round)
    assert math.isclose(row["fixed_seconds_per_run"], fixed, abs_tol=1e-12)
    paper = row["seconds_per_replica_round_paper"] * replicas * bench_ifca.PAPER_ROUNDS
    assert math.isclose(paper, fixed + per_round * bench_ifca.PAPER_ROUNDS)


def test_noise_that_hides_the_round_cost_falls_back_to_the_whole_run(monkeypatch):
    """A longer run measured faster than a shorter one: the longer run's average, flagged, and no
    fixed part added on top of it."""
    _fake_runs(monkeypatch, {20: 0.10, 40: 0.09}.get)
    row = bench_ifca.bench_ifca(np.float32, (10, 10, 20, 2), B=3, rounds=20, naive_rounds=1)
    assert not row["marginal"] and row["fixed_seconds_per_run"] == 0.0
    assert math.isclose(row["seconds_per_replica_round"] * 3, 0.09 / 40)
    assert math.isclose(row["seconds_per_replica_round_paper"], row["seconds_per_replica_round"])


# --------------------------------------------------------------------------- the command line: faults before measuring

PROG = "python -m experiments.bench_ifca"


def _measured(monkeypatch):
    """Stop at the benchmark's first measurement (the GEMM peak); the list of measurements begun."""
    calls = []

    def first_measurement(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the benchmark started measuring")

    monkeypatch.setattr(bench_ifca, "gemm_peak", first_measurement)
    return calls


def test_an_out_that_is_a_file_is_refused_before_anything_is_measured(tmp_path, monkeypatch, capsys):
    calls = _measured(monkeypatch)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as exc:
        bench_ifca.main(["--quick", "--out", str(blocker)])
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"{PROG}: error: --out '{blocker}' exists and is not a directory\n"
    assert calls == [] and blocker.read_text() == "x"

    (tmp_path / "out" / bench_ifca.REPORT_NAME).mkdir(parents=True)  # the report's own path is taken
    with pytest.raises(SystemExit) as exc:
        bench_ifca.main(["--quick", "--out", str(tmp_path / "out")])
    assert exc.value.code == 2 and "is a directory" in capsys.readouterr().err and calls == []
    with pytest.raises(ValueError, match="exists and is not a directory"):  # --debug: the traceback
        bench_ifca.main(["--quick", "--out", str(blocker), "--debug"])


def test_an_out_that_cannot_be_created_is_one_line_exit_1_before_anything_is_measured(tmp_path, monkeypatch,
                                                                                       capsys):
    calls = _measured(monkeypatch)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert bench_ifca.main(["--quick", "--out", str(blocker / "out")]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{PROG}: error: ")
    assert f"cannot create the results directory '{blocker / 'out'}'" in lines[0]
    assert calls == []


def test_a_usage_error_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_ifca.main(["--rounds", "3"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"{PROG}: error: unrecognized arguments: --rounds 3 (see --help)\n"


def test_a_fault_while_measuring_is_one_line_exit_1_and_debug_shows_it(tmp_path, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("the kernels' benchmark failed\nits second line")

    monkeypatch.setattr(bench_ifca, "gemm_peak", broken)
    assert bench_ifca.main(["--quick", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"{PROG}: error: the kernels' benchmark failed\n"
    assert not (tmp_path / bench_ifca.REPORT_NAME).exists()
    with pytest.raises(RuntimeError, match="kernels' benchmark failed"):
        bench_ifca.main(["--quick", "--out", str(tmp_path), "--debug"])


def test_called_in_process_ctrl_c_stops_the_caller(tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_ifca, "gemm_peak", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bench_ifca.main(["--quick", "--out", str(tmp_path)])
    assert not (tmp_path / bench_ifca.REPORT_NAME).exists()


def test_the_report_is_written_where_out_says(tmp_path, monkeypatch, capsys):
    measured = []
    monkeypatch.setattr(bench_ifca, "measure", lambda quick, out: measured.append((quick, out)) or {"ok": 1})
    out = tmp_path / "a" / "b"
    assert bench_ifca.main(["--quick", "--out", str(out)]) == 0
    assert measured == [(True, out)]
    assert json.loads((out / bench_ifca.REPORT_NAME).read_text()) == {"ok": 1}
    assert capsys.readouterr().out == f"wrote {out / bench_ifca.REPORT_NAME}\n"


def test_the_command_refuses_a_bad_out_in_one_line_before_measuring(tmp_path):
    """``python -m experiments.bench_ifca --out <a file>``: exit 2 and one line, at once (at 1603bac it
    measured for minutes, then ended in a traceback)."""
    from _toy_trials import HANG, REPO_DIR, subprocess_env

    blocker = tmp_path / "file"
    blocker.write_text("x")
    run = subprocess.run([sys.executable, "-m", "experiments.bench_ifca", "--out", str(blocker)], cwd=REPO_DIR,
                         env=subprocess_env(), capture_output=True, text=True, timeout=HANG)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"{PROG}: error: --out '{blocker}' exists and is not a directory\n"
