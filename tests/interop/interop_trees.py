"""The legacy trees the interop suite runs on, the HOME each runs at, and what their legacy files hold.

Corpus trees (``../shared/corpus/generated/*.tar``) were written by real old releases under a HOME their
MANIFEST names (``/tmp/gen-<version>-<label>/home``); they store absolute paths below it, so OpenClaw
and statekit run on copies placed at exactly that path. Only one run may use such a path at a time:
:class:`HomeSlot` claims it with a marker file ``<home>.openclaw-interop`` holding the owner's pid
(the convention the shared checker uses too), waits while a live process holds it, and never touches
a path it did not claim. The bundled demo install runs at a HOME inside the work dir.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import json5

from helpers import CORPUS, FIXTURES

MANIFEST_HOME = re.compile(r"^# original HOME: (/\S+)", re.M)
RECORDING_FILES = re.compile(r"home/\.openclaw/(openclaw\.json|agents/[^/]+/sessions/sessions\.json)")
RECORDED_PATH = re.compile(r'"(/[^"\\]*?)/\.openclaw(?:/[^"]*)?"')
TRANSCRIPT_SKIP_SUFFIXES = (".trajectory.jsonl", ".acp-stream.jsonl")
SERVED_ENTRY_TYPES = frozenset({"message", "compaction"})
SLOT_POLL_S = 5.0
MARKER_WRITE_GRACE_S = 60.0  # an empty marker younger than this is being written by its owner


@dataclass(frozen=True)
class TreeSource:
    label: str
    archive: Path | None = None    # a corpus tarball holding home/.openclaw (and MANIFEST.txt)
    home_dir: Path | None = None   # or a directory holding .openclaw (the demo install)

    def recorded_home(self) -> Path | None:
        """The HOME the tree was written under, when the suite may use that path (inside the temp dir).

        Its MANIFEST names it (``# original HOME: <path>``) where the generator wrote that line; otherwise
        it is the home below which the tree's openclaw.json and sessions.json store their absolute paths.
        """
        if self.archive is None:
            return None
        match = MANIFEST_HOME.search(_archive_manifest(self.archive))
        home = Path(match.group(1)) if match else _home_of_recorded_paths(self.archive)
        if home is None:
            return None
        parent = Path(os.path.realpath(home.parent))
        temp = Path(os.path.realpath(tempfile.gettempdir()))
        # never write outside the temp dir, whatever a tree says
        return home if parent == temp or temp in parent.parents else None

    def extract_home(self, dest: Path) -> Path:
        """A pristine copy of the tree's home (holding ``.openclaw``) at ``dest``."""
        dest.mkdir(parents=True)
        if self.archive is not None:
            with tarfile.open(self.archive) as archive:
                members = [m for m in archive.getmembers() if m.name == "home" or m.name.startswith("home/")]
                archive.extractall(dest.parent / f"{dest.name}.extract", members=members, filter="tar")
            extracted = dest.parent / f"{dest.name}.extract" / "home"
            dest.rmdir()
            extracted.rename(dest)
            (dest.parent / f"{dest.name}.extract").rmdir()
        else:
            assert self.home_dir is not None
            dest.rmdir()
            shutil.copytree(self.home_dir, dest, symlinks=True)
        if not (dest / ".openclaw").is_dir():
            raise ValueError(f"{self.archive or self.home_dir}: no .openclaw state dir in the tree's home")
        return dest


def _archive_manifest(archive: Path) -> str:
    sibling = archive.with_name(archive.name.removesuffix(".tar") + ".MANIFEST.txt")
    with tarfile.open(archive) as tar:
        try:
            member = tar.extractfile("MANIFEST.txt")
        except KeyError:
            member = None
        if member is not None:
            return member.read().decode("utf-8", errors="replace")
    return sibling.read_text(encoding="utf-8", errors="replace") if sibling.exists() else ""


def _home_of_recorded_paths(archive: Path) -> Path | None:
    """The most frequent ``<home>`` of absolute ``<home>/.openclaw/...`` strings in the tree's config and indexes."""
    votes: Counter[str] = Counter()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isfile() and RECORDING_FILES.fullmatch(member.name):
                handle = tar.extractfile(member)
                if handle is not None:
                    votes.update(RECORDED_PATH.findall(handle.read().decode("utf-8", errors="replace")))
    return Path(votes.most_common(1)[0][0]) if votes else None


def corpus_trees() -> list[TreeSource]:
    generated = CORPUS / "generated"
    if not generated.is_dir():
        return []
    return [TreeSource(label=p.name.removesuffix(".tar"), archive=p) for p in sorted(generated.glob("*.tar"))]


def demo_tree() -> TreeSource:
    return TreeSource(label="demo-install", home_dir=FIXTURES / "demo-install")


# ------------------------------------------------------------------------------------------ the HOME slot
class SlotBusy(Exception):
    pass


class HomeSlot:
    """The path a tree runs at. ``occupy(src)`` puts a copy of a home there for the length of a block."""

    def __init__(self, home: Path, claim_marker: bool, wait_s: float) -> None:
        self.home = home
        self.marker = home.with_name(home.name + ".openclaw-interop") if claim_marker else None
        self.wait_s = wait_s
        self.claimed = False

    def claim(self) -> None:
        if self.marker is None:
            self.home.parent.mkdir(parents=True, exist_ok=True)
            self.claimed = True
            return
        self.home.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait_s
        while not _create_marker(self.marker):
            owner = _marker_pid(self.marker)
            if owner is None and _age_s(self.marker) > MARKER_WRITE_GRACE_S or owner is not None and not _alive(owner):
                # left by a run that died: its home copy is ours to clear
                shutil.rmtree(self.home, ignore_errors=True)
                self.marker.unlink(missing_ok=True)
                continue
            if time.monotonic() > deadline:
                raise SlotBusy(f"{self.home} is in use by pid {owner} (marker {self.marker}) for more than "
                               f"{self.wait_s:.0f} s")
            time.sleep(SLOT_POLL_S)  # another run owns the path (or is writing its marker): wait for it
        if os.path.lexists(self.home):
            self.marker.unlink()
            raise SlotBusy(f"{self.home} exists and was not made by an interop run: move it away first")
        self.claimed = True

    def release(self) -> None:
        if not self.claimed:
            return
        self._clear()
        if self.marker is not None:
            self.marker.unlink(missing_ok=True)
        self.claimed = False

    def _clear(self) -> None:
        if not self.claimed:
            raise RuntimeError(f"{self.home} used before it was claimed")
        if os.path.lexists(self.home):
            shutil.rmtree(self.home)

    @contextmanager
    def occupy(self, src: Path, keep_as: Path | None = None) -> Iterator[Path]:
        """Copy ``src`` (a home) to the slot; afterwards move the result to ``keep_as`` or delete it."""
        self._clear()
        shutil.copytree(src, self.home, symlinks=True)
        try:
            yield self.home
        finally:
            if keep_as is not None:
                shutil.rmtree(keep_as, ignore_errors=True)
                keep_as.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(self.home, keep_as)
            else:
                self._clear()


def _create_marker(marker: Path) -> bool:
    """Create ``marker`` holding this pid, atomically and only if it does not exist (a hard link of a
    complete temp file: nobody ever sees it empty)."""
    temp = marker.with_name(f"{marker.name}.{os.getpid()}.tmp")
    temp.write_text(f"{os.getpid()}\n", encoding="utf-8")
    try:
        os.link(temp, marker)
    except FileExistsError:
        return False
    finally:
        temp.unlink()
    return True


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _marker_pid(marker: Path) -> int | None:
    try:
        return int(marker.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ------------------------------------------------------------------------------------------ legacy facts
@dataclass(frozen=True)
class LegacyFacts:
    """What the legacy files say, the truth the served history is held to."""

    messages: dict[str, dict[str, int]] = field(default_factory=dict)       # agent -> session id -> messages
    index_sessions: dict[str, dict[str, str]] = field(default_factory=dict)  # agent -> sessions.json key -> id

    def expected_messages(self, agent: str, session_id: str) -> int:
        return self.messages.get(agent, {}).get(session_id, 0)

    def indexed(self, agent: str, session_id: str) -> bool:
        return session_id in self.index_sessions.get(agent, {}).values()


def legacy_facts(state: Path) -> LegacyFacts:
    return LegacyFacts(messages=_transcript_messages(state), index_sessions=_index_sessions(state))


def _transcript_messages(state: Path) -> dict[str, dict[str, int]]:
    """Per agent and session id: the ``"type":"message"`` lines of its legacy JSONL transcript(s)."""
    found: dict[str, dict[str, int]] = {}
    for path in sorted(state.glob("agents/*/sessions/*.jsonl")):
        if path.name.endswith(TRANSCRIPT_SKIP_SUFFIXES) or ".checkpoint." in path.name:
            continue
        session_id, count = transcript_message_count(path)
        agent = path.parent.parent.name
        per_agent = found.setdefault(agent, {})
        per_agent[session_id] = per_agent.get(session_id, 0) + count
    return found


def transcript_message_count(path: Path) -> tuple[str, int]:
    """(session id, entries 9.6's chat history serves) of one legacy JSONL transcript.

    The session id is the header's, else the file name's. Served entries are the ``message`` lines and
    the ``compaction`` lines (9.6 serves each compaction as a system message), up to the first line
    that is not a JSON object: OpenClaw's own import keeps nothing after a torn line (seen on the demo
    install's ops transcript), and neither header nor model/thinking changes nor ``custom`` events are
    messages in its history.
    """
    session_id: str | None = None
    count = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                break
            if not isinstance(record, dict):
                break
            if record.get("type") == "session" and session_id is None and isinstance(record.get("id"), str):
                session_id = record["id"]
            elif record.get("type") in SERVED_ENTRY_TYPES:
                count += 1
    return session_id or re.sub(r"(-topic-.*)?\.jsonl$", "", path.name), count


def _index_sessions(state: Path) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for index in sorted(state.glob("agents/*/sessions/sessions.json")):
        try:
            store = json5.loads(index.read_text(encoding="utf-8", errors="replace"))
        except ValueError:
            continue
        if isinstance(store, dict):
            found[index.parent.parent.name] = {k: v["sessionId"] for k, v in store.items()
                                               if isinstance(v, dict) and isinstance(v.get("sessionId"), str)}
    return found
