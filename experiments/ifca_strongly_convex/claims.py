"""The study's claims (IFCA, Theorem 2 and Lemma 3), checked on its committed paper run.

The checks are in :mod:`.checks`; the mutants each catches in ``paper_checks/mutants_strongly_convex.py``.
"""

from __future__ import annotations

from mixreg.study import Claim

from . import PRESETS, STUDY
from .checks import check_factor, check_floor, check_lemma3, check_rounds

FIGURES = ("ifca_strongly_convex_paper.png",)

#: The quick preset's overrides for the fresh-run check (``paper_checks/test_claims_fresh.py``): the
#: paper preset, another seed. The claims were decided on the paper grid (n' up to 80); on the quick
#: grid (n' = 5, 10, 20) a fresh run's n' exponent was -0.68 [-0.83, -0.53], a regime the claim was
#: not decided on.
FRESH = dict(PRESETS["paper"], trials=40)

#: Claims whose fresh run (:data:`FRESH`, seed 20261127) disagrees with the committed run, with the
#: fresh verdict and its numbers (asserted by ``paper_checks/test_claims_fresh.py``, shown in the
#: claims report).
FRESH_DIFFERS = {
    "ifca-thm2-floor": ("contradicts", "the m exponent is -0.555 [-0.589, -0.522], steeper than -1/2 (committed "
                                       "run: -0.53 [-0.56, -0.49]), and the line fitted without m = 400 misses "
                                       "it; n' -0.522 [-0.556, -0.488] holds, and the final mean square lies in its "
                                       "family-wise interval of the exact second moments at all 9 cells. The exact "
                                       "moments' own exponent on this grid is -0.50 (on the committed run's trials, "
                                       "where the measured one, fitted without m = 400, is -0.53): why the measured "
                                       "slope falls faster than the exact one is not resolved"),
}

CLAIMS = (
    Claim(
        id="ifca-thm2-factor",
        paper="IFCA",
        source="Theorem 2, per-iteration contraction (thesis Sec. 3.3 'Strongly convex'; arXiv Theorem 2, App. C)",
        statement="far above the floor, one round with gamma = 1/L contracts every cluster's distance by at least "
                  "the factor 1 - p lambda / (8 L) (lambda, L = 2 x the extreme eigenvalues of Sigma); checked per "
                  "(kappa, p, cluster) as the RMS factor over the rounds whose exact RMS is >= 5x the floor's, "
                  "with its looseness (1 - measured) / (1 - bound), and against the exact second moments (derived)",
        kind="prediction",
        study=STUDY, preset="paper",
        check=check_factor,
        predictions=("thm2_factor", "exact_window_factor"),
        constants="8 from Theorem 2; lambda, L the extreme eigenvalues of 2 Sigma; the exact second moments have "
                  "no constant",
        figures=FIGURES,
        mutants=("sc-step-x2", "sc-factor-kappa-inverted"),
    ),
    Claim(
        id="ifca-cor2-rounds",
        paper="IFCA",
        source="Theorem 2's T (NeurIPS / thesis); arXiv Corollary 2 (App. D)",
        statement="every run reaches max_j ||theta_j - theta*_j|| <= eps within T = (8 L / (p lambda)) "
                  "log(Delta / (2 eps)) rounds; and the shape: the exponent of the mean rounds in L / (p lambda) "
                  "against T's 1 (at fixed Delta, eps and initial distance). T suffices, so an exponent below 1 "
                  "keeps within it ('not tight'); one above 1 contradicts it",
        kind="prediction",
        study=STUDY, preset="paper",
        check=check_rounds,
        predictions=("thm2_rounds", "thm2_rounds_exponent"),
        constants="8 from Theorem 2; exponent 1 of T in L / (p lambda), a sufficient number's (slack side below 1)",
        figures=FIGURES,
        mutants=("sc-rounds-kappa-inverted", "stats-bound-slack-side-flipped"),
    ),
    Claim(
        id="ifca-thm2-floor",
        paper="IFCA",
        source="Theorem 2's rate O~(1/sqrt(m n') + 1/n') (thesis Sec. 3.3; arXiv Corollary 2)",
        statement="the final error decays like (m n')^-1/2 along m and n' where misclustering is negligible "
                  "(fitted exponents with 95% bootstrap intervals, the largest value of each axis held out), and "
                  "its mean square equals the exact second moments' (derived, no constant fitted)",
        kind="prediction",
        study=STUDY, preset="paper",
        check=check_floor,
        predictions=("thm2_rate_exponent", "exact_final_mean_square"),
        constants="exponent -1/2 from Theorem 2's 1/sqrt(m n') term; the exact second moments have no constant",
        figures=FIGURES,
        mutants=("sc-half-data",),
    ),
    Claim(
        id="ifca-lemma3",
        paper="IFCA",
        source="Lemma 3 (arXiv App. C, proof in App. C.1: Chebyshev with Assumption 4's eta^2)",
        statement="a worker's probability of being misclustered in a round is at most 128 eta^2 / (lambda^2 "
                  "Delta^4 n') (k = 2; the constant from the proof's steps, our reconstruction), with eta^2 = "
                  "2 (||theta - theta*||_Sigma^2 + sigma^2)^2 the exact loss variance at the two models; also at "
                  "most the proof's Chebyshev step itself; the count of misclustered worker-rounds equals its exact "
                  "expectation given each trial's models. The cells where a bound is >= 1 (vacuous) are counted; the decay "
                  "in n' is reported (polynomial bound, exponential data)",
        kind="prediction",
        study=STUDY, preset="paper",
        check=check_lemma3,
        predictions=("lemma3_bound",),
        constants="128 = 2 x 64 from App. C.1's steps (Assumption 6's initialisation); eta^2 exact for Gaussian "
                  "rows and noise",
        figures=FIGURES,
        mutants=("sc-pair-without-sigma", "sc-variance-missing-2"),
        proof_lemma=True,
    ),
)
