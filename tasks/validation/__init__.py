"""Great Expectations gates: every artifact is validated before a stage publishes it (DESIGN §7)."""

from tasks.validation.gate import GateReport, gate, validate

__all__ = ["GateReport", "gate", "validate"]
