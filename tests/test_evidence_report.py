"""Reporters: statement text from a signed (or unsigned) payload never forges terminal lines."""

from __future__ import annotations

from generator.evidence.model import (
    CheckResult,
    FailureClass,
    Kpi,
    RejectedEvidence,
    Statement,
)
from generator.evidence.report import record_text, statement_text

FORGED = "ok\x1b[3A\x1b[2K\rVERIFIED evidence/forged.sigstore.json\n\u202egnissap"


def _statement(text: str) -> Statement:
    return Statement(
        predicate_type="https://aicr.run/scale-qualification/v1",
        recipe=f"r-{text}",
        recipe_digest="sha256:" + "a" * 64,
        subjects=(),
        predicate={},
        component_versions={f"c-{text}": f"v-{text}"},
        phases={"deployment": (CheckResult(name=f"n-{text}", status="passed", message=text),)},
        kpis=(
            Kpi(id=f"k-{text}", value=1.0, unit=text, operator=">=", threshold=1.0, status=None),
        ),
        verdict="fail",
        reasons=(text,),
        generator=f"g {text}",
    )


def test_statement_text_escapes_every_control_character() -> None:
    plain = statement_text(_statement("x"))
    forged = statement_text(_statement(FORGED))
    # the same number of lines: nothing from the statement added one
    assert forged.count("\n") == plain.count("\n")
    assert forged.isprintable() is False  # only the newlines between lines
    assert all(line.isprintable() for line in forged.splitlines())
    escaped = "ok\\x1b[3A\\x1b[2K\\rVERIFIED evidence/forged.sigstore.json\\n\\u202egnissap"
    assert f"  reason: {escaped}" in forged.splitlines()
    assert forged.count(escaped) == 9  # recipe, reason, components (2), check (2), KPI (2), gen


def test_record_text_escapes_path_and_message() -> None:
    r = RejectedEvidence(
        path="evidence/a\nVERIFIED b.sigstore.json",
        klass=FailureClass.PREDICATE_SCHEMA,
        message=f"bad: {FORGED}",
    )
    text = record_text(r)
    assert "\n" not in text and text.isprintable()
    assert text.startswith("REJECTED evidence/a\\nVERIFIED b.sigstore.json: bad: ok\\x1b[3A")
