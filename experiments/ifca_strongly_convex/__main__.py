"""``python -m experiments.ifca_strongly_convex``: the study's command line."""

import sys

from . import STUDY

sys.exit(STUDY.main(command_line=True))
