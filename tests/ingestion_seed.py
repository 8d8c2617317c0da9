"""The pipeline YAML examples of the seed document's "Data ingestion" section, read at test time.

The seed documents (``../shared/seeds/*.txt`` beside the repository) are public web pages turned
into text; an example starts at a ``source:`` line and runs while its lines are indented deeper
or are the next top-level section (``sink:``, ``route:``, ``transform:``, ``pipeline:``). Tests
load the examples as written, substituting only bootstrap servers and topics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

SEED = Path(__file__).resolve().parents[1] / ".." / "shared" / "seeds" / "001_ad2ee65ea2934f3f.txt"
_SECTION = re.compile(r"^(source|sink|route|transform|pipeline):\s*$")


@dataclass(frozen=True)
class SeedPipeline:
    """One example: where it starts in the seed, and its text."""

    line: int
    text: str

    @property
    def source_type(self) -> str:
        found = re.search(r"^source:\n(?:[ \t].*\n)*?\s+type:\s*(\S+)", self.text, re.MULTILINE)
        return found.group(1) if found else ""

    @property
    def sink_type(self) -> str | None:
        found = re.search(r"^sink:\n(?:[ \t].*\n)*?\s+type:\s*(\S+)", self.text, re.MULTILINE)
        return found.group(1) if found else None


def seed_pipelines() -> list[SeedPipeline]:
    """Every ``source:`` example of the "Data ingestion" section (skips when the seed is absent)."""
    if not SEED.exists():
        pytest.skip(f"seed document {SEED} not found")
    lines = SEED.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Data ingestion")
    out: list[SeedPipeline] = []
    i = start
    while i < len(lines):
        if lines[i].strip() != "source:":
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        block = [lines[i][indent:]]
        j = i + 1
        while j < len(lines):
            line = lines[j]
            depth = len(line) - len(line.lstrip())
            if line.strip() and depth <= indent and not _SECTION.match(line[indent:]):
                break
            block.append(line[indent:] if depth >= indent else line.lstrip())
            j += 1
        out.append(SeedPipeline(i + 1, "\n".join(block).strip() + "\n"))
        i = j
    return out


def as_written(example: SeedPipeline, bootstrap: str, topic: str) -> str:
    """The example with its bootstrap servers and source topic replaced, nothing else."""
    text = re.sub(
        r"(properties\.bootstrap\.servers:\s*)(localhost|host):9092",
        rf"\g<1>{bootstrap}",
        example.text,
    )
    return re.sub(r"(topic:\s*)test-topic\b", rf"\g<1>{topic}", text)
