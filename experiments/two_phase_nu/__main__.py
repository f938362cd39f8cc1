"""``python -m experiments.two_phase_nu``: the study's command line."""

import sys

from . import STUDY

sys.exit(STUDY.main(command_line=True))
