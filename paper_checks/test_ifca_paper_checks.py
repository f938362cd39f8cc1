"""Long Monte Carlo checks of the IFCA paper's synthetic experiments (run on request).

    python -m pytest -m slow paper_checks/

Each check states a prediction derived from the theory and tests it on the official protocol.
"""

import numpy as np
import pytest

from mixreg.metrics import oracle_ls_floor
from experiments.success_vs_R.trial import IfcaSuccessSpec, ifca_success_trial

pytestmark = pytest.mark.slow


def _cell(m, n, r, sigma=0.1, k=2, d=1000):
    return IfcaSuccessSpec.from_cell(dict(
        m=m, k=k, n=n, d=d, sigma=sigma, r=r, protocol="official", n_rounds=300, n_inits=10,
        step_sizes=(1.0, 0.1, 0.01) if k == 2 else (2.0, 1.0, 0.5), init="official", init_scale=1.0,
        threshold_offset=0.0, dtype="float32"))


@pytest.mark.parametrize("m,n", [(50, 50), (70, 100)])
def test_success_impossible_where_the_oracle_floor_exceeds_the_threshold(m, n):
    """Fig. 3(c) grid: the known-label LS floor sigma sqrt(d/(N_l - d - 1)) is above 0.6 sigma for
    (n=50, m=50) (2.0 sigma) and (n=100, m=70) (0.63 sigma), so no rule may report success there,
    whatever the separation (the floor is derived in mixreg.metrics.oracle_ls_floor)."""
    floor = oracle_ls_floor(0.1, 1000, np.array([m * n // 2] * 2))
    assert np.all(floor > 0.6 * 0.1)
    for trial in range(5):
        rec = ifca_success_trial(_cell(m, n, r=0.25), np.random.SeedSequence([3, m, n, trial]))
        assert not rec["official_success"] and not rec["honest_success"] and not rec["oracle_success"]


def test_success_possible_once_the_floor_is_below_the_threshold():
    """Fig. 3(a) setting (m=100, n=100, floor 0.50 sigma): at r = 0.5 the oracle always meets the
    threshold and IFCA's official rule succeeds in most trials."""
    recs = [ifca_success_trial(_cell(100, 100, r=0.5), np.random.SeedSequence([4, t])) for t in range(6)]
    assert all(r["oracle_success"] for r in recs)
    assert sum(r["official_success"] for r in recs) >= 4
