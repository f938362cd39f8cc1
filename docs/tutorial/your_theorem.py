"""Your own theorem, end to end (the tutorial of docs/tutorial.md).

IFCA option II with a decaying step gamma_t = gamma_0 / (1 + t / t0), on clients whose rows have an
AR(1) covariance Sigma_ij = 0.5^|i-j|, against every registered method and known-label least
squares, over m clients, with the exact known-label floor E||theta_LS - theta*||^2 =
sigma^2 tr(Sigma^-1) / (m n / k - d - 1) registered as a prediction before the first trial.

Run: ``python docs/tutorial/your_theorem.py [OUTDIR]`` (default ``results/your_theorem``).
"""

import sys

import numpy as np

from mixreg.algorithms import ALGORITHMS, InverseTime, get_algorithm, initial_parameters, register, variant
from mixreg.baselines import known_label_least_squares
from mixreg.metrics import best_permutation
from mixreg.montecarlo import Sweep, run_sweep, write_table
from mixreg.plotting import error_plot, save_figure, success_plot
from mixreg.predictions import Prediction, claims_table, exponent_verdict, fit_exponent, held_out_verdict
from mixreg.predictions import level_verdict
from mixreg.problems import ProblemSpec, ar1_covariance
from mixreg.stats import bootstrap_mean_interval

# the variant: a schedule on a registered entry (IFCA option II, tau = 2 local steps), no new driver
register(variant(get_algorithm("ifca_model"), schedule=InverseTime(20.0), name="ifca_ii_decay"))
SIZES = dict(k=2, n=20, d=5, sigma=0.5, scale=2.0, protocol="gaussian", covariance="ar1:0.5")
TR_INV = np.trace(np.linalg.inv(ar1_covariance(5, 0.5)))


def ls_mse(cell):
    """E||theta_LS - theta*||^2 per cluster, exact for Gaussian rows (inverse-Wishart mean)."""
    return SIZES["sigma"] ** 2 * TR_INV / (cell["m"] * SIZES["n"] / SIZES["k"] - SIZES["d"] - 1)


def squared_error(theta, star):
    perm = best_permutation(theta, star)  # the estimate matched to each true model
    return float(np.mean(np.sum((theta[perm] - star) ** 2, axis=1)))


def trial(cell, seed):
    rng = np.random.default_rng(seed)
    pb = ProblemSpec(m=cell["m"], **SIZES).generate(rng)
    init = np.repeat(initial_parameters(pb, 2, "gaussian", rng=rng), 3, axis=0)  # 2 starts x 3 steps
    out = {"ls_sq": squared_error(known_label_least_squares(pb), pb.theta_star)}
    for name, alg in ALGORITHMS.items():  # one that refuses these sizes fails the trial, loudly
        res = alg.run(pb, init, np.tile([0.1, 0.3, 1.0], 2), n_rounds=100, rng=np.random.default_rng(seed.spawn(1)[0]))
        b = res.best_replica()  # the same starts and steps for all, chosen by training loss, never by the truth
        out[f"{name}_sq"] = np.nan if b is None else squared_error(res.theta[b], pb.theta_star)  # NaN: all diverged
    return out


def main(outdir):
    floor = Prediction("ls_mse", ls_mse, "sigma^2 tr(Sigma^-1) / (m n / k - d - 1)", fields=("m",))
    sweep = Sweep("your_theorem", trial, [{"m": m} for m in (10, 20, 40, 80)], n_trials=12, root_seed=1,
                  config=SIZES, predictions=[floor])
    result = run_sweep(sweep, outdir, jobs=2)
    names = [c[:-3] for c in result.records[0] if c.endswith("_sq")]
    tidy = [{"m": r["m"], "method": name, "sq": r[f"{name}_sq"], "ok": r[f"{name}_sq"] < 0.25}
            for r in result.records for name in names]  # success: squared error below 0.25 (NaN: failed)
    save_figure(success_plot(tidy, "m", success="ok", logx=True)["figure"], f"{outdir}/success")
    save_figure(error_plot(tidy, "m", "sq", prediction=lambda m: ls_mse({"m": m}))["figure"], f"{outdir}/error")
    ms, rng = np.array([10.0, 20, 40, 80]), np.random.default_rng(0)
    ls = [np.array([r["ls_sq"] for r in result.records if r["m"] == m]) for m in ms]
    _, low, high = np.array([bootstrap_mean_interval(v, rng, 2000, level=1 - 0.05 / 4) for v in ls]).T  # Bonferroni
    ours = [np.array([r["ifca_ii_decay_sq"] for r in result.records if r["m"] == m]) for m in ms]
    fit = fit_exponent(ms, ours, held_out=[80.0], rng=rng)  # fitted on m = 10..40, checked at m = 80
    verdicts = [level_verdict("known-label LS meets its exact floor", floor.predict([{"m": m} for m in ms]), low, high),
                exponent_verdict("the variant's mean squared error ~ m^-1, as the floor", -1.0, fit),
                held_out_verdict("the variant's fitted line predicts m = 80", fit)]
    write_table(f"{outdir}/claims.csv", claims_table(verdicts), record=True)
    for verdict in verdicts:
        print(f"{verdict.status}: {verdict.claim} ({verdict.why})")
    return result, verdicts


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/your_theorem")
