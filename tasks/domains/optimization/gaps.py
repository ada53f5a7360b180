"""The optimisation gap inventory: formulation gaps an optimisation brief leaves open, as specific questions built
from its entities (the protocol and records are ``tasks.domain_context``).

It reads only the public brief, finds the brief's entities (table rows, named items, resources) and its time unit,
and proposes one gap per InterOPT gap category (or-clarify.md §6.1) that the brief does not already settle, each with
an open question and three mutually exclusive business hypotheses for the choice protocols. Priority follows the
published agent order: objective, hard rules and policies, scope / entities / time, then parameters.

Entities come from the brief's tables (row labels, and column headers that name items), enumerations ("okra,
carrots and celery"), numbered or lettered names ("Product 2", "Supplier B"), mid-sentence proper names, and only
as a fallback its most frequent nouns (units and generic words excluded). A short label such as "II" is qualified
with the word the brief puts before it ("food II"). Items listed together form a group; relation and selection gaps
pair items of one group.

The inventory is the optimisation domain's hook (``Domain.gap_inventory``): :data:`OPTIMIZATION`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from tasks.domain_context import BriefFacts, GapCandidate

# The agents' own lexicon (issue 40): written from the OR-Clarify gap taxonomy (or-clarify.md §6.2: objective /
# trade-off / success criterion; demand and fulfilment policy; integrality of the decisions), sharing no term with
# the decomposer's cue lists that choose what to hide (tasks/domains/optimization/decompose.py CUES; checked by
# tests/test_cue_vocabulary.py). A brief that states its goal only as "maximise profit" is therefore not read as
# settling the objective: the agents ask, as they would of any brief whose aim they cannot see in their own words.
OBJECTIVE_CUE = re.compile(r"\b(cheapest|costliest|priciest|fewest|optim(al|um|ally|is\w*|iz\w*)|profitab\w*|"
                           r"lucrativ\w*|trade-?offs?|success (criterion|criteria|measure)|judged (by|on)|"
                           r"bottom line|best (outcome|result|combination|mix|schedule)|"
                           r"lowest (spend|outlay|expense\w*|bill)|highest (return|earnings|margin|income|payoff))\b",
                           re.IGNORECASE)
DEMAND_CUE = re.compile(r"\b(demands?|orders?|requirements?|needs?|booked|forecast|requests?)\b",
                        re.IGNORECASE)
DEMAND_POLICY_CUE = re.compile(r"\b(backlog\w*|lost|shortfall|in full|fulfil\w*|unmet|late|delivered on time)\b",
                               re.IGNORECASE)
TIME_UNITS = ("hour", "shift", "day", "week", "month", "quarter", "season", "year", "period", "stage")
TIME_CUE = re.compile(r"\b(" + "|".join(TIME_UNITS) + r")s?\b", re.IGNORECASE)
INTEGER_CUE = re.compile(r"\b(integral|indivisible|discrete|fractional|"
                         r"number of (trucks|people|workers|machines|trips))\b",
                         re.IGNORECASE)
TABLE_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|")
NAMED = re.compile(r"\b((?:Product|Plant|Machine|Warehouse|Project|Factory|Line|Site|Route|Store|Crop|Model|Type|"
                   r"Customer|Supplier|Depot|Shift|Item|Ship|Truck|Worker|Team|Mine|Field|Region|Job|Task)s?\s*"
                   r"(?:[A-Z]\b|\d{1,2}\b|[IVX]{1,4}\b))")
HEADER_WORDS = frozenset("""week month day year quarter period total item type name product unit cost price id no
number""".split())
UNIT_WORDS = frozenset("""yuan dollar euro pound cent kg kilogram gram ton tonne liter litre meter metre km mile
acre hectare hour minute second piece unit percent dan foot feet inch gallon barrel""".split())
GENERIC_WORDS = frozenset("""number total time least most cost price profit amount plan help need needs creating
create planning decide deciding using used use each per must can cannot only also into than more less following
given table maximum minimum available requirement requirements demand demands capacity data value values rate rates
which their there where what when this that with have will would should could based case problem model order orders
other same different take make made like well them they then these those such some many much both either neither
whether want weekly daily monthly yearly annual total overall current initial final first second third next last
including one two three four five six seven eight nine ten exceed exceeds contain contains produce produced complete
completed effective raw start work works visit end beginning cutting members raise grow plant allocate assign build
ship hire buy sell january february march april may june july august september october november december monday
tuesday wednesday thursday friday saturday sunday""".split())
LEAD_WORDS = frozenset("""to into for from of on in at by with between among about produce producing grow growing
plant planting make making build building buy buying sell selling ship shipping hire hiring allocate allocating
assign assigning raise raising open opening use using""".split())
PROPER = re.compile(r"(?<=[a-z,;:(] )([A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})?)\b")
PROPER_IGNORE = frozenset("""Table Figure Each The This That There These Those What Which When Where How If For And
But Or Not All Any No Yes Total Note Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March
April May June July August September October November December I""".split())
ATTRIBUTE_WORDS = frozenset("""demand price cost quota capacity time hours hour number rate volume limit weight area
profit income fee pay required available min max minimum maximum total buy sell purchase purchasing selling code
level duration coordinates window radius content estimated variable amount quantity quantities type types per
monthly weekly daily hourly working net unit units distance length width height size value budget requirement
requirements processing production consumption usage spares yield return returns percentage ratio share""".split())
BULLET_NAME = re.compile(r"^\s*[-*•]\s*([A-Z][\w' -]{1,30}?)\s*:")
SHORT_LABEL = re.compile(r"^(?:[A-Z]\d?|[IVX]{1,4}|\d{1,2})$")
LIST_ITEM = r"[A-Za-z][\w\-]*(?: [A-Za-z][\w\-]*){0,2}"
ENUMERATION = re.compile(rf"\b({LIST_ITEM})((?:, {LIST_ITEM}){{1,8}}),? (?:and|or) ({LIST_ITEM})\b")
COMMA_LIST = re.compile(rf"(?<=: )({LIST_ITEM}(?:, {LIST_ITEM}){{2,8}})(?=[.;\n]|$)", re.MULTILINE)
SELECTION_CUE = re.compile(r"\b(select\w*|choos\w*|chosen|pick\w*|hire\w*|take|assign\w*|include\w*|"
                           r"which (one|ones|of)|whether to)\b", re.IGNORECASE)
SEQUENCE_CUE = re.compile(r"\b(machines?|process(es)?|stages?|steps?|operations?|workstations?|vats?|stations?|"
                          r"routes?|sequence)\b", re.IGNORECASE)
STOCK_CUE = re.compile(r"\b(inventory|inventories|stock|stored|storage|warehouse|backlog\w*|backorder\w*|cash|"
                       r"balance|carry(ing)? over)\b", re.IGNORECASE)
STOP = frozenset("""a an the and or of to in for on at by with from per each every our we us you your is are be this
that these those it its as can may must will should which what when how any all no not""".split())


def _clean_cell(cell: str) -> str:
    cell = re.sub(r"\$|\\[a-z]+|[{}]", "", cell).replace("_", "").strip()
    return re.sub(r"^[-*•]\s*", "", re.sub(r"\s+", " ", cell))


def _entity_like(name: str) -> bool:
    """A plausible item name: not a number, a unit, a generic word or a column of attributes (price, demand ...)."""
    if not name or set(name) <= set("-: ") or re.fullmatch(r"[\d.,%€$£ ~<>=+-]+", name):
        return False
    if any(ch in name for ch in "()/=|") or len(name) > 40 or re.search(r"\d{3,}", name):
        return False
    if NAMED.fullmatch(name) or SHORT_LABEL.match(name):
        return True
    tokens = [t.strip(".,:;'’").lower() for t in name.split()]
    if any(t in ATTRIBUTE_WORDS or _singular(t) in ATTRIBUTE_WORDS for t in tokens):
        return False
    if len(tokens) == 1:
        word = _singular(tokens[0])
        if {tokens[0], word} & (STOP | GENERIC_WORDS | UNIT_WORDS | HEADER_WORDS | set(TIME_UNITS)):
            return False
    return True


def _qualify(label: str, brief: str, header: str = "") -> str:
    """A bare label such as "II" or "B" gets the noun the brief puts before it ("food II"), else the first word of
    its table's header ("Worker II"), when there is one."""
    if not SHORT_LABEL.match(label):
        return label
    before = Counter(_singular(m.group(1).lower()) for m in re.finditer(rf"\b([A-Za-z]{{3,}})s? {re.escape(label)}\b",
                                                                          brief)
                     if m.group(1).lower() not in STOP and m.group(1).lower() not in GENERIC_WORDS)
    if before:
        return f"{before.most_common(1)[0][0]} {label}"
    head = header.split()[0] if header.split() else ""
    if re.fullmatch(r"[A-Za-z]{3,}", head) and head.lower() not in TIME_UNITS and head.lower() not in {"number", "no"}:
        return f"{head.capitalize()} {label}"
    return label


def _qualify_all(labels: list[str], brief: str, header: str = "") -> list[str]:
    """Qualify a group's labels; bare labels left over take the noun most of their siblings got ("node B")."""
    done = [_qualify(x, brief, header) for x in labels]
    heads = Counter(q.rsplit(" ", 1)[0] for x, q in zip(labels, done) if q != x)
    if not heads:
        return done
    head = heads.most_common(1)[0][0]
    return [f"{head} {q}" if q == x and SHORT_LABEL.match(x) else q for x, q in zip(labels, done)]


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    return [i for i in items if not (i.lower() in seen or seen.add(i.lower()))]


def _table_groups(brief: str) -> list[list[str]]:
    """Per table: its row labels (first column below the header), else its header cells when they name items."""
    groups: list[list[str]] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if len(rows) >= 2:
            header, body = rows[0], [r for r in rows[1:] if not all(set(c) <= set("-: ") for c in r)]
            labels = _dedupe([_clean_cell(r[0]) for r in body if r])
            if labels and all(_entity_like(x) for x in labels):
                groups.append(_qualify_all(labels, brief, _clean_cell(header[0])))
            else:
                named = _dedupe([_clean_cell(c) for c in header[1:]])
                if len(named) >= 2 and all(_entity_like(c) and not TIME_CUE.search(c) for c in named):
                    groups.append(_qualify_all(named, brief))
        rows.clear()

    for line in brief.splitlines():
        line = line.strip()
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        else:
            flush()
    flush()
    return groups


def _list_item(item: str) -> str:
    words = item.strip().split()[-2:]
    while words and words[0].lower() in (STOP | GENERIC_WORDS | LEAD_WORDS):
        words = words[1:]
    if len(words) == 2 and SHORT_LABEL.match(words[1]):
        words[0] = _singular(words[0].lower())
    return " ".join(words)


def _enumerations(brief: str) -> list[list[str]]:
    """Items listed in a sentence ("corn, wheat and rye"), after a colon, or as a bulleted "- Name: ..." block."""
    groups: list[list[str]] = []
    for match in ENUMERATION.finditer(brief):
        last = []
        for word in match.group(3).split():  # the last item may run on into the sentence ("rye to maximise")
            if word.lower() in STOP | LEAD_WORDS or OBJECTIVE_CUE.search(word):
                break
            last.append(word)
        groups.append([match.group(1), *match.group(2).split(", ")[1:], " ".join(last)])
    for match in COMMA_LIST.finditer(brief):
        groups.append(match.group(1).split(", "))
    block: list[str] = []
    for line in brief.splitlines() + [""]:
        bullet = BULLET_NAME.match(line)
        if bullet:
            block.append(bullet.group(1))
        else:
            if len(block) >= 2:
                groups.append(block)
            block = []
    cleaned = []
    for raw in groups:
        if any(w.lower() in STOP or OBJECTIVE_CUE.search(w) for i in raw[1:] for w in i.split()):
            continue  # a list of clauses ("it arrives early, it must wait"), not of items
        items = _dedupe([_list_item(i) for i in raw])
        if len(items) < 2 or not all(_entity_like(i) for i in items):
            continue
        head = items[0].split()[0] if len(items[0].split()) == 2 and SHORT_LABEL.match(items[0].split()[1]) else ""
        items = [f"{head} {i}" if head and SHORT_LABEL.match(i) else i for i in items]
        cleaned.append(_qualify_all(items, brief))
    return cleaned


def _named_groups(brief: str) -> list[list[str]]:
    families: dict[str, list[str]] = {}
    for name in NAMED.findall(brief):
        name = re.sub(r"\s+", " ", name)
        head = name.split()[0].lower().rstrip("s")
        families.setdefault(head, [])
        if name not in families[head]:
            families[head].append(name)
    return list(families.values())


def _proper_names(brief: str) -> list[str]:
    counts = Counter(m.group(1) for m in PROPER.finditer(brief)
                     if m.group(1).split()[0] not in PROPER_IGNORE and _entity_like(m.group(1)))
    return [n for n, _ in counts.most_common(6)]


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if re.search(r"(ches|shes|xes|sses)$", word):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _frequent_nouns(brief: str, k: int = 3) -> list[str]:
    """The most frequent content nouns, each in its most frequent surface form (often the plural)."""
    surface: dict[str, Counter] = {}
    for word in re.findall(r"[A-Za-z][a-z]{2,}\b", brief):
        word = word.lower()
        key = _singular(word)
        if {word, key} & (STOP | GENERIC_WORDS | UNIT_WORDS | HEADER_WORDS | ATTRIBUTE_WORDS | set(TIME_UNITS)):
            continue
        surface.setdefault(key, Counter())[word] += 1
    ranked = sorted(surface.items(), key=lambda kv: -sum(kv[1].values()))
    return [forms.most_common(1)[0][0] for _, forms in ranked if sum(forms.values()) >= 2][:k]


@lru_cache(maxsize=4096)
def optimization_facts(brief: str) -> BriefFacts:
    groups = _table_groups(brief) + _enumerations(brief) + _named_groups(brief)
    entities: list[str] = []
    seen: set[str] = set()
    for name in [n for g in groups for n in g] + _proper_names(brief):
        if name and name.lower() not in seen:
            seen.add(name.lower())
            entities.append(name)
    if len(entities) < 2:
        entities += [n for n in _frequent_nouns(brief) if n not in seen][: 3 - len(entities)]
    times = Counter(m.group(1).lower() for m in TIME_CUE.finditer(brief))
    time_unit = times.most_common(1)[0][0] if times else None
    lowered = brief.lower()
    hint = ("profit" if re.search(r"\b(profit|revenue|contribution|margin|sell|selling|sales price|income)\w*", lowered)
            else "cost" if re.search(r"\b(cost|wage|salar|fee|expense|spend|rent|pay)\w*", lowered)
            else "profit" if re.search(r"\bprices?\b", lowered)
            else "cost" if re.search(r"(\b(yuan|dollars?|euros?|eur|usd)\b|[€$£])", lowered)
            else "time" if re.search(r"\b(duration|makespan|completion|finish|lateness|delay)\w*", lowered)
            else "output")
    return BriefFacts(
        entities=entities[:6],
        time_unit=time_unit,
        has_objective=bool(OBJECTIVE_CUE.search(brief)),
        objective_hint=hint,
        has_demand=bool(DEMAND_CUE.search(brief)),
        has_demand_policy=bool(DEMAND_POLICY_CUE.search(brief)),
        mentions_integrality=bool(INTEGER_CUE.search(brief)),
        groups=sorted([g for g in groups if len(g) >= 2], key=len, reverse=True)[:4],
    )


def _evidence(brief: str, needle: str) -> str:
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", brief):
        if needle and needle.lower() in sentence.lower():
            return sentence.strip()[:200]
    return brief.strip().splitlines()[0][:200] if brief.strip() else ""


OBJECTIVE_OPTIONS = {
    "cost": {"A": "Minimise the total cost", "B": "Maximise the total profit", "C": "Minimise the total time used"},
    "profit": {"A": "Maximise the total profit", "B": "Minimise the total cost",
               "C": "Maximise the total amount produced"},
    "time": {"A": "Minimise the total time", "B": "Minimise the total cost",
             "C": "Maximise the number of jobs completed"},
    "output": {"A": "Maximise the total output", "B": "Minimise the total cost", "C": "Maximise the total profit"},
}


OBJECTIVE_EXAMPLE = {"cost": "the lowest total cost", "profit": "the highest total profit",
                     "time": "the shortest total time", "output": "the largest total output"}


def _listing(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _pairs(facts: BriefFacts) -> list[tuple[str, str]]:
    """Entity pairs for relation gaps: neighbours in the largest group, else the first two entities."""
    group = facts.groups[0] if facts.groups else facts.entities
    return [(group[i], group[i + 1]) for i in range(min(2, len(group) - 1))]


@lru_cache(maxsize=4096)
def optimization_gaps(brief: str) -> tuple[GapCandidate, ...]:
    """Every gap an optimisation brief leaves open, most important first (independent of the transcript)."""
    facts = optimization_facts(brief)
    gaps: list[GapCandidate] = []
    first_line = brief.strip().splitlines()[0][:200] if brief.strip() else ""
    if not facts.has_objective:
        gaps.append(GapCandidate(
            key="objective", category="objective", priority=0,
            description="The request never says what the plan should optimise.",
            evidence_quote=first_line,
            question=f"What is the goal the plan should optimise, for example "
                     f"{OBJECTIVE_EXAMPLE[facts.objective_hint]}?",
            options=OBJECTIVE_OPTIONS[facts.objective_hint]))
    if facts.has_demand and not facts.has_demand_policy:
        gaps.append(GapCandidate(
            key="demand_policy", category="hard_soft_policy", priority=1,
            description="Whether demand must be met in full is not stated.",
            evidence_quote=_evidence(brief, "demand") or first_line,
            question="Must every demand or order be met in full, or may some of it go unmet or be delivered late?",
            options={"A": "Every demand must be met in full, on time", "B": "Unmet demand is allowed but lost",
                     "C": "Late delivery (backlog) is allowed"}))
    for rank, entity in enumerate(facts.entities[:3]):
        gaps.append(GapCandidate(
            key=f"limit:{entity.lower()}", category="constraint_set", priority=2 + rank,
            description=f"Limits or rules on {entity} are not stated.",
            evidence_quote=_evidence(brief, entity),
            question=f"Is there any limit or rule on {entity} that the request does not mention, such as a maximum, "
                     f"a minimum, or a time when it cannot be used?",
            options={"A": f"{entity} has an upper limit", "B": f"{entity} has a minimum requirement",
                     "C": f"No extra rule applies to {entity}"}))
    choices = next((g for g in facts.groups if len(g) >= 3), None)
    if choices and SELECTION_CUE.search(brief):
        listed = _listing(choices[:4])
        gaps.append(GapCandidate(
            key=f"selection:{choices[0].lower()}", category="constraint_set", priority=3,
            description=f"How many of {listed} may or must be chosen is not stated.",
            evidence_quote=_evidence(brief, choices[0]),
            question=f"When choosing among {listed}, must a certain number of them be chosen, for example exactly one "
                     f"or at least two?",
            options={"A": "Exactly one of them must be chosen", "B": "At least a minimum number must be chosen",
                     "C": "Any number of them may be chosen"}))
    for rank, (a, b) in enumerate(_pairs(facts)):
        gaps.append(GapCandidate(
            key=f"relation:{a.lower()}|{b.lower()}", category="entity_relation", priority=3 + rank,
            description=f"How {a} and {b} relate to each other is not stated.",
            evidence_quote=_evidence(brief, a),
            question=f"Do {a} and {b} depend on each other, for example one requires or excludes the other, or they "
                     f"must be in a fixed proportion?",
            options={"A": f"{a} and {b} cannot both be used", "B": f"Using {a} requires {b}",
                     "C": f"{a} and {b} are independent"}))
    sequence = SEQUENCE_CUE.search(brief)
    if sequence:
        steps = _singular(sequence.group(1).lower())
        steps = "processes" if steps == "proces" else f"{steps}s"
        gaps.append(GapCandidate(
            key="sequence", category="entity_relation", priority=4,
            description=f"Whether the {steps} must be used in a fixed order is not stated.",
            evidence_quote=_evidence(brief, sequence.group(1)),
            question=f"Do the {steps} have to be used in a fixed order, so that one must finish before the next "
                     f"can start?",
            options={"A": "A fixed order is required", "B": "Any order is allowed",
                     "C": "Only some of them must follow an order"}))
    if facts.time_unit:
        unit = facts.time_unit
        gaps.append(GapCandidate(
            key="timing", category="time_boundary", priority=4,
            description=f"Timing rules within and across each {unit} are not stated.",
            evidence_quote=_evidence(brief, unit),
            question=f"Are there timing rules for each {unit}, for example when purchases, production or changes take "
                     f"effect, or a {unit} when something is not allowed?",
            options={"A": f"Actions take effect at the start of each {unit}",
                     "B": f"Actions take effect at the end of each {unit}",
                     "C": f"Some {unit}s have special restrictions"}))
        stock = STOCK_CUE.search(brief)
        if stock:
            gaps.append(GapCandidate(
                key="horizon_end", category="time_boundary", priority=5,
                description=f"What must hold at the end of the last {unit} is not stated.",
                evidence_quote=_evidence(brief, stock.group(1)),
                question=f"What must hold at the end of the last {unit}, for example a required ending stock or all "
                         f"backlogs cleared?",
                options={"A": "A set amount must remain at the end", "B": "Everything outstanding must be cleared by "
                                                                          "the end",
                         "C": "Nothing is required at the end"}))
    gaps.append(GapCandidate(
        key="decisions", category="decision_scope", priority=5,
        description="Which decisions the plan makes, and in what units, is not stated.",
        evidence_quote=first_line,
        question="Which quantities should the plan decide, and do any of them have to be whole numbers or yes/no "
                 "choices?",
        options={"A": "Amounts can be fractional", "B": "Amounts must be whole numbers",
                 "C": "Some decisions are yes/no selections"}))
    return tuple(sorted(gaps, key=lambda g: g.priority))


class OptimizationInventory:
    """The optimisation inventory above: objective, demand policy, limits, relations, timing, decision scope."""

    name = "optimization"

    def gaps(self, brief: str) -> Sequence[GapCandidate]:
        return optimization_gaps(brief)

    def facts(self, brief: str) -> BriefFacts:
        return optimization_facts(brief)

    def interview(self, brief: str) -> list[str] | None:
        return None

    goal_placeholder = "what the plan should optimise"

    def goal(self, brief: str) -> str:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", brief):
            if OBJECTIVE_CUE.search(sentence):
                return sentence.strip()[:200]
        return ""


OPTIMIZATION = OptimizationInventory()
