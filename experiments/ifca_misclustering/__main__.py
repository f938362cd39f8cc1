"""``python -m experiments.success_vs_R``: the study's command line."""

import sys

from . import STUDY

sys.exit(STUDY.main(command_line=True))
