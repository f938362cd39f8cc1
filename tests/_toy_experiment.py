"""A toy study on the command line of mixreg.cli, for the tests of stopping a run.

``python -m _toy_experiment`` (with ``tests/`` on the path, see ``_toy_trials.subprocess_env``)
runs one cell of :func:`_toy_trials.stoppable_trial`, one trial per chunk; the environment
variables of that trial decide whether and where the run is stopped.  It writes a table
``counts.csv`` and draws no figure.
"""

import dataclasses
import sys

import _toy_trials as toys
from mixreg.study import Spec, Study, param

NAME = "toy_experiment"
TABLES = ("counts",)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    preset: str = param("quick (the only one)")
    trials: int = param("trials of the one cell", low=1)


PRESETS = {"quick": dict(trials=4)}


def summarise(config, records):
    return {"counts": [{"trials": len(records), "failed": sum(1 for r in records if r["error"])}]}


def draw(config, tables, outdir):
    return []


STUDY = Study(name=NAME, command="python -m _toy_experiment", description="a toy experiment", config=Config,
              presets=PRESETS, cells=lambda config: [{"group": "a"}], trial=toys.stoppable_trial, tables=TABLES,
              summarise=summarise, draw=draw, root_seed=11, chunk_size=1)


if __name__ == "__main__":
    sys.exit(STUDY.main(command_line=True))
