"""The annotator role: tag verbatim spans of a SWE issue with the six CLARITI categories.

Local backend (deterministic):

1. **Segment** the issue into units: one unit per non-blank line inside code blocks (fenced, indented or REPL),
   with a traceback kept whole and a REPL prompt kept together with its output; sentences in prose (list items
   and short "key: value" lines on their own); headings; HTML template comments are skipped except for the links
   inside them (one ``comment`` unit per URL).
2. **Classify** every unit, possibly into several categories. Code lines are Reproduction Steps, program output
   and tracebacks Error Information, unless the section heading ("Expected outcome", "Versions", "Proposed fix")
   or the lead-in line before the block ("The fix could be:") says otherwise. Prose units get categories from
   rules (exception names, "should/expected" wording, fix proposals and file paths, URLs and issue references,
   version strings, "when I run ..." conditions) checked against the cosine similarity to category prototypes,
   which are built from the project's own annotated samples (``data/samples/swe/issues.jsonl``) and short
   sentences written here; a very similar prototype alone also tags a unit.
3. **Merge** adjacent units of the same category (only whitespace or fence lines between them) into spans.

A category is ``present`` when it has at least one span.

Learned unit scorer (on by default when ``annotator_weights.npz`` sits next to this module; without the file the
annotator is the rules above). Every unit gets features (:func:`unit_features`: the rules' tags and signals, unit kind,
heading and lead-in context, neighbours' tags, position, prototype cosines and the MiniLM embedding of prose units) and
a hashed bag of its tokens (:func:`hashed_text`). Per category, a gradient-boosted tree ensemble over the features
(trained with LightGBM, stored and evaluated as plain numpy arrays) and a logistic regression over the hashed text each
score the unit; the score is their even blend. A unit is tagged when its score reaches the category's threshold and a
share of the issue's best score for it (:func:`unit_tags`). The thresholds are recall-first: the best span precision at
span recall >= 0.82 on inner folds, because a span the annotator misses stays in a masked issue. Tagged units are then
filled within their paragraph or code block (every unit between two tagged units of the same group is tagged too) and
merged, so one region gives one span rather than fragments. Presence follows the rule the training folds preferred per
category: always present, "has a tagged unit", or a small issue-level regression over its unit scores (a present
category keeps at least its best unit). The shipped weights were trained by ``benchmarks/train_annotator.py`` on all 496
annotated rows of the CLARITI workbook (``category_mapping`` spans located in ``original issue``), with thresholds from
an inner 4-fold split; the file holds numbers only. Its honest figures are the issue-level 5-fold cross-validated ones
printed by that script and by ``benchmarks/annotator_fidelity.py``.

The LLM backend's answers go through :func:`verbatim_spans`, which drops any span not found in the issue.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tasks.categories import ORDER, Category
from tasks.records import SpanAnnotation
from tasks.roles.base import RoleSpec

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "swe" / "issues.jsonl"

E, R, X, I, L, V = (  # noqa: E741 - the categories' initials
    Category.ERROR,
    Category.REPRODUCTION,
    Category.EXPECTED,
    Category.IMPLEMENTATION,
    Category.EXTERNAL_REFS,
    Category.VERSION_ENV,
)


# ---- models ---------------------------------------------------------------------------------------------------------


class AnnotateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instance_id: str = ""
    text: str = Field(min_length=1)
    hints: str = ""


class TaggedSpan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    category: Category
    text: str = Field(min_length=1, description="a verbatim excerpt of the issue text")


class Annotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spans: list[TaggedSpan] = []
    present: list[Category] = []


# ---- LLM-side helpers -----------------------------------------------------------------------------------------------


def _ws_pattern(span: str) -> re.Pattern | None:
    tokens = span.split()
    return re.compile(r"\s+".join(re.escape(t) for t in tokens)) if tokens else None


def find_span(text: str, span: str) -> tuple[int, int] | None:
    """First occurrence of ``span`` in ``text``: exact, else with any run of whitespace matching any other."""
    idx = text.find(span)
    if idx >= 0:
        return idx, idx + len(span)
    pattern = _ws_pattern(span)
    match = pattern.search(text) if pattern else None
    return (match.start(), match.end()) if match else None


def verbatim_spans(annotation: Annotation, text: str) -> Annotation:
    """Keep only spans that occur in ``text`` (whitespace-insensitive), rewritten to the issue's own wording.

    Duplicates are dropped; ``present`` keeps the annotator's categories, plus any category that has a span.
    """
    kept: list[TaggedSpan] = []
    seen: set[tuple[Category, str]] = set()
    for span in annotation.spans:
        where = find_span(text, span.text)
        if where is None or not text[where[0] : where[1]].strip():
            continue
        exact = text[where[0] : where[1]]
        if (span.category, exact) not in seen:
            seen.add((span.category, exact))
            kept.append(TaggedSpan(category=span.category, text=exact))
    present = set(annotation.present) | {s.category for s in kept}
    return Annotation(spans=kept, present=[c for c in ORDER if c in present])


def to_span_annotations(annotation: Annotation) -> list[SpanAnnotation]:
    """The annotation as ``IssueRecord.spans`` (use ``annotation.present`` for ``IssueRecord.present``)."""
    return [SpanAnnotation(category=s.category, text=s.text) for s in annotation.spans]


# ---- segmentation ---------------------------------------------------------------------------------------------------


@dataclass
class Unit:
    start: int
    end: int
    kind: str
    """``prose``, ``title``, ``heading``, ``code``, ``output``, ``exchange``, ``traceback``, ``diff``, ``comment``
    (a link inside an HTML template comment)."""
    text: str = ""
    cats: set[Category] = field(default_factory=set)
    block: int = -1
    """Index of the code block (fenced, indented, REPL or traceback) the unit belongs to; -1 for prose."""
    section: Category | None = None
    """The category of the heading the unit sits under (set by the rules)."""
    context: Category | None = None
    """For code-block units: the category the block was announced with (lead-in line, else section)."""


_LINE = re.compile(r"[^\r\n]*")
_FENCE = re.compile(r"^\s*(```|~~~)")
_COMMENT_OPEN = re.compile(r"<!--")
_COMMENT_CLOSE = re.compile(r"-->")
_HEADING = re.compile(r"^\s{0,3}(#{1,6}\s+\S.*|\*\*[^*]+\*\*:?|__[^_]+__:?|[A-Z][\w /&()-]{0,40}:)\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_TRACE_START = re.compile(r"^\s*Traceback \(most recent call last\)")
_TRACE_END = re.compile(r"^\s*[\w.]*(Error|Exception|Warning|Exit|Interrupt|Fault)\b.*|^\s*[\w.]+: .+")
_REPL = re.compile(r"^\s*(>>>|\.\.\.)( |$)")
_IPY_IN = re.compile(r"^\s*In \[\d*\]:")
_IPY_CONT = re.compile(r"^\s*\.{3,}:")
_SHELL = re.compile(
    r"^\s*(\$|>|%|#)\s+\S"
    r"|^\s*(pip|python\d?(\.\d+)?|pytest|py\.test|tox|conda|git|sphinx-\w+|make|django-admin|manage\.py|\./\S+)\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z`\"'(\[*])")
_CODEISH = re.compile(
    r"^\s*(import\s|from\s+\S+\s+import|def\s|class\s|return\b|if\s.*:$|elif\s|else:|for\s.*:$|while\s|with\s.*:$|"
    r"try:|except\b|finally:|raise\s|assert\s|print\(|@\w|#|//|\}|\{|\)|\]|async\s|await\s|yield\b|lambda\b|"
    r"pass$|continue$|break$)"
    r"|^\s*[\w.\[\]'\"]+\s*(=|\+=|-=|\*=|/=)\s*\S"
    r"|^\s*[\w.]+\(.*\)?\s*$"
    r"|[;{]\s*$|:\s*$"
)


def _lines(text: str) -> list[tuple[int, int]]:
    out = []
    for m in _LINE.finditer(text):
        if m.start() == m.end() and out and out[-1][1] == m.start():
            continue  # the empty match right after a line
        out.append((m.start(), m.end()))
    return out


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _unit(text: str, start: int, end: int, kind: str) -> Unit | None:
    start, end = _strip(text, start, end)
    if end - start < 2 or not re.search(r"[A-Za-z0-9]", text[start:end]):
        return None
    return Unit(start, end, kind, text[start:end])


def _traceback_end(text: str, lines: list[tuple[int, int]], i: int, stop: int) -> int:
    """Index of the last line of the traceback starting at line ``i`` (the exception line, when found)."""
    j = i + 1
    while j < stop:
        line = text[lines[j][0] : lines[j][1]]
        if not line.strip():
            j += 1
            continue
        if line[:1].isspace() or line.startswith(
            ("File ", "During handling", "The above exception", "Traceback", "...")
        ):
            j += 1
            continue
        if _TRACE_END.match(line):
            return j
        return j - 1
    return stop - 1


def _code_block(text: str, lines: list[tuple[int, int]], lo: int, hi: int, lang: str) -> list[Unit]:
    units: list[Unit] = []
    body = [text[s:e] for s, e in lines[lo:hi]]
    repl = any(_REPL.match(b) or _IPY_IN.match(b) for b in body)
    shell = lang in {"sh", "bash", "shell", "console", "shell-session", "bat", "cmd", "powershell"} or (
        not repl and any(re.match(r"^\s*\$ ", b) for b in body)
    )
    diff = lang in {"diff", "patch"} or sum(1 for b in body if re.match(r"^(\+|-|@@)", b)) >= max(2, len(body) // 2)
    output_lang = lang in {"", "text", "txt", "none", "pytb", "traceback", "console", "output", "log"}
    trace = [k for k, b in enumerate(body, start=lo) if _TRACEBACK_LINE.search(b)]
    trace_lo, trace_hi = (trace[0], trace[-1]) if len(trace) >= 2 and not diff else (hi, hi)
    i = lo
    while i < hi:
        s, e = lines[i]
        line = text[s:e]
        if not line.strip():
            i += 1
            continue
        if _TRACE_START.match(line) or i == trace_lo:
            j = max(_traceback_end(text, lines, i, hi), trace_hi if i <= trace_lo else i)
            unit = _unit(text, s, lines[j][1], "traceback")
            if unit:
                units.append(unit)
            i = j + 1
            continue
        if repl and (_REPL.match(line) or _IPY_IN.match(line)):
            j = i + 1
            while j < hi and (_REPL.match(text[lines[j][0] : lines[j][1]])
                              or _IPY_CONT.match(text[lines[j][0] : lines[j][1]])):
                j += 1
            k = j
            while k < hi and not (_REPL.match(text[lines[k][0] : lines[k][1]])
                                  or _IPY_IN.match(text[lines[k][0] : lines[k][1]])):
                k += 1
            has_output = any(text[a:b].strip() for a, b in lines[j:k])
            unit = _unit(text, s, lines[k - 1][1], "exchange" if has_output else "code")
            if unit:
                units.append(unit)
            i = k
            continue
        if diff:
            kind = "diff"
        elif repl:
            kind = "output"
        elif shell:
            kind = "code" if _SHELL.match(line) else "output"
        elif _CODEISH.search(line) or (not output_lang and not _looks_like_output(line)):
            kind = "code"
        else:
            kind = "output"
        unit = _unit(text, s, e, kind)
        if unit:
            units.append(unit)
        i += 1
    return units


def _looks_like_output(line: str) -> bool:
    stripped = line.strip()
    return bool(
        re.match(r"^[<\[(]?[-+]?\d", stripped)  # numbers, arrays, tuples
        or re.match(r"^<[^>]+>", stripped)  # reprs and markup
        or re.match(r"^(True|False|None|nan|inf)\b", stripped)
        or re.match(r"^['\"].*['\"]$", stripped)
    )


def _prose_units(text: str, start: int, end: int, kind: str = "prose") -> list[Unit]:
    units = []
    offset = start
    for piece in _SENTENCE_END.split(text[start:end]):
        if not piece:
            continue
        idx = text.index(piece, offset)
        unit = _unit(text, idx, idx + len(piece), kind)
        offset = idx + len(piece)
        if unit:
            units.append(unit)
    return units


def _comment_links(text: str, start: int, end: int) -> list[Unit]:
    """One ``comment`` unit per URL inside an HTML template comment (the rest of a comment is skipped)."""
    units = []
    for m in _URL.finditer(text, start, end):
        link_end = m.end()
        while link_end > m.start() and text[link_end - 1] in ".,;:)>\"'":
            link_end -= 1
        unit = _unit(text, m.start(), link_end, "comment")
        if unit:
            units.append(unit)
    return units


def _hard_break(prev: str, nxt: str) -> bool:
    prev, nxt = prev.rstrip(), nxt.strip()
    return (
        prev.endswith((".", "!", "?", ":", ";"))
        or len(prev) < 45
        or bool(_LIST_ITEM.match(nxt))
        or bool(_HEADING.match(nxt))
        or bool(_VERSION_LINE.search(nxt))
    )


def _as_block(units: list[Unit], counter: list[int]) -> list[Unit]:
    for unit in units:
        unit.block = counter[0]
    counter[0] += 1
    return units


def segment(text: str) -> list[Unit]:
    """Cut ``text`` into classification units (character offsets into ``text`` itself)."""
    lines = _lines(text)
    units: list[Unit] = []
    para: list[tuple[int, int]] = []
    first_content = True

    def flush() -> None:
        nonlocal first_content
        if not para:
            return
        group_start = para[0][0]
        for k, (s, e) in enumerate(para):
            last = k == len(para) - 1
            if last or _hard_break(text[s:e], text[para[k + 1][0] : para[k + 1][1]]):
                kind = "title" if first_content else "prose"
                units.extend(_prose_units(text, group_start, e, kind))
                first_content = False
                if not last:
                    group_start = para[k + 1][0]
        para.clear()

    i = 0
    in_comment = False
    blocks = [0]
    while i < len(lines):
        s, e = lines[i]
        line = text[s:e]
        if in_comment:
            units.extend(_comment_links(text, s, e))
            if _COMMENT_CLOSE.search(line):
                in_comment = False
            i += 1
            continue
        if _COMMENT_OPEN.search(line) and not _COMMENT_CLOSE.search(line[line.find("<!--") :]):
            flush()
            before = line[: line.find("<!--")]
            if before.strip():
                units.extend(_prose_units(text, s, s + len(before)))
            units.extend(_comment_links(text, s + len(before), e))
            in_comment = True
            i += 1
            continue
        if _COMMENT_OPEN.search(line) and line.strip().startswith("<!--") and line.strip().endswith("-->"):
            flush()
            units.extend(_comment_links(text, s, e))
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            flush()
            lang = line.strip()[3:].strip().lower()
            j = i + 1
            while j < len(lines) and not _FENCE.match(text[lines[j][0] : lines[j][1]]):
                j += 1
            units.extend(_as_block(_code_block(text, lines, i + 1, j, lang), blocks))
            first_content = False
            i = j + 1
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        if _TRACE_START.match(line):
            flush()
            j = _traceback_end(text, lines, i, len(lines))
            unit = _unit(text, s, lines[j][1], "traceback")
            if unit:
                units.extend(_as_block([unit], blocks))
            i = j + 1
            continue
        if _REPL.match(line) or (line.startswith(("    ", "\t")) and not para):
            flush()
            j = i
            block_end = i
            while j < len(lines) and (text[lines[j][0] : lines[j][1]].startswith(("    ", "\t", ">>>", "...")) or
                                      (_REPL.match(line) and text[lines[j][0] : lines[j][1]].strip())):
                block_end = j
                j += 1
            lang = "python" if _REPL.match(line) else ""
            units.extend(_as_block(_code_block(text, lines, i, block_end + 1, lang), blocks))
            first_content = False
            i = block_end + 1
            continue
        if _HEADING.match(line) and not _VERSION_LINE.search(line):
            flush()
            unit = _unit(text, s, e, "heading")
            if unit:
                units.append(unit)
            first_content = False
            i += 1
            continue
        para.append((s, e))
        i += 1
    flush()
    return units


# ---- rules ----------------------------------------------------------------------------------------------------------

_URL = re.compile(r"https?://\S+|\bwww\.\S+")
_REF = re.compile(
    r"(?<![\w&/])#\d{2,}\b|\bgh-\d+\b|\b[\w.-]+/[\w.-]+#\d+\b"
    r"|\b(?:PR|pull request|issue|ticket|bpo|bug)\s*#?\s?\d{2,}\b"
    r"|\bcommit\s+[0-9a-f]{7,40}\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b|\b(?:PEP|RFC)\s?-?\d+\b"
    r"|\bstack\s?overflow\b|\bmailing list\b|\bdocumentation\b|\bdocs\b|\bwikipedia\b|\bupstream\b|\bchangelog\b"
    r"|\brelease notes\b|\bspecification\b|\bpull requests?\b|\bPRs?\b",
    re.I,
)
_PKG = (
    r"python|py|cpython|pypy|django|numpy|scipy|matplotlib|pandas|sympy|sphinx|pytest|pylint|astroid|astropy|xarray|"
    r"requests|flask|seaborn|scikit-learn|sklearn|docutils|jinja2?|werkzeug|setuptools|pip|cython|dask|postgres(?:ql)?|"
    r"mysql|sqlite3?|oracle|mariadb|node|gcc|clang|ipython|jupyter|conda|urllib3|pyerfa|erfa|netcdf4|h5py|zarr|"
    r"pint|cftime|bottleneck|numba|mpmath|psycopg2?|mysqlclient|pillow|freetype|qt|pyqt5?|tk|tcl|libpng|openssl|"
    r"version|ver|release|cuda|pyyaml|babel|pygments|tox|virtualenv|pluggy|attrs|hypothesis|isort|mypy|black|"
    r"sqlalchemy|redis|celery|gunicorn|uvicorn|nginx|firefox|chrome|safari|backend|macos|osx|windows|ubuntu|debian"
)
_VERSION = re.compile(
    rf"\b(?:{_PKG})\b[\s:=,v()-]{{0,4}}\d+(?:\.\d+)+|\b(?:{_PKG})\s*(?:==|>=|<=|~=)\s*\d|\b[\w.-]+==\d+(?:\.\w+)*"
    r"|\b(?:windows|win32|win64|win10|windows\s?\d+|mac\s?os(?:\s?x)?|os\s?x|darwin|linux|ubuntu|debian|fedora|centos|"
    r"red\s?hat|rhel|arch linux|manjaro|wsl2?|freebsd|openbsd|solaris|android|ios)\b"
    r"|\b(?:x86_64|amd64|arm64|aarch64|i386|i686|64-?bit|32-?bit|apple silicon|m1|m2)\b"
    r"|\[(?:GCC|Clang|MSC)\b|\bv?\d+\.\d+\.\d+(?:[.-]?(?:rc|dev|post|a|b)\d*)?\b"
    r"|\b(?:on|in|with|using|against|from|of|at)\s+(?:the\s+)?(?:master|main|dev|development|current|latest|stable)"
    r"(?:\s+(?:branch|version|release))?\b|\bversions?\s+\d|\b(?:master|main)\s+branch\b|\bgit\s+(?:master|main|HEAD)\b"
    r"|\bpy\d{2,3}\b|\bpython\s?[23]\b|\bsys\.version|\bplatform\b|\bbackend\b|\bsettings\.py\b|\bDATABASES\b"
    r"|\b(?:postgres(?:ql)?|mysql|sqlite3?|oracle|mariadb)\b|\bcuda\b|\bgpu\b|\blocale\b|\bUSE_\w+\b|\bLANG(?:UAGE_CODE)?\b",
    re.I,
)
_VERSION_LINE = re.compile(r"^\s*[-*]?\s*[\w .-]{1,30}\s*(?::|==|\s)\s*v?\d+(?:\.\d+)+\b.{0,40}$")
_ERROR_LINE = re.compile(r"\b[\w.]*(?:Error|Exception|Warning)\b|\bTraceback\b|\bsegfault|\bcore dumped\b")
_ERROR = re.compile(
    r"\b(?:errors?|fail(?:s|ed|ing|ure|ures)?|crash(?:es|ed|ing)?|broken|breaks?|bug(?:gy)?|wrong(?:ly)?|"
    r"incorrect(?:ly)?|invalid|unexpected(?:ly)?|raises?|raised|raising|throws?|thrown|hangs?|ignored|"
    r"doesn't|does not|didn't|did not|don't|do not|cannot|can't|can not|isn't|is not|aren't|are not|won't|will not|"
    r"not work(?:ing)?|no longer|regression|inconsisten\w*|mismatch\w*|leaks?|infinite|nan|misleading|confusing|"
    r"unable|instead|problem|issue|strange|weird|odd|surprising\w*|results? in|returns|gives?|produces?|outputs?|"
    r"shows?|displays?|prints?|get|gets|got|only|never|lost|loses?|dropped|drops|missing|overflow|truncat\w+|"
    r"deprecat\w+|warns?|warnings?|slow|timeout|fails to)\b",
    re.I,
)
_EXPECTED = re.compile(
    r"\b(?:expect(?:ed|s|ing|ation)?|should(?:n't| not)?|would (?:expect|like|have|be|prefer|make sense)|"
    r"desired?|correct(?:ly)?|supposed to|ought to|intended|must(?:n't| not)?|it would be (?:nice|better|great|good)|"
    r"I'd like|we'd like|I would like|want(?:ed)? (?:it|the|to|a)|proper(?:ly)?|rather than|ideally|"
    r"instead(?: of)?|needs? to|ought|consistent(?:ly)?|same (?:as|result|behaviou?r)|like (?:it|in) |"
    r"works? (?:as expected|fine|correctly|properly)|as expected|be able to|allow(?:s|ed)?|support(?:s|ed)?)\b",
    re.I,
)
_PATH = re.compile(r"\b[\w.-]+(?:/[\w.-]+)+\.(?:py|pyx|pxd|c|h|cpp|js|cfg|toml|ini|txt|rst|html|yml|yaml|json)\b"
                   r"|\b[\w-]+\.(?:py|pyx)\b")
_IMPL = re.compile(
    r"\b(?:fix(?:es|ed|ing)?|patch(?:es|ed)?|solution|workaround|propos\w+|suggest\w*|"
    r"could (?:be (?:changed|fixed|solved|done|added|replaced)|use|add|change|just|simply)|"
    r"(?:we|you|one|it) (?:could|might|may) |I think|I believe|I suspect|I guess|my guess|"
    r"the (?:problem|issue|cause|bug|culprit|reason) (?:is|seems|lies|here|comes)|caused by|root cause|"
    r"in the code|line \d+|refactor\w*|overrid\w+|would be to|should be (?:changed|replaced|moved|removed|added)|"
    r"instead of (?:using|calling|checking)|(?:submit|open|make|create) a (?:PR|pull request)|happy to|"
    r"I'?ll (?:submit|open|send|make)|I can (?:submit|open|make)|implement\w*|code path|is called|gets called|"
    r"(?:this|the|that) (?:line|check|condition|call|code)\b)",
    re.I,
)
_REPRO_PROSE = re.compile(
    r"\b(?:reproduc\w+|repro|steps?|minimal|mcve|"
    r"(?:following|this|the|an?) (?:code|snippet|example|script|command|test)|"
    r"(?:when|if|after|once|whenever|only) (?:I|you|we|using|calling|the|a|an|there|one|it|running|passing)|"
    r"run(?:ning)?|execut\w+|create|creating|call(?:ing)?|with the following|consider|given|for example|e\.g\.|"
    r"example|test case|set ?up|configure[sd]?|defin(?:e|ing)|instantiat\w+|passing|try(?:ing)? to|tried|"
    r"install\w*|import\w*|happens (?:when|if|with|for|only)|occurs (?:when|if|with)|triggers?)\b",
    re.I,
)
_ASSERT = re.compile(r"^\s*(?:>>>\s*)?(?:assert\b|self\.assert\w*\(|assert_\w+\(|np\.testing\.\w+\()")
_COMMENT_EXPECTED = re.compile(r"#.*\b(?:expect\w*|should|correct|desired|want(?:ed)?|instead|ok)\b", re.I)
_COMMENT_ERROR = re.compile(
    r"#.*\b(?:error|fails?|wrong|incorrect|bug|raises?|broken|crash\w*|but|instead|not)\b", re.I
)


def _rule_tags(unit: Unit) -> tuple[set[Category], set[Category]]:
    """(strong, weak) categories of a prose unit from rules; weak ones need some embedding support."""
    t = unit.text
    strong: set[Category] = set()
    weak: set[Category] = set()
    if _URL.search(t) or _REF.search(t):
        strong.add(L)
    if _VERSION.search(t) or _VERSION_LINE.match(t):
        strong.add(V)
    if _ERROR_LINE.search(t):
        strong.add(E)
    if _ERROR.search(t):
        weak.add(E)
    if _EXPECTED.search(t):
        weak.add(X)
    if _PATH.search(t):
        strong.add(I)
    if _IMPL.search(t):
        weak.add(I)
    if _REPRO_PROSE.search(t):
        weak.add(R)
    return strong, weak


# ---- embeddings ----------------------------------------------------------------------------------------------------

_WRITTEN_PROTOTYPES: dict[Category, tuple[str, ...]] = {
    E: (
        "Calling the function raises a ValueError with a confusing message.",
        "The result is wrong: it returns an empty list although the input has three items.",
        "The program crashes with a segmentation fault when the file is large.",
        "The option seems to be ignored and the output is unchanged.",
        "Since the last release this no longer works and fails with a TypeError.",
        "The generated output contains duplicated entries.",
        "It hangs forever and never returns.",
        "A spurious warning is emitted every time the object is created.",
        "The plot is drawn at the wrong position.",
        "This silently produces incorrect results for negative numbers.",
    ),
    R: (
        "Run the following script to reproduce the problem.",
        "Steps to reproduce: create a new project, add the model and run the migration.",
        "It only happens when the input contains a unicode character.",
        "Here is a minimal example that triggers the bug.",
        "When I call the method with an empty string, the error appears.",
        "This happens if the setting is enabled and the cache is empty.",
        "Create a model with a foreign key to itself and query it with a filter.",
        "Using a subclass of the class as the argument triggers it.",
    ),
    X: (
        "I would expect the function to return the same value for both inputs.",
        "The correct output should be 42.",
        "It should raise a clear error message instead.",
        "Expected behavior: the file is written with the given encoding.",
        "The method ought to accept None as a valid value.",
        "Ideally the two code paths would produce identical results.",
        "It would be nice if the option were respected by every writer.",
        "The warning should not be shown in this case.",
    ),
    I: (
        "The problem seems to be in the parse method, which ignores the flag.",
        "A possible fix would be to check the type before converting it.",
        "I think the fix is to move the call after the validation step.",
        "The culprit is this line in utils.py, where the default is overwritten.",
        "We could add a keyword argument to make this behaviour configurable.",
        "The function should use the incremental decoder instead of decoding each chunk.",
        "Overriding the method in the subclass would solve it.",
        "I am happy to open a pull request with this change.",
        "This is caused by the cache being keyed on the name only.",
    ),
    L: (
        "See the documentation at the project website for details.",
        "This looks related to issue 1234 and the discussion in that pull request.",
        "The behaviour changed in commit abc1234.",
        "According to the specification this field is optional.",
        "This was originally reported on Stack Overflow.",
        "The upstream library documents this parameter differently.",
    ),
    V: (
        "Python 3.11 on macOS 14 with numpy 1.26.",
        "I am using Django 4.2 with PostgreSQL 15 on Ubuntu 22.04.",
        "Operating system: Windows 10, 64-bit.",
        "This happens on the main branch and in the latest release.",
        "Installed versions: matplotlib 3.8.0, backend Agg.",
        "Tested with the development version.",
    ),
}
_NONE_PROTOTYPES = (
    "Thanks for this great library!",
    "Please let me know if you need more information.",
    "Any help would be appreciated.",
    "Description",
    "Hi all,",
    "Thank you for your time.",
)


@lru_cache(maxsize=1)
def _prototype_texts() -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Prototype sentences and their category index (``len(ORDER)`` for "no category")."""
    texts: list[str] = []
    labels: list[int] = []
    for cat, sentences in _WRITTEN_PROTOTYPES.items():
        texts.extend(sentences)
        labels.extend([ORDER.index(cat)] * len(sentences))
    if SAMPLES.is_file():
        from tasks.domains.swe.samples import load_samples

        for issue in load_samples(SAMPLES):
            for span in issue.spans or []:
                for unit in segment(span.text):
                    if unit.kind in ("prose", "title") and len(unit.text) >= 20:
                        texts.append(unit.text)
                        labels.append(ORDER.index(span.category))
    texts.extend(_NONE_PROTOTYPES)
    labels.extend([len(ORDER)] * len(_NONE_PROTOTYPES))
    return tuple(texts), tuple(labels)


def _similarities(unit_vecs: np.ndarray) -> np.ndarray:
    """(n_units, 7): per category the mean of the top-2 prototype cosines (column 6 = "no category")."""
    from tasks.llm.embeddings import encode

    texts, labels = _prototype_texts()
    protos = encode(list(texts))
    sims = unit_vecs @ protos.T
    lab = np.asarray(labels)
    out = np.zeros((len(unit_vecs), len(ORDER) + 1), dtype=np.float32)
    for k in range(len(ORDER) + 1):
        cols = sims[:, lab == k]
        if cols.shape[1] == 0:
            continue
        top = np.sort(cols, axis=1)[:, -2:]
        out[:, k] = top.mean(axis=1)
    return out


# ---- classification -------------------------------------------------------------------------------------------------

_SIM_WEAK = {E: 0.15, R: 0.15, X: 0.10, I: 0.22, L: 0.25, V: 0.30}
"""Cosine a weak rule hit needs to be kept."""
_SIM_ALONE = {E: 0.42, R: 0.45, X: 0.42, I: 0.45, L: 0.50, V: 0.50}
"""Cosine that tags a unit without any rule hit."""

_SECTION_CUES: tuple[tuple[re.Pattern, Category | None], ...] = (
    (re.compile(r"expect|desired|should|what did you expect|correct (behaviou?r|output|result)", re.I), X),
    (re.compile(r"reproduc|steps|example|mcve|mvce|minimal|code sample|test case|how to|command used|models?$",
                re.I), R),
    (re.compile(r"actual|traceback|error|log output|what happened|bug summary|describe the bug|bug description|"
                r"problem|bug report|pylint output|^output$|current behaviou?r|^result", re.I), E),
    (re.compile(r"version|environment|system|platform|operating system|^os\b|backend|installation|install|"
                r"configuration|dependenc|extensions|extra tools|conda|python|jupyter|setup", re.I), V),
    (re.compile(r"fix|solution|proposal|suggest|implementation|patch|workaround|resolution|alternative", re.I), I),
    (re.compile(r"reference|related|links|see also|resources", re.I), L),
)
_LEAD_CUES: tuple[tuple[re.Pattern, Category], ...] = (
    (re.compile(r"\b(expect\w*|should|instead|correct|desired|want(ed)?|works? (fine|as expected|correctly)|"
                r"work(s|ed)? fine|as expected)\b", re.I), X),
    (re.compile(r"\b(fix|patch|diff|change[sd]?|suggest\w*|solution|propos\w+|something like|replac\w+|"
                r"modif\w+|workaround|implement\w*)\b", re.I), I),
    (re.compile(r"\b(error|traceback|exception|output|result|fails?|failure|crash\w*|get|got|gives?|shows?|"
                r"prints?|returns?|produces?|raises?|see|following)\b", re.I), E),
    (re.compile(r"\b(version|environment|installed|pip (freeze|list)|platform|show_versions)\b", re.I), V),
)
_BOILERPLATE = re.compile(
    r"^\s*(?:[-*]\s*)?\[[ xX]\]|^\(last modified by [^)]*\)$|^thanks?\b|^thank you|^hi\b|^hello\b|^hey\b"
    r"|^please\b.*\b(search|check|provide|describe|fill|include|paste|run)\b|^if applicable",
    re.I,
)
_TRACEBACK_LINE = re.compile(
    r"^\s*File \"|-{3,}>|^\s*\d+\s{2,}\S|\.py in [<\w]|\.pyx? ?: ?\d+|\.py\", line \d+|^E\s{2,}|^>\s{2,}\S"
    r"|^\s*\^+\s*$|^-{10,}\s*$|^\s*[\w.]*(?:Error|Exception)(?::|$)|<ipython-input|site-packages/"
)


def _embed_text(unit: Unit) -> str:
    return " ".join(unit.text.split())[:200]


def _heading_category(text: str) -> Category | None:
    label = text.strip().strip("#*_:= ").strip()
    for pattern, cat in _SECTION_CUES:
        if pattern.search(label):
            return cat
    return None


def _lead_category(text: str) -> Category | None:
    """The category a prose line ending in a colon announces for the block that follows it."""
    if not text.rstrip().endswith((":", ":\n")) and not re.search(r"\b(following|below)\b", text, re.I):
        return None
    for pattern, cat in _LEAD_CUES:
        if pattern.search(text):
            return cat
    if re.search(r"\b(reproduc\w*|example|code|snippet|run|script|steps?|consider|e\.g\.|like this)\b", text, re.I):
        return R
    return None


def _block_tags(unit: Unit, context: Category | None) -> set[Category]:
    """Categories of one line (or traceback) of a code block, given the category the block was announced with."""
    t = unit.text
    if unit.kind == "traceback" or (unit.kind != "diff" and _TRACEBACK_LINE.search(t) and context != I):
        return {E}
    if unit.kind == "diff":
        return {I}
    if _VERSION_LINE.match(t) or (context == V and unit.kind == "output"):
        return {V}
    cats: set[Category] = set()
    if context == V and _VERSION.search(t):
        cats.add(V)
    if unit.kind == "output":
        cats.add(X if context == X else E)
        return cats
    if unit.kind == "exchange":
        cats.update({R, X if context == X or _COMMENT_EXPECTED.search(t) else E})
        return cats
    if context == I:
        cats.add(I)
        return cats
    cats.add(R)
    if _ASSERT.match(t) or _COMMENT_EXPECTED.search(t) or context == X:
        cats.add(X)
    if _COMMENT_ERROR.search(t) or _ERROR_LINE.search(t):
        cats.add(E)
    return cats


def _prose_tags(unit: Unit, row: np.ndarray, section: Category | None) -> set[Category]:
    strong, weak = _rule_tags(unit)
    cats = set(strong)
    for k, cat in enumerate(ORDER):
        s = float(row[k])
        if (cat in weak and s >= _SIM_WEAK[cat]) or s >= _SIM_ALONE[cat]:
            cats.add(cat)
    if section is not None and section not in (I, L):
        cats.add(section)
    elif section in (I, L) and (cat_weak := section) in weak:
        cats.add(cat_weak)
    if unit.kind == "title":
        cats.add(E)
    return cats


def _classify(units: list[Unit], sims: np.ndarray) -> None:
    section: Category | None = None
    lead: Category | None = None
    lead_block = -1
    for unit, row in zip(units, sims):
        unit.section = section
        if unit.kind == "heading":
            section = _heading_category(unit.text)
            unit.cats = {section} if section else set()
            lead, lead_block = None, -1
            continue
        if unit.kind == "comment":
            unit.cats = {L}
            continue
        if _BOILERPLATE.search(unit.text):
            unit.cats = set()
            continue
        if unit.block >= 0:
            if lead is not None and lead_block == -1:
                lead_block = unit.block
            context = lead if lead is not None and unit.block == lead_block else section
            unit.context = context
            unit.cats = _block_tags(unit, context)
            if _URL.search(unit.text):
                unit.cats.add(L)
            continue
        unit.cats = _prose_tags(unit, row, section)
        lead, lead_block = _lead_category(unit.text), -1


def _only_fences(gap: str) -> bool:
    """True when nothing but whitespace and code-fence delimiter lines separates two units."""
    return all(not line.strip() or _FENCE.match(line) for line in gap.split("\n"))


def _merge(text: str, units: list[Unit], cats: Sequence[set[Category]]) -> list[TaggedSpan]:
    spans: list[tuple[int, int, Category]] = []
    for cat in ORDER:
        open_span: tuple[int, int] | None = None
        for unit, unit_cats in zip(units, cats):
            if cat in unit_cats:
                if open_span and _only_fences(text[open_span[1] : unit.start]):
                    open_span = (open_span[0], unit.end)
                else:
                    if open_span:
                        spans.append((*open_span, cat))
                    open_span = (unit.start, unit.end)
            elif open_span:
                spans.append((*open_span, cat))
                open_span = None
        if open_span:
            spans.append((*open_span, cat))
    spans.sort(key=lambda s: (s[0], ORDER.index(s[2])))
    return [TaggedSpan(category=c, text=text[s:e]) for s, e, c in spans]


# ---- learned unit scorer --------------------------------------------------------------------------------------------

WEIGHTS = Path(__file__).with_name("annotator_weights.npz")
FEATURE_VERSION = 3
_KINDS = ("prose", "title", "heading", "code", "output", "exchange", "traceback", "diff", "comment")
_FLAGS: tuple[re.Pattern, ...] = (
    _BOILERPLATE, _TRACEBACK_LINE, _ASSERT, _URL, _REF, _VERSION_LINE, _VERSION, _PATH, _COMMENT_EXPECTED,
    _COMMENT_ERROR, _CODEISH, _ERROR_LINE, _SHELL, re.compile(r":\s*$"), re.compile(r"`[^`]+`"),
)


def _cat_vector(cats: set[Category]) -> list[float]:
    return [1.0 if c in cats else 0.0 for c in ORDER]


def _one_hot(cat: Category | None) -> list[float]:
    return [1.0 if cat == c else 0.0 for c in ORDER] + [1.0 if cat is None else 0.0]


def unit_features(units: list[Unit], sims: np.ndarray, vecs: np.ndarray) -> np.ndarray:
    """(n_units, n_features) float32: hand features of each classified unit, its prototype cosines, its embedding.

    ``units`` must have gone through the rules (``unit.cats``, ``section`` and ``context`` set); ``vecs`` holds the
    MiniLM vector of prose and title units (zeros elsewhere).
    """
    n = len(units)
    rule = np.array([_cat_vector(u.cats) for u in units], dtype=np.float32).reshape(n, len(ORDER))
    prev = np.vstack([np.zeros((1, len(ORDER)), np.float32), rule[:-1]]) if n else rule
    nxt = np.vstack([rule[1:], np.zeros((1, len(ORDER)), np.float32)]) if n else rule
    block_any = rule.copy()
    for b in {u.block for u in units if u.block >= 0}:
        members = [k for k, u in enumerate(units) if u.block == b]
        block_any[members] = rule[members].max(axis=0)
    total = max(units[-1].end, 1) if units else 1
    rows = []
    for k, unit in enumerate(units):
        strong, weak = _rule_tags(unit)
        lead = _lead_category(unit.text) if unit.block < 0 else None
        rows.append(
            [1.0 if unit.kind == kind else 0.0 for kind in _KINDS]
            + _one_hot(unit.section)
            + _one_hot(unit.context)
            + _one_hot(lead)
            + _cat_vector(strong)
            + _cat_vector(weak)
            + [1.0 if pattern.search(unit.text) else 0.0 for pattern in _FLAGS]
            + [k / max(n - 1, 1), 1.0 if k == 0 else 0.0, 1.0 if k < 3 else 0.0, unit.start / total,
               float(np.log1p(len(unit.text))) / 8.0, float(np.log1p(n)) / 6.0, 1.0 if unit.block < 0 else 0.0]
        )
    hand = np.asarray(rows, dtype=np.float32).reshape(n, -1)
    kinds = hand[:, : len(_KINDS)]
    sims = sims.astype(np.float32)
    around = [np.vstack([np.zeros((1, a.shape[1]), np.float32), a[:-1]]) if n else a for a in (kinds, sims)]
    around += [np.vstack([a[1:], np.zeros((1, a.shape[1]), np.float32)]) if n else a for a in (kinds, sims)]
    return np.hstack([hand, rule, prev, nxt, block_any, *around, sims, vecs.astype(np.float32)])


TEXT_BITS = 16
"""The unit text model hashes tokens into ``2 ** TEXT_BITS`` buckets (CRC-32, the same on every run and machine)."""
TEXT_WEIGHT = 0.5
"""A unit's score is ``(1 - TEXT_WEIGHT) * trees + TEXT_WEIGHT * text model`` (fixed, not tuned)."""
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class HashedText:
    """Hashed bag of tokens of each unit, as CSR arrays: row ``k`` is ``indices/values[indptr[k]:indptr[k + 1]]``."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1


def _unit_tokens(units: list[Unit], k: int) -> list[str]:
    """Kind, section, words, word bigrams and character 3- and 4-grams of each word of unit k (lower-cased), and the
    kind and words of its neighbours (prefixed)."""
    unit = units[k]
    text = unit.text[:2000].lower()
    words = _WORD.findall(text)
    tokens = [f"k:{unit.kind}", f"s:{unit.section.key if unit.section else '-'}", *words]
    tokens += [f"{a} {b}" for a, b in pairwise(words)]
    for word in text.split():
        padded = f" {word} "
        for n in (3, 4):
            tokens += [f"c{padded[i : i + n]}" for i in range(len(padded) - n + 1)]
    for prefix, j in (("p:", k - 1), ("n:", k + 1)):
        if 0 <= j < len(units):
            tokens += [prefix + w for w in _WORD.findall(units[j].text[:500].lower())] + [f"k{prefix}{units[j].kind}"]
    return tokens


def hashed_text(units: list[Unit]) -> HashedText:
    """Sublinear term counts (1 + log tf) of :func:`_unit_tokens`, hashed into ``2 ** TEXT_BITS`` buckets, each row
    L2-normalised."""
    mask = (1 << TEXT_BITS) - 1
    indptr, indices, values = [0], [], []
    for k in range(len(units)):
        counts: dict[int, int] = {}
        for token in _unit_tokens(units, k):
            h = zlib.crc32(token.encode("utf-8")) & mask
            counts[h] = counts.get(h, 0) + 1
        idx = np.fromiter(counts.keys(), dtype=np.int32, count=len(counts))
        val = 1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))
        norm = float(np.linalg.norm(val))
        indices.append(idx)
        values.append((val / norm if norm else val).astype(np.float32))
        indptr.append(indptr[-1] + len(counts))
    cat = lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)  # noqa: E731
    return HashedText(np.asarray(indptr, dtype=np.int64), cat(indices, np.int32), cat(values, np.float32))


def unit_tags(scores: np.ndarray, threshold: np.ndarray, relative: np.ndarray) -> np.ndarray:
    """(n_units, n_categories) bool: a unit is tagged with c when its score reaches c's threshold and
    ``relative[c]`` times the issue's best score for c."""
    scores = np.asarray(scores)
    if not len(scores):
        return np.zeros(scores.shape, dtype=bool)
    return (scores >= threshold[None, :]) & (scores >= relative[None, :] * scores.max(axis=0, keepdims=True))


@dataclass(frozen=True)
class UnitScorer:
    """Per category a gradient-boosted tree ensemble over unit features and a logistic regression over the unit's hashed
    text (their even blend is the unit score), and the rules that turn scores into spans and presence.

    The trees are stored flat (numbers only): node ``k`` sends a row to ``left[k]`` when ``feature_value <=
    threshold[k]`` and to ``right[k]`` otherwise; a leaf has ``feature[k] == -1`` and adds ``value[k]`` to the raw
    score of its tree's category (``tree_category``); ``roots`` are the trees' root nodes. The probability is the
    sigmoid of the summed raw score.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    tree_category: np.ndarray
    text_coef: np.ndarray
    """(6, 2 ** TEXT_BITS) per category the logistic-regression weights of the hashed unit text (``hashed_text``)."""
    text_bias: np.ndarray
    unit_threshold: np.ndarray
    """A unit is tagged with a category when its score reaches this (before filling, see :func:`fill_groups`)..."""
    unit_relative: np.ndarray
    """... and this share of the issue's best score for the category (:func:`unit_tags`)."""
    presence_coef: np.ndarray
    """(6, n_presence_features): per category a logistic regression over :func:`presence_features`."""
    presence_bias: np.ndarray
    presence_threshold: np.ndarray
    """A category is present when its presence probability reaches this (0: always present)."""
    presence_from_spans: np.ndarray
    """(6,) 1 where presence is simply "has a tagged unit" (chosen on the training folds), 0 for the regression."""

    def scores(self, features: np.ndarray, text: HashedText | None = None) -> np.ndarray:
        """(n_units, 6) scores: the trees' probabilities, blended with the text model's when ``text`` is given."""
        trees = self.tree_scores(features)
        if text is None:
            return trees
        return ((1.0 - TEXT_WEIGHT) * trees + TEXT_WEIGHT * self.text_scores(text)).astype(np.float32)

    def text_scores(self, text: HashedText) -> np.ndarray:
        """(n_units, 6) probabilities of the hashed-text logistic regression."""
        raw = np.zeros((text.rows, len(ORDER)), dtype=np.float64)
        if len(text.indices):
            contrib = self.text_coef[:, text.indices].T.astype(np.float64) * text.values[:, None]
            nonempty = np.diff(text.indptr) > 0  # reduceat needs non-empty segments
            raw[nonempty] = np.add.reduceat(contrib, text.indptr[:-1][nonempty], axis=0)
        return _sigmoid(raw + self.text_bias[None, :])

    def tree_scores(self, features: np.ndarray) -> np.ndarray:
        """(n_units, 6) probabilities of the tree ensembles."""
        x = np.asarray(features, dtype=np.float64)
        n_cats = len(ORDER)
        raw = np.zeros((len(x), n_cats), dtype=np.float64)
        if not len(x) or not len(self.roots):
            return _sigmoid(raw)
        feature = self.feature.astype(np.int64)
        leaf = feature < 0
        safe_feature = np.where(leaf, 0, feature)
        onehot = np.zeros((len(self.roots), n_cats), dtype=np.float64)
        onehot[np.arange(len(self.roots)), self.tree_category.astype(np.int64)] = 1.0
        for lo in range(0, len(x), 512):
            rows = x[lo : lo + 512]
            node = np.broadcast_to(self.roots.astype(np.int64), (len(rows), len(self.roots))).copy()
            r = np.arange(len(rows))[:, None]
            while True:
                inner = ~leaf[node]
                if not inner.any():
                    break
                go_left = rows[r, safe_feature[node]] <= self.threshold[node]
                node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
            raw[lo : lo + 512] = self.value[node] @ onehot
        return _sigmoid(raw)

    def presence(self, units: list[Unit], scores: np.ndarray) -> np.ndarray:
        """(6,) presence probabilities of one issue (the regression's, whatever ``presence_from_spans`` says)."""
        feats = presence_features(units, scores, self.unit_threshold)
        return _sigmoid(np.sum(feats * self.presence_coef, axis=1) + self.presence_bias)

    _FIELDS = ("feature", "threshold", "left", "right", "value", "roots", "tree_category", "text_coef", "text_bias",
               "unit_threshold", "unit_relative", "presence_coef", "presence_bias", "presence_threshold",
               "presence_from_spans")
    _INTS = ("feature", "left", "right", "roots", "tree_category", "presence_from_spans")

    def save(self, path: Path) -> None:
        """Write the weights atomically (numbers only)."""
        tmp = path.with_name(path.name + ".tmp.npz")
        arrays = {k: getattr(self, k) for k in self._FIELDS}
        arrays["text_coef"] = np.asarray(self.text_coef, dtype=np.float16)  # halves the file; scores move < 1e-3
        np.savez_compressed(tmp, feature_version=np.int64(FEATURE_VERSION), **arrays)
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> UnitScorer:
        from tasks.errors import InputError

        with np.load(path, allow_pickle=False) as data:
            if "feature_version" not in data.files or int(data["feature_version"]) != FEATURE_VERSION:
                found = int(data["feature_version"]) if "feature_version" in data.files else "unknown"
                raise InputError(path, f"weights are for feature version {found}, "
                                       f"this code builds version {FEATURE_VERSION}", field="feature_version")
            missing = [k for k in cls._FIELDS if k not in data.files]
            if missing:
                raise InputError(path, "weights file lacks arrays", field=missing[0])
            arrays = {k: np.asarray(data[k], dtype=np.int32 if k in cls._INTS else np.float64) for k in cls._FIELDS}
            arrays["text_coef"] = np.asarray(data["text_coef"], dtype=np.float32)
        return cls(**arrays)


def trees_from_lightgbm(dumps: Sequence[dict]) -> dict[str, np.ndarray]:
    """Flatten the ``Booster.dump_model()`` of each category (in ``ORDER``) into :class:`UnitScorer`'s tree arrays.

    Only numerical ``<=`` splits are supported (unit features are finite numbers, never missing)."""
    feature, threshold, left, right, value, roots, tree_category = [], [], [], [], [], [], []

    def add(node: dict) -> int:
        k = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(k)
        right.append(k)
        value.append(0.0)
        if "leaf_value" in node:
            value[k] = float(node["leaf_value"])
            return k
        if node.get("decision_type", "<=") != "<=":
            raise ValueError(f"unsupported split {node.get('decision_type')!r}")
        feature[k] = int(node["split_feature"])
        threshold[k] = float(node["threshold"])
        left[k] = add(node["left_child"])
        right[k] = add(node["right_child"])
        return k

    for j, dump in enumerate(dumps):
        for tree in dump["tree_info"]:
            roots.append(add(tree["tree_structure"]))
            tree_category.append(j)
    ints = lambda a: np.asarray(a, dtype=np.int32)  # noqa: E731
    return {"feature": ints(feature), "threshold": np.asarray(threshold, dtype=np.float64),
            "left": ints(left), "right": ints(right), "value": np.asarray(value, dtype=np.float64),
            "roots": ints(roots), "tree_category": ints(tree_category)}


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))).astype(np.float32)


def unit_groups(text: str, units: list[Unit]) -> np.ndarray:
    """Group index of each unit: consecutive units of one code block, or consecutive sentences of one prose paragraph
    (no blank line between them), share a group."""
    out = np.zeros(len(units), dtype=np.int64)
    gid = 0
    for k in range(1, len(units)):
        a, b = units[k - 1], units[k]
        same_block = b.block >= 0 and b.block == a.block
        same_paragraph = (a.block < 0 and b.block < 0 and b.kind == "prose" and a.kind in ("prose", "title")
                          and not re.search(r"\n[ \t]*\r?\n", text[a.end : b.start]))
        if not (same_block or same_paragraph):
            gid += 1
        out[k] = gid
    return out


def fill_groups(groups: np.ndarray, tagged: np.ndarray) -> np.ndarray:
    """Tag every unit between two tagged units of the same group, so that one region of a code block or paragraph
    becomes one span instead of fragments. ``tagged`` is (n_units,) or (n_units, n_categories) bool."""
    tagged = np.array(tagged, dtype=bool, copy=True)
    cols = tagged if tagged.ndim == 2 else tagged[:, None]
    for j in range(cols.shape[1]):
        idx = np.flatnonzero(cols[:, j])
        for a, b in pairwise(idx):
            if b > a + 1 and groups[a] == groups[b]:
                cols[a:b, j] = True
    return tagged


def presence_features(units: list[Unit], scores: np.ndarray, unit_threshold: np.ndarray) -> np.ndarray:
    """(6, 5) per category: best unit score, mean of the best three, rules say present, log count of rule units,
    log count of units over the unit threshold."""
    out = np.zeros((len(ORDER), 5), dtype=np.float32)
    for j, cat in enumerate(ORDER):
        col = np.sort(scores[:, j])[::-1] if len(units) else np.zeros(1, np.float32)
        rule_units = sum(1 for u in units if cat in u.cats)
        out[j] = (col[0], col[:3].mean(), 1.0 if rule_units else 0.0, np.log1p(rule_units),
                  np.log1p(float(np.sum(col >= unit_threshold[j]))))
    return out


@lru_cache(maxsize=4)
def _load_scorer(path: str, mtime_ns: int) -> UnitScorer:
    return UnitScorer.load(Path(path))


def default_scorer() -> UnitScorer | None:
    """The shipped learned scorer (``WEIGHTS``), or None when the file is absent (rules only)."""
    if WEIGHTS is None or not Path(WEIGHTS).is_file():
        return None
    return _load_scorer(str(WEIGHTS), Path(WEIGHTS).stat().st_mtime_ns)


# ---- annotation -----------------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """An issue cut into units, classified by the rules, with the learned scorer's features."""

    text: str
    units: list[Unit]
    features: np.ndarray
    hashed: HashedText


def prepare_batch(inputs: Sequence[AnnotateInput]) -> list[Prepared]:
    """Segment and rule-classify many issues with one embedding call for all their prose units."""
    from tasks.llm.embeddings import DIM, encode

    segmented = [segment(inp.text) for inp in inputs]
    prose = [u for units in segmented for u in units if u.kind in ("prose", "title")]
    texts = list(dict.fromkeys(_embed_text(u) for u in prose))
    index = {t: k for k, t in enumerate(texts)}
    vecs_all = encode(texts) if texts else np.zeros((0, DIM), dtype=np.float32)
    sims_all = _similarities(vecs_all) if texts else np.zeros((0, len(ORDER) + 1), dtype=np.float32)
    out = []
    for inp, units in zip(inputs, segmented):
        sims = np.zeros((len(units), len(ORDER) + 1), dtype=np.float32)
        vecs = np.zeros((len(units), DIM), dtype=np.float32)
        for k, unit in enumerate(units):
            if unit.kind in ("prose", "title"):
                sims[k] = sims_all[index[_embed_text(unit)]]
                vecs[k] = vecs_all[index[_embed_text(unit)]]
        _classify(units, sims)
        out.append(Prepared(inp.text, units, unit_features(units, sims, vecs), hashed_text(units)))
    return out


def rules_annotation(prepared: Prepared) -> Annotation:
    cats = [u.cats for u in prepared.units]
    present = [c for c in ORDER if any(c in u for u in cats)]
    return Annotation(spans=_merge(prepared.text, prepared.units, cats), present=present)


def scored_annotation(prepared: Prepared, scorer: UnitScorer, scores: np.ndarray | None = None) -> Annotation:
    """Units whose score passes the category's :func:`unit_tags` rule, filled within their paragraph or code block
    (:func:`fill_groups`) and merged into spans, for the categories judged present.

    Presence is "has a tagged unit" where ``presence_from_spans`` says so, else the issue-level regression (threshold 0:
    always present); a category called present with no tagged unit keeps its single best unit (present <=> has spans).
    """
    if not prepared.units:
        return Annotation()
    if scores is None:
        scores = scorer.scores(prepared.features, prepared.hashed)
    presence = scorer.presence(prepared.units, scores)
    tagged = fill_groups(unit_groups(prepared.text, prepared.units),
                         unit_tags(scores, scorer.unit_threshold, scorer.unit_relative))
    cats: list[set[Category]] = [set() for _ in prepared.units]
    present = []
    for j, cat in enumerate(ORDER):
        if scorer.presence_from_spans[j]:
            if not tagged[:, j].any():
                continue
        elif float(presence[j]) < float(scorer.presence_threshold[j]):
            continue
        present.append(cat)
        hits = np.flatnonzero(tagged[:, j])
        for k in hits if len(hits) else [int(np.argmax(scores[:, j]))]:
            cats[k].add(cat)
    return Annotation(spans=_merge(prepared.text, prepared.units, cats), present=present)


def annotate_prepared(prepared: Sequence[Prepared], scorer: UnitScorer | None) -> list[Annotation]:
    if scorer is None:
        return [rules_annotation(p) for p in prepared]
    return [scored_annotation(p, scorer) for p in prepared]


def local_batch(inputs: Sequence[AnnotateInput]) -> list[Annotation]:
    """Annotate many issues with one embedding call for all their prose units (learned scorer when shipped)."""
    return annotate_prepared(prepare_batch(inputs), default_scorer())


def local(inp: AnnotateInput) -> Annotation:
    return local_batch([inp])[0]


SPEC = RoleSpec(name="annotator", input_model=AnnotateInput, output_model=Annotation, local=local,
                local_batch=local_batch)
