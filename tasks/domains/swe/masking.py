"""Hide categories of information from an annotated issue and leave fluent text behind.

The masker works on a per-character removal mask over the issue text:

1. every occurrence of every hidden span is marked (whitespace-insensitive match);
2. code-fence delimiter lines are never removed one by one, so fences cannot break;
3. a prose sentence that loses most of its words is removed whole, a code line that loses anything is removed whole;
4. lines left empty are dropped, fences left empty are dropped with their delimiters, and headers or label lines
   ("Traceback:", "### Environment") whose body was removed are dropped too;
5. spacing and punctuation around the cuts are tidied.

No redaction marker is ever inserted. :func:`find_leaks` checks that no hidden span of 20 or more characters
survives (after whitespace normalisation).
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tasks.categories import ORDER, Category
from tasks.errors import MaskingError
from tasks.text import FENCE, find_all, locate, markdown_heading, normalise_newlines, normalise_ws, split_spans

LEAK_MIN_CHARS = 20

_HEADING = markdown_heading()
_LIST_MARKER = re.compile(r"^(\s*(?:[-*+>]|\d+[.)])(?:\s+|$))")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_ALNUM = re.compile(r"[A-Za-z0-9]")
_ELLIPSIS = re.compile(r"\.\.\.|…")


@dataclass(frozen=True)
class LocatedSpan:
    category: Category
    text: str
    start: int
    end: int


def fence_count(text: str) -> int:
    """Number of code-fence delimiter lines; an even count means every fence is closed."""
    return sum(1 for line in text.split("\n") if FENCE.match(line))


def locate_all(
    text: str, spans: Iterable[tuple[Category, str]]
) -> tuple[list[LocatedSpan], list[tuple[Category, str]]]:
    """Locate annotated spans; returns (located occurrences, spans not found in the text)."""
    located: list[LocatedSpan] = []
    missing: list[tuple[Category, str]] = []
    for category, span in spans:
        hits = locate(text, span)
        if not hits:
            missing.append((category, span))
        located.extend(LocatedSpan(category, text[s:e], s, e) for s, e in hits)
    return located, missing


# ---- choosing what to hide -----------------------------------------------------------------------------------------


def variant_rng(instance_id: str, seed: int) -> random.Random:
    digest = hashlib.sha256(f"{instance_id}|{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def all_combinations(maskable: Sequence[Category], min_hidden: int, max_hidden: int) -> list[tuple[Category, ...]]:
    ordered = [c for c in ORDER if c in maskable]
    top = min(max_hidden, len(ordered))
    return [combo for k in range(min_hidden, top + 1) for combo in itertools.combinations(ordered, k)]


def choose_hidden(
    instance_id: str,
    seed: int,
    maskable: Sequence[Category],
    n_variants: int | None,
    min_hidden: int,
    max_hidden: int,
) -> list[tuple[Category, ...]]:
    """Distinct category sets to hide, deterministic per (instance id, seed).

    Each draw picks a size uniformly in [min_hidden, max_hidden] (capped by what is present), then a set of that
    size not drawn before. ``n_variants=None`` returns every combination.
    """
    combos = all_combinations(maskable, min_hidden, max_hidden)
    if n_variants is None or n_variants >= len(combos):
        return combos
    rng = variant_rng(instance_id, seed)
    by_size: dict[int, list[tuple[Category, ...]]] = {}
    for combo in combos:
        by_size.setdefault(len(combo), []).append(combo)
    chosen: list[tuple[Category, ...]] = []
    while len(chosen) < n_variants:
        sizes = [k for k, left in sorted(by_size.items()) if left]
        k = rng.choice(sizes)
        chosen.append(by_size[k].pop(rng.randrange(len(by_size[k]))))
    return sorted(chosen, key=combos.index)


# ---- removing text --------------------------------------------------------------------------------------------------


@dataclass
class _Line:
    start: int
    end: int  # exclusive, without the newline
    fence: bool  # a fence delimiter line
    code: bool  # inside a fenced block
    fence_id: int | None = None


def _split_lines(text: str) -> list[_Line]:
    lines: list[_Line] = []
    pos = 0
    in_code = False
    fence_id = -1
    for raw in text.split("\n"):
        start, end = pos, pos + len(raw)
        if FENCE.match(raw):
            if not in_code:
                fence_id += 1
            lines.append(_Line(start, end, fence=True, code=False, fence_id=fence_id))
            in_code = not in_code
        else:
            lines.append(_Line(start, end, fence=False, code=in_code, fence_id=fence_id if in_code else None))
        pos = end + 1
    return lines


def _alnum_count(text: str) -> int:
    return len(_ALNUM.findall(text))


def _expand_removals(text: str, removed: bytearray, lines: list[_Line]) -> None:
    for line in lines:
        segment = removed[line.start : line.end]
        if not any(segment):
            continue
        if line.fence:
            removed[line.start : line.end] = bytes(line.end - line.start)
            continue
        if line.code:
            removed[line.start : line.end] = b"\x01" * (line.end - line.start)
            continue
        body_start = line.start
        marker = _LIST_MARKER.match(text[line.start : line.end])
        if marker:
            body_start += marker.end()
        for s, e in split_spans(text, body_start, line.end, _SENTENCE_END):
            if not any(removed[s:e]):
                continue
            total = _alnum_count(text[s:e])
            kept = _alnum_count("".join(ch for ch, r in zip(text[s:e], removed[s:e]) if not r))
            if kept < 12 or kept < 0.5 * total:
                removed[s:e] = b"\x01" * (e - s)
                # also drop the whitespace that separated it from the next sentence
                while e < line.end and text[e] in " \t":
                    removed[e] = 1
                    e += 1


_TIDY_RULES = [
    (re.compile(r"\(\s*\)|\[\s*\]|``|\"\s*\"|'\s*'"), ""),
    (re.compile(r"[ \t]{2,}"), " "),
    (re.compile(r"\s+([.,;:!?)\]])"), r"\1"),
    (re.compile(r"([(\[])\s+"), r"\1"),
    (re.compile(r"([,;:])\s*([.,;:])"), r"\2"),
    (re.compile(r"^\s*[,;:.]\s*"), ""),
]


_SENTENCE_START = re.compile(r"(?<![A-Za-z]\.[A-Za-z]\.)(?<!\betc\.)(?<!\bvs\.)(?<=[.!?] )([a-z])")
_NUMBERED = re.compile(r"^(\s*)(\d+)([.)]\s)")


def _tidy(prefix: str, body: str) -> str:
    for pattern, repl in _TIDY_RULES:
        body = pattern.sub(repl, body)
    body = body.strip()
    if body and body[0].islower() and not prefix.strip():
        body = body[0].upper() + body[1:]
    body = _SENTENCE_START.sub(lambda m: m.group(1).upper(), body)
    return prefix + body


def _renumber(original: list[str], keep: list[str | None], lines: list[_Line]) -> None:
    """Renumber a numbered list that lost items, so "1. 2. 3." minus item 1 reads "1. 2." again."""
    i = 0
    while i < len(original):
        if lines[i].code or not _NUMBERED.match(original[i]):
            i += 1
            continue
        j = i
        while j < len(original) and not lines[j].code and _NUMBERED.match(original[j]):
            j += 1
        run = range(i, j)
        if any(keep[k] != original[k] for k in run):
            number = int(_NUMBERED.match(original[i]).group(2))
            for k in run:
                match = _NUMBERED.match(keep[k]) if keep[k] is not None else None
                if match:
                    keep[k] = f"{match.group(1)}{number}{match.group(3)}{keep[k][match.end():]}"
                    number += 1
        i = j


def _is_label(line: str) -> bool:
    stripped = line.strip()
    return bool(_HEADING.match(line)) or (stripped.endswith(":") and not stripped.startswith(("-", "*", ">")))


def _body_lines(i: int, lines: list[_Line], original: list[str]) -> list[int]:
    """The first block (a fenced block or a paragraph) that the heading or label at ``i`` introduces."""
    n = len(lines)
    j = i + 1
    while j < n and not original[j].strip():
        j += 1
    if j >= n or _HEADING.match(original[j]):
        return []
    if lines[j].fence:
        k = j + 1
        while k < n and not (lines[k].fence and lines[k].fence_id == lines[j].fence_id):
            k += 1
        return list(range(j, min(k, n - 1) + 1))
    body = []
    while j < n and original[j].strip() and not _HEADING.match(original[j]) and not lines[j].fence:
        body.append(j)
        j += 1
    return body


def _drop_last_sentence(line: str) -> str | None:
    """Cut the sentence that introduced a removed block ("... I get:"), keeping what came before it."""
    if _HEADING.match(line):
        return None
    pieces = _SENTENCE_END.split(line.rstrip())
    if len(pieces) < 2:
        return None
    rest = line[: line.rstrip().rindex(pieces[-1])].rstrip()
    return rest if _alnum_count(rest) else None


def mask_text(text: str, intervals: Iterable[tuple[int, int]]) -> str:
    """Remove the given character intervals from ``text`` and return fluent text (see module docstring)."""
    text = normalise_newlines(text)
    removed = bytearray(len(text))
    for s, e in intervals:
        removed[s:e] = b"\x01" * (e - s)
    lines = _split_lines(text)
    _expand_removals(text, removed, lines)

    original = [text[ln.start : ln.end] for ln in lines]
    keep: list[str | None] = []
    touched: list[bool] = []
    for ln, raw in zip(lines, original):
        seg = removed[ln.start : ln.end]
        if not any(seg):
            keep.append(raw)
            touched.append(False)
            continue
        touched.append(True)
        kept = "".join(ch for ch, r in zip(raw, seg) if not r)
        if ln.code:
            keep.append(kept if kept.strip() else None)
            continue
        marker = _LIST_MARKER.match(kept)
        prefix = marker.group(1) if marker else re.match(r"^\s*", kept).group(0)
        body = kept[len(prefix) :]
        if _alnum_count(body) == 0:
            keep.append(None)
        else:
            keep.append(_tidy(prefix, body))

    changed = True
    while changed:
        changed = False
        # fences whose content is gone lose their delimiters too
        fences: dict[int, list[int]] = {}
        for i, ln in enumerate(lines):
            if ln.fence_id is not None:
                fences.setdefault(ln.fence_id, []).append(i)
        for members in fences.values():
            inner = [i for i in members if not lines[i].fence]
            delims = [i for i in members if lines[i].fence]
            if (any(keep[i] is not None for i in delims) and any(touched[i] for i in inner)
                    and all(keep[i] is None or not keep[i].strip() for i in inner)):
                for i in members:
                    if keep[i] is not None:
                        keep[i] = None
                        touched[i] = True
                        changed = True
        # headers and labels whose body was removed
        for i in range(len(original)):
            if keep[i] is None or lines[i].code or lines[i].fence or not _is_label(keep[i]):
                continue
            body = [j for j in _body_lines(i, lines, original) if original[j].strip()]
            if body and all(keep[j] is None for j in body) and any(touched[j] for j in body):
                keep[i] = _drop_last_sentence(keep[i])
                touched[i] = True
                changed = True

    _renumber(original, keep, lines)
    out = "\n".join(line.rstrip() for line in keep if line is not None)
    out = re.sub(r"\n{3,}", "\n\n", out)
    return out.strip("\n").strip()


# ---- leak check -----------------------------------------------------------------------------------------------------


def find_leaks(brief: str, hidden_spans: Iterable[str], min_chars: int = LEAK_MIN_CHARS) -> list[str]:
    """Hidden spans (and ellipsis pieces) of at least ``min_chars`` that still occur in the brief."""
    haystack = normalise_ws(brief)
    leaks = []
    for span in hidden_spans:
        candidates = [span, *_ELLIPSIS.split(span)]
        for cand in candidates:
            norm = normalise_ws(cand)
            if len(norm) >= min_chars and norm in haystack:
                leaks.append(span)
                break
    return leaks


def remove_leaks(brief: str, hidden_spans: Sequence[str], rounds: int = 3) -> str:
    """Removing other spans can join the pieces of a stitched quotation; cut any hidden span that re-formed."""
    for _ in range(rounds):
        leaks = find_leaks(brief, hidden_spans)
        if not leaks:
            break
        intervals = [iv for span in leaks for cand in (span, *_ELLIPSIS.split(span)) for iv in find_all(brief, cand)
                     if len(normalise_ws(cand)) >= LEAK_MIN_CHARS]
        brief = mask_text(brief, intervals)
    return brief


def assert_no_leak(case_id: str, brief: str, hidden_spans: Sequence[str]) -> None:
    leaks = find_leaks(brief, hidden_spans)
    if leaks:
        raise MaskingError(f"{case_id}: hidden span survived masking: {leaks[0][:80]!r}")
