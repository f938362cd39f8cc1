"""The contract every registered algorithm keeps, checked over the registry.

A new algorithm registered in :mod:`mixreg.algorithms` is tested here the moment it is
registered, by the public checks of :func:`mixreg.algorithms.check_algorithm` (one test per
algorithm and check, :func:`mixreg.algorithms.algorithm_checks`): the common result fields and
frozen results, the history, batching (``B = 1`` is the batch path, a batch equals separate runs),
untouched inputs, divergence (a diverging replica is frozen, flagged, has no training loss and is
never the chosen run, and the others are untouched; a finite blow-up is divergence), determinism
under a Generator, the stop rules, bad input (a clear error naming the parameter), the exactness
of a registered precondition, and the server-step and schedule seams.  The step sizes of the
built-ins and the checks that cannot apply to them (with the reason) are
:data:`mixreg.algorithms.CHECK_SETTINGS`.
"""

import pytest

from mixreg.algorithms import (
    ALGORITHMS,
    CheckSkipped,
    HeavyBall,
    InverseTime,
    Nesterov,
    PiecewiseConstant,
    algorithm_checks,
    get_algorithm,
    variant,
)

NAMES = sorted(ALGORITHMS)

_DECAYING = ("a step decaying as 1 / t converges sublinearly: tol = 1e-9 is not reached within the check's 500 "
             "rounds")
#: Server-step and schedule variants, each one entry (:func:`mixreg.algorithms.variant`), under the
#: same contract, with the checks a decaying step cannot meet skipped and said why.
VARIANTS = [
    (variant(get_algorithm("ifca"), server_step=HeavyBall(0.5)), None),
    (variant(get_algorithm("ifca_model"), schedule=InverseTime(20.0)), {"tolerance_stops": _DECAYING}),
    (variant(get_algorithm("fedavg"), server_step=Nesterov(0.5)), None),
    (variant(get_algorithm("fesem"), server_step=HeavyBall(0.5), schedule=PiecewiseConstant((50,), (1.0, 0.5))),
     None),
    (variant(get_algorithm("oneshot"), server_step=Nesterov(0.5)), None),
]
#: One case per (algorithm, check): every registered algorithm, then every variant.
CASES = [pytest.param(check, id=f"{entry.name}-{check_name}")
         for entry, skip in [(ALGORITHMS[name], None) for name in NAMES] + VARIANTS
         for check_name, check in algorithm_checks(entry, skip=skip)]


def test_every_builtin_is_registered():
    assert {"ifca", "ifca_model", "fedavg", "fedprox"} <= set(NAMES)
    for name in NAMES:
        alg = ALGORITHMS[name]
        assert alg.source and alg.sends, name
    with pytest.raises(ValueError, match="unknown algorithm 'nope'; registered: "):
        get_algorithm("nope")


@pytest.mark.parametrize("check", CASES)
def test_contract(check):
    try:
        check()
    except CheckSkipped as exc:
        pytest.skip(str(exc))
