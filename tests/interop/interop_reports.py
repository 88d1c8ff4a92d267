"""Read what OpenClaw 2026.9.6 prints: doctor's changes and refusals, lint findings, config validation, sessions.

OpenClaw's doctor prints titled boxes (``◇  Doctor changes ───╮`` ... ``├───╯``) whose long lines wrap,
and a plain ``[state-migrations] Auto-migrated legacy state:`` list; :func:`doctor_notes` joins both back
into one paragraph per note, with the title it appeared under.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from interop_setup import CommandResult, shorten

BOX_TITLE = re.compile(r"^\s*◇\s+(.*?)\s*─*╮?\s*$")
BOX_LINE = re.compile(r"^\s*│(.*?)│?\s*$")
BOX_END = re.compile(r"^\s*[├└┌]")
AUTO_MIGRATED = "[state-migrations] Auto-migrated legacy state:"
# a note of doctor's that says it brought legacy state in (the thing a pass on migrated state must not do)
IMPORT_NOTE = re.compile(r"\b(import(ed|s|ing)?|migrated|relocated)\b", re.I)
REFUSED_STEP = re.compile(r"Failing check .*\(step-refused\)")
SEVERITY_OK = frozenset({"warning", "info"})


@dataclass(frozen=True)
class DoctorNote:
    section: str  # the box title, or the plain list's header
    text: str


def doctor_notes(output: str) -> list[DoctorNote]:
    """Every note doctor printed in a box or in the auto-migration list, one paragraph each.

    In a box, a note starts with ``- `` (its wrapped lines are indented past the dash) or is a plain
    paragraph (its wrapped lines keep its indent); a blank line or a change of indent ends it."""
    notes: list[DoctorNote] = []
    section: str | None = None
    current: list[str] = []
    indent = -1       # where the current note's continuation lines start
    bullet = False

    def flush() -> None:
        if section is not None and current:
            notes.append(DoctorNote(section, " ".join(current)))
        current.clear()

    for line in output.splitlines():
        title = BOX_TITLE.match(line)
        if title:
            flush()
            section = title.group(1).rstrip("─ ").strip()
            continue
        if line.strip() == AUTO_MIGRATED:
            flush()
            section = AUTO_MIGRATED
            continue
        if section == AUTO_MIGRATED:
            if line.startswith("- "):
                flush()
                current.append(line[2:].strip())
                continue
            flush()
            section = None
        boxed = BOX_LINE.match(line)
        if section is None or not boxed or BOX_END.match(line):
            flush()
            if BOX_END.match(line):
                section = None
            continue
        raw = boxed.group(1).rstrip()
        text = raw.strip()
        at = len(raw) - len(raw.lstrip())
        if not text:
            flush()
        elif text.startswith("- "):
            flush()
            current.append(text[2:])
            indent, bullet = at, True
        elif current and ((bullet and at > indent) or (not bullet and at == indent)):
            current.append(text)
        else:
            flush()
            current.append(text)
            indent, bullet = at, False
    flush()
    return notes


def doctor_imports(output: str, not_imports: Sequence[str] = ()) -> list[str]:
    """The notes in which doctor says it imported or migrated state, less those matching ``not_imports``
    (regular expressions: the allow-list's notes of in-place database upgrades), each once."""
    found: list[str] = []
    for note in doctor_notes(output):
        if note.section != AUTO_MIGRATED and not note.section.startswith("Doctor changes"):
            continue
        if not IMPORT_NOTE.search(note.text) or any(re.search(p, note.text) for p in not_imports):
            continue
        text = shorten(note.text, 200)
        if text not in found:
            found.append(text)
    return found


def doctor_refusal(result: CommandResult) -> str:
    """Why a doctor pass failed: its first refused step and first ``Error:``, with the log to open."""
    text = result.stdout + "\n" + result.stderr
    step = next((line.strip() for line in text.splitlines() if REFUSED_STEP.search(line)), None)
    paragraphs = [n.text for n in doctor_notes(text)] + [line.strip() for line in text.splitlines()]
    error = next((p[p.index("Error: "):] for p in paragraphs if "Error: " in p), None)
    if not step and not error:
        return result.why()
    return f"rc={result.rc}: " + "; ".join(shorten(x, 200) for x in (step, error) if x) + f" (log {result.log})"


def lint_findings_above_warning(result: CommandResult) -> tuple[list[dict[str, Any]] | None, list[str]]:
    """(all findings, the ones above warning as "checkId: message"); (None, [why]) without a report."""
    doc = result.json()
    if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
        return None, [f"doctor --lint --json printed no findings report: {result.why()}"]
    findings = [f for f in doc["findings"] if isinstance(f, dict)]
    above = [f"{f.get('checkId')} ({f.get('severity')}): {shorten(str(f.get('message', '')), 160)}"
             for f in findings if f.get("severity") not in SEVERITY_OK]
    return findings, above


def config_issues(result: CommandResult) -> list[str]:
    """Why ``openclaw config validate --json`` did not say valid ([] when it did)."""
    doc = result.json()
    if result.ok and isinstance(doc, dict) and doc.get("valid") is True:
        return []
    if not isinstance(doc, dict):
        return [result.why()]
    issues = doc.get("issues") or doc.get("errors")
    if isinstance(issues, list) and issues:
        return [shorten(f"{i.get('path')}: {i.get('message')}", 200) if isinstance(i, dict) else shorten(str(i), 200)
                for i in issues]
    return [f"valid={doc.get('valid')!r} rc={result.rc} (log {result.log})"]


def session_pairs(result: CommandResult) -> list[tuple[str, str]] | str:
    """The sorted (key, sessionId) pairs of ``sessions --json``, or why there are none."""
    doc = result.json() if result.ok else None
    if not isinstance(doc, dict) or not isinstance(doc.get("sessions"), list):
        return result.why() if not result.ok else f"no sessions list in the output (log {result.log})"
    return sorted((str(s.get("key")), str(s.get("sessionId"))) for s in doc["sessions"] if isinstance(s, dict))


def session_list_problems(reference: dict[str, list[tuple[str, str]] | str],
                          got: dict[str, list[tuple[str, str]] | str]) -> list[str]:
    problems = []
    for agent in sorted(set(reference) | set(got)):
        want, have = reference.get(agent, []), got.get(agent, [])
        if isinstance(want, str):
            problems.append(f"{agent}: OpenClaw's own result could not be listed: {want}")
        elif isinstance(have, str):
            problems.append(f"{agent}: {have}")
        else:
            missing, unexpected = sorted(set(want) - set(have)), sorted(set(have) - set(want))
            if missing or unexpected:
                problems.append(f"{agent}: {len(have)} sessions, OpenClaw's own migration has {len(want)}; missing "
                                f"{[f'{k}={s}' for k, s in missing[:4]]}; unexpected {[f'{k}={s}' for k, s in unexpected[:4]]}")
    return problems
