"""Analyses over the pipeline's outputs (CLARITI RQ2: which questions a user can answer)."""
