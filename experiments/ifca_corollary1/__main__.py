"""``python -m experiments.ifca_corollary1``: the study's command line."""

import sys

from . import STUDY

sys.exit(STUDY.main(command_line=True))
