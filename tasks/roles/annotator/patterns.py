"""The regular expressions the segmenter, the rules and the learned scorer's features read.

What a code line looks like (:data:`CODEISH`, :data:`SHELL`), and the cues of each category: links and references,
version and environment strings, error wording, expectations, implementation hints, reproduction wording, assertion and
comment cues, template boilerplate and traceback lines.
"""

from __future__ import annotations

import re

# ---- code lines ------------------------------------------------------------------------------------------------------

SHELL = re.compile(
    r"^\s*(\$|>|%|#)\s+\S"
    r"|^\s*(pip|python\d?(\.\d+)?|pytest|py\.test|tox|conda|git|sphinx-\w+|make|django-admin|manage\.py|\./\S+)\b"
)
CODEISH = re.compile(
    r"^\s*(import\s|from\s+\S+\s+import|def\s|class\s|return\b|if\s.*:$|elif\s|else:|for\s.*:$|while\s|with\s.*:$|"
    r"try:|except\b|finally:|raise\s|assert\s|print\(|@\w|#|//|\}|\{|\)|\]|async\s|await\s|yield\b|lambda\b|"
    r"pass$|continue$|break$)"
    r"|^\s*[\w.\[\]'\"]+\s*(=|\+=|-=|\*=|/=)\s*\S"
    r"|^\s*[\w.]+\(.*\)?\s*$"
    r"|[;{]\s*$|:\s*$"
)

# ---- the rules' cues -------------------------------------------------------------------------------------------------

URL = re.compile(r"https?://\S+|\bwww\.\S+")
REF = re.compile(
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
VERSION = re.compile(
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
VERSION_LINE = re.compile(r"^\s*[-*]?\s*[\w .-]{1,30}\s*(?::|==|\s)\s*v?\d+(?:\.\d+)+\b.{0,40}$")
ERROR_LINE = re.compile(r"\b[\w.]*(?:Error|Exception|Warning)\b|\bTraceback\b|\bsegfault|\bcore dumped\b")
ERROR = re.compile(
    r"\b(?:errors?|fail(?:s|ed|ing|ure|ures)?|crash(?:es|ed|ing)?|broken|breaks?|bug(?:gy)?|wrong(?:ly)?|"
    r"incorrect(?:ly)?|invalid|unexpected(?:ly)?|raises?|raised|raising|throws?|thrown|hangs?|ignored|"
    r"doesn't|does not|didn't|did not|don't|do not|cannot|can't|can not|isn't|is not|aren't|are not|won't|will not|"
    r"not work(?:ing)?|no longer|regression|inconsisten\w*|mismatch\w*|leaks?|infinite|nan|misleading|confusing|"
    r"unable|instead|problem|issue|strange|weird|odd|surprising\w*|results? in|returns|gives?|produces?|outputs?|"
    r"shows?|displays?|prints?|get|gets|got|only|never|lost|loses?|dropped|drops|missing|overflow|truncat\w+|"
    r"deprecat\w+|warns?|warnings?|slow|timeout|fails to)\b",
    re.I,
)
EXPECTED = re.compile(
    r"\b(?:expect(?:ed|s|ing|ation)?|should(?:n't| not)?|would (?:expect|like|have|be|prefer|make sense)|"
    r"desired?|correct(?:ly)?|supposed to|ought to|intended|must(?:n't| not)?|it would be (?:nice|better|great|good)|"
    r"I'd like|we'd like|I would like|want(?:ed)? (?:it|the|to|a)|proper(?:ly)?|rather than|ideally|"
    r"instead(?: of)?|needs? to|ought|consistent(?:ly)?|same (?:as|result|behaviou?r)|like (?:it|in) |"
    r"works? (?:as expected|fine|correctly|properly)|as expected|be able to|allow(?:s|ed)?|support(?:s|ed)?)\b",
    re.I,
)
PATH = re.compile(r"\b[\w.-]+(?:/[\w.-]+)+\.(?:py|pyx|pxd|c|h|cpp|js|cfg|toml|ini|txt|rst|html|yml|yaml|json)\b"
                   r"|\b[\w-]+\.(?:py|pyx)\b")
IMPL = re.compile(
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
REPRO_PROSE = re.compile(
    r"\b(?:reproduc\w+|repro|steps?|minimal|mcve|"
    r"(?:following|this|the|an?) (?:code|snippet|example|script|command|test)|"
    r"(?:when|if|after|once|whenever|only) (?:I|you|we|using|calling|the|a|an|there|one|it|running|passing)|"
    r"run(?:ning)?|execut\w+|create|creating|call(?:ing)?|with the following|consider|given|for example|e\.g\.|"
    r"example|test case|set ?up|configure[sd]?|defin(?:e|ing)|instantiat\w+|passing|try(?:ing)? to|tried|"
    r"install\w*|import\w*|happens (?:when|if|with|for|only)|occurs (?:when|if|with)|triggers?)\b",
    re.I,
)
ASSERT = re.compile(r"^\s*(?:>>>\s*)?(?:assert\b|self\.assert\w*\(|assert_\w+\(|np\.testing\.\w+\()")
COMMENT_EXPECTED = re.compile(r"#.*\b(?:expect\w*|should|correct|desired|want(?:ed)?|instead|ok)\b", re.I)
COMMENT_ERROR = re.compile(
    r"#.*\b(?:error|fails?|wrong|incorrect|bug|raises?|broken|crash\w*|but|instead|not)\b", re.I
)

# ---- lines of no category, and traceback lines -----------------------------------------------------------------------

BOILERPLATE = re.compile(
    r"^\s*(?:[-*]\s*)?\[[ xX]\]|^\(last modified by [^)]*\)$|^thanks?\b|^thank you|^hi\b|^hello\b|^hey\b"
    r"|^please\b.*\b(search|check|provide|describe|fill|include|paste|run)\b|^if applicable",
    re.I,
)
TRACEBACK_LINE = re.compile(
    r"^\s*File \"|-{3,}>|^\s*\d+\s{2,}\S|\.py in [<\w]|\.pyx? ?: ?\d+|\.py\", line \d+|^E\s{2,}|^>\s{2,}\S"
    r"|^\s*\^+\s*$|^-{10,}\s*$|^\s*[\w.]*(?:Error|Exception)(?::|$)|<ipython-input|site-packages/"
)
