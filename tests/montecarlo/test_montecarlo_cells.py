"""Tests of mixreg.montecarlo._cells: cell values, their canonical encoding, the seeds."""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _toy_trials import subprocess_env, toy_sweep
from mixreg.montecarlo import trial_seed
from mixreg.montecarlo._cells import _canonical_cell, _parse_tuple_text, _tuple_text

# generate_state(4) of seeds computed with the engine as it was before cells could hold
# tuples: a scalar cell, and the comma text that tuples replace.  The seed of every existing
# cell, and so every existing results directory, depends on them staying as they are.
PINNED_SCALAR_STATE = [4292793932, 2465805058, 1744578843, 1991783210]  # root 2024, trial 3
PINNED_FLOAT_TEXT_STATE = [3711934168, 3635458834, 2390727098, 2148629513]  # "1.0,0.1", root 7
PINNED_INT_TEXT_STATE = [1205639199, 4268954301, 743063585, 4155139657]  # "1,2", root 7


# --------------------------------------------------------------------------- seeds


def test_trial_seed_is_stable_in_a_fresh_process():
    cell = {"R": 0.1, "m": 10, "algo": "ifca", "warm": True}
    here = trial_seed(5, cell, 3).generate_state(8).tolist()
    code = ("import sys, json; from mixreg.montecarlo import trial_seed; "
            "cell = {'warm': True, 'algo': 'ifca', 'm': 10, 'R': 0.1}; "
            "print(json.dumps(trial_seed(5, cell, 3).generate_state(8).tolist()))")
    env = dict(subprocess_env(), PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == here


def test_trial_seed_separates_trials_cells_types_and_roots():
    def state(root, cell, trial):
        return tuple(trial_seed(root, cell, trial).generate_state(4))

    base = state(0, {"R": 1.0, "m": 4}, 0)
    assert state(0, {"m": 4, "R": 1.0}, 0) == base  # key order does not matter
    others = [
        state(0, {"R": 1.0, "m": 4}, 1),
        state(0, {"R": 1.0000000000000002, "m": 4}, 0),  # next float: exact encoding
        state(0, {"R": 1, "m": 4}, 0),  # int vs float
        state(0, {"R": True, "m": 4}, 0),  # bool vs int
        state(1, {"R": 1.0, "m": 4}, 0),
        state(0, {"R": 1.0, "m": 4, "d": 2}, 0),
    ]
    assert len({base, *others}) == len(others) + 1
    assert trial_seed(0, {"R": np.float64(1.0), "m": np.int64(4)}, 0).entropy == trial_seed(
        0, {"R": 1.0, "m": 4}, 0).entropy


def test_scalar_cell_seeds_are_unchanged():
    cell = {"R": 1.5, "m": 10, "algo": "ifca", "warm": True}
    assert trial_seed(2024, cell, 3).generate_state(4).tolist() == PINNED_SCALAR_STATE


# --------------------------------------------------------------------------- tuples


def test_a_tuple_hashes_as_its_comma_text():
    text = trial_seed(7, {"step_sizes": "1.0,0.1", "k": 2}, 0)
    as_tuple = trial_seed(7, {"step_sizes": (1.0, 0.1), "k": 2}, 0)
    assert as_tuple.entropy == text.entropy
    assert as_tuple.generate_state(4).tolist() == PINNED_FLOAT_TEXT_STATE
    assert text.generate_state(4).tolist() == PINNED_FLOAT_TEXT_STATE
    as_list = trial_seed(7, {"step_sizes": [np.float64(1.0), np.float32(0.1).item()], "k": 2}, 0)
    assert as_list.entropy != as_tuple.entropy  # float32(0.1) is another float than 0.1
    assert trial_seed(7, {"step_sizes": [np.float64(1.0), 0.1], "k": 2}, 0).entropy == text.entropy

    ints = trial_seed(7, {"step_sizes": (1, 2), "k": 2}, 0)
    assert ints.generate_state(4).tolist() == PINNED_INT_TEXT_STATE
    assert trial_seed(7, {"step_sizes": "1,2", "k": 2}, 0).entropy == ints.entropy
    assert trial_seed(7, {"step_sizes": (1.0, 2.0), "k": 2}, 0).entropy != ints.entropy
    assert trial_seed(7, {"step_sizes": (np.int64(1), np.int32(2)), "k": 2}, 0).entropy == ints.entropy


def test_canonical_encoding_of_a_tuple_is_its_comma_text():
    expected = '[["k",["int","2"]],["s",["str","1.0,0.1,3,True"]]]'
    assert _canonical_cell({"s": (1.0, 0.1, 3, True), "k": 2}) == expected
    assert _canonical_cell({"k": 2, "s": "1.0,0.1,3,True"}) == expected
    assert _canonical_cell({"s": [1.0, 0.1, np.int64(3), np.bool_(True)], "k": 2}) == expected


@settings(deadline=None)  # hypothesis's default fails an example slower than 200 ms: a busy machine's
@given(st.lists(st.one_of(st.booleans(), st.integers(), st.floats()), min_size=1, max_size=8))
def test_comma_text_of_a_tuple_reads_back_exactly(values):
    """_parse_tuple_text inverts _tuple_text: the text determines the tuple, types included."""
    back = _parse_tuple_text(_tuple_text(tuple(values)))
    assert isinstance(back, tuple)
    assert json.dumps(back) == json.dumps(values)  # tells 1 from 1.0 and True; NaN, -0.0 too


def test_sweep_stores_tuples_of_plain_python_values():
    sweep = toy_sweep(cells=[{"steps": [np.float32(0.5), np.int64(2), np.bool_(True)], "k": 1}])
    assert sweep.cells[0]["steps"] == (0.5, 2, True)
    assert [type(v) for v in sweep.cells[0]["steps"]] == [float, int, bool]


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        ((), "(an empty tuple)"),
        ([], "(an empty list)"),
        (("a", 1.0), "(a tuple whose element 0 is a str)"),
        ((1.0, (2.0,)), "(a tuple whose element 1 is a tuple)"),
        ([1.0, [2.0]], "(a list whose element 1 is a list)"),
        ((1.0, None), "(a tuple whose element 1 is a NoneType)"),
        ((1.0, np.zeros(2)), "(a tuple whose element 1 is a ndarray)"),
        (np.zeros(2), "(a ndarray)"),
        ({"a": 1}, "(a dict)"),
    ],
)
def test_bad_cell_values_are_refused_naming_the_cell_and_key(value, detail):
    cells = [{"step_sizes": (1.0,), "k": 1}, {"step_sizes": value, "k": 2}]
    with pytest.raises(TypeError) as info:
        toy_sweep(cells=cells)
    message = str(info.value)
    assert message.startswith(
        "cells[1]['step_sizes'] must be an int, float, str or bool scalar, or a non-empty "
        "tuple of int/float/bool scalars, got ")
    assert message.endswith(detail)
    with pytest.raises(TypeError, match=r"^cell\['step_sizes'\] must be"):
        trial_seed(0, {"step_sizes": value}, 0)


def test_a_key_holds_tuples_in_every_cell_or_in_none():
    with pytest.raises(ValueError, match=r"cells\[1\]\['steps'\] is 0.5 but cells\[0\]\['steps'\] "
                                         r"is \(1.0, 0.1\); a key must hold tuples in every cell"):
        toy_sweep(cells=[{"steps": (1.0, 0.1)}, {"steps": 0.5}])


def test_a_tuple_and_its_comma_text_are_duplicate_cells():
    with pytest.raises(ValueError, match=r"cells\[1\] duplicates cells\[0\]"):
        toy_sweep(cells=[{"steps": (1.0, 0.1)}, {"steps": "1.0,0.1"}])
    toy_sweep(cells=[{"steps": (1.0, 2.0)}, {"steps": (1, 2)}])  # ints and floats differ
