"""The agent <-> simulated-user loop of one clarification episode (OR-Clarify protocols Open, MC and MC-D)."""
