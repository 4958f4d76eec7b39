"""The one list of the curate job's stages and steps (``pipelines.stages``): every name the code
counts or times under is a declared step, and an undeclared one is an error, never a silent
stage."""
from __future__ import annotations

import logging
import pathlib
import re

import pytest

from curation.document import STAGES as DECISION_STEPS
from pipelines.driver.runner import attribute
from pipelines.stages import STAGES, STEPS, UnknownStepError, stage_of

PIPELINES = pathlib.Path(__file__).resolve().parents[2] / "pipelines"
# A step named in the code: count("x", ...), timed("x"), ReadParts("x", ...), a DoFn's
# stage = "x" (or "x" if ... else "y"), a module's STAGE = "x".
NAMED = re.compile(r'(?:\bcount|\btimed|\bReadParts)\(\s*"(\w+)"|\b(?:self\.)?stage\s*=\s*("[^#\n]*)|'
                   r'\bSTAGE\s*=\s*"(\w+)"')


def _named_steps() -> set[str]:
    names = set()
    for path in PIPELINES.rglob("*.py"):
        if path.parent.name == "runfolder":  # tools on a finished run (takedown): no job counters
            continue
        for m in NAMED.finditer(path.read_text(encoding="utf-8")):
            if m.group(2):
                names.update(re.findall(r'"(\w+)"', m.group(2)))
            else:
                names.add(m.group(1) or m.group(3))
    return names


def test_every_step_the_code_counts_under_is_declared():
    from curation.site_boilerplate import STAGE as SITE_BOILERPLATE

    named = _named_steps() | {SITE_BOILERPLATE}
    assert {"read", "fuzzy_dedup", "decontamination", "shards"} <= named  # the scan finds them
    assert named - set(STEPS) == set()


def test_the_decision_steps_are_steps_in_the_same_order():
    assert [s for s in STEPS if s in DECISION_STEPS] == list(DECISION_STEPS)
    assert STAGES == ("read", "dedup", "decontaminate", "tokenize")
    assert [stage_of(s) for s in ("normalize", "exact_dedup", "decontamination", "shards")] == list(STAGES)


def test_an_undeclared_step_is_an_error_naming_the_list(caplog):
    with pytest.raises(UnknownStepError, match="'spelling_check' is no step of the curate job"):
        stage_of("spelling_check")
    row = {"stage": "spelling_check", "source": "all", "outcome": "kept", "reason": None, "value": 1}
    with caplog.at_level(logging.ERROR, logger="mtnlg.curate"):
        out = attribute([row], {"read": 1.0}, STAGES)
    assert "spelling_check" in caplog.text  # logged, and kept under the job's last stage
    assert out["tokenize"]["counters"] == [row] and out["read"]["stage_seconds"] == {"read": 1.0}
