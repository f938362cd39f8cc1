"""A small in-process run of the study for its fast tests: every family, a few trials, no engine."""

from __future__ import annotations

import functools
import types

import numpy as np

from . import STUDY, cells_of, sc_trial, summarise

#: Small grids of every family (about ten CPU-seconds): rate cells at kappa 1 and 16, the m and n'
#: axes at kappa 4, lemma cells at kappa 1 and 16.
MINI = dict(d=8, kappas=(1.0, 16.0), ps=(0.5, 0.2), m_ref=60, n_prime_ref=10, ms=(30, 60, 120), n_primes=(5, 10, 20),
            lemma_m=300, lemma_n_primes=(2, 4, 8), trials=6, n_boot=200)


@functools.lru_cache(maxsize=2)
def mini_run(seed=7):
    """``(config, records, run)`` of the mini grid; ``run.tables`` as a claim check receives them."""
    config = STUDY.preset("quick", **MINI)
    records = []
    for c, spec in enumerate(cells_of(config)):
        cell = spec.to_cell()
        for t in range(config.trials):
            records.append({**cell, **sc_trial(spec, np.random.SeedSequence([seed, c, t]))})
    run = types.SimpleNamespace(config=config, records=records, tables=summarise(config, records))
    return config, records, run
