"""A toy experiment on the command line of mixreg.cli, for the tests of stopping a run.

``python -m _toy_experiment`` (with ``tests/`` on the path, see ``_toy_trials.subprocess_env``)
runs one cell of :func:`_toy_trials.stoppable_trial`, one trial per chunk; the environment
variables of that trial decide whether and where the run is stopped.  It writes a table
``counts.csv`` and draws no figure.
"""

import dataclasses
import pathlib
import sys

import _toy_trials as toys
from mixreg import cli as _cli
from mixreg.cli import param
from mixreg.montecarlo import Sweep

NAME = "toy_experiment"
TABLES = ("counts",)
REPO = pathlib.Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Config:
    preset: str = param("quick (the only one)")
    trials: int = param("trials of the one cell")

    def validate(self):
        if self.trials < 1:
            raise ValueError(f"--trials must be >= 1, got {self.trials}")
        return self


PRESETS = {"quick": dict(trials=4)}


def build_sweep(config):
    return Sweep(name=NAME, trial_fn=toys.stoppable_trial, cells=[{"group": "a"}], n_trials=config.trials,
                 root_seed=11, config=dataclasses.asdict(config), chunk_size=1)


def summarise(config, records):
    return {"counts": [{"trials": len(records), "failed": sum(1 for r in records if r["error"])}]}


def draw(config, tables, outdir):
    return []


build_parser, config_from_args, main = _cli.entry_points(__name__, description="a toy experiment")


if __name__ == "__main__":
    sys.exit(main())
