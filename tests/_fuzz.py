"""The check every API fuzz case makes of a refusal (``test_fuzz_api.py``, ``test_fuzz_public.py``)."""

from __future__ import annotations

import pathlib
import re

import mixreg

PACKAGE = pathlib.Path(mixreg.__file__).resolve().parent


def check_refusal(info, exc, match):
    """``info`` (a ``pytest.raises`` result) holds exactly ``exc``, a one-line message matching
    ``match``, raised by mixreg's own validation rather than deep inside a library."""
    message = str(info.value)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {message}"
    assert "\n" not in message, message
    assert re.search(match, message), message
    last = pathlib.Path(info.traceback[-1].path).resolve()
    assert PACKAGE in last.parents, f"raised from {last}, not by mixreg's validation: {message}"
