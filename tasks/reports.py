"""The combined report; the code lives in :mod:`tasks.reporting` (this name stays for its importers)."""

from tasks.reporting import (  # noqa: F401
    ReportInputs,
    build_report,
    flatten,
    load_stage_metrics,
    render_html,
    render_markdown,
    write_report,
)
