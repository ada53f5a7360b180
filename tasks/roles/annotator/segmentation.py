"""Segmentation: cut an issue into classification units (character offsets into the issue text itself).

One unit per non-blank line inside code blocks (fenced, indented or REPL), with a traceback kept whole and a REPL prompt
kept together with its output; sentences in prose (list items and short "key: value" lines on their own); headings;
HTML template comments are skipped except for the links inside them (one ``comment`` unit per URL).
"""

from __future__ import annotations

import re

from tasks.roles.annotator.patterns import CODEISH, SHELL, TRACEBACK_LINE, URL, VERSION_LINE
from tasks.roles.annotator.records import Unit
from tasks.text import FENCE, closing_fence, markdown_heading, split_spans, strip_span

_LINE = re.compile(r"[^\r\n]*")
_COMMENT_OPEN = re.compile(r"<!--")
_COMMENT_CLOSE = re.compile(r"-->")
_HEADING = markdown_heading(label=r"[A-Z][\w /&()-]{0,40}:")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_TRACE_START = re.compile(r"^\s*Traceback \(most recent call last\)")
_TRACE_END = re.compile(r"^\s*[\w.]*(Error|Exception|Warning|Exit|Interrupt|Fault)\b.*|^\s*[\w.]+: .+")
_REPL = re.compile(r"^\s*(>>>|\.\.\.)( |$)")
_IPY_IN = re.compile(r"^\s*In \[\d*\]:")
_IPY_CONT = re.compile(r"^\s*\.{3,}:")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z`\"'(\[*])")


def _lines(text: str) -> list[tuple[int, int]]:
    out = []
    for m in _LINE.finditer(text):
        if m.start() == m.end() and out and out[-1][1] == m.start():
            continue  # the empty match right after a line
        out.append((m.start(), m.end()))
    return out


def _unit(text: str, start: int, end: int, kind: str) -> Unit | None:
    start, end = strip_span(text, start, end)
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
    trace = [k for k, b in enumerate(body, start=lo) if TRACEBACK_LINE.search(b)]
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
            kind = "code" if SHELL.match(line) else "output"
        elif CODEISH.search(line) or (not output_lang and not _looks_like_output(line)):
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
    for s, e in split_spans(text, start, end, _SENTENCE_END):
        unit = _unit(text, s, e, kind)
        if unit:
            units.append(unit)
    return units


def _comment_links(text: str, start: int, end: int) -> list[Unit]:
    """One ``comment`` unit per URL inside an HTML template comment (the rest of a comment is skipped)."""
    units = []
    for m in URL.finditer(text, start, end):
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
        or bool(VERSION_LINE.search(nxt))
    )


def _as_block(units: list[Unit], counter: list[int]) -> list[Unit]:
    for unit in units:
        unit.block = counter[0]
    counter[0] += 1
    return units


def segment(text: str) -> list[Unit]:
    """Cut ``text`` into classification units (character offsets into ``text`` itself)."""
    lines = _lines(text)
    rows = [text[s:e] for s, e in lines]
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
        if FENCE.match(line):
            flush()
            lang = line.strip()[3:].strip().lower()
            j = closing_fence(rows, i)
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
        if _HEADING.match(line) and not VERSION_LINE.search(line):
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

