"""Roles: every kind of model call the pipeline makes, each with a deterministic local backend and an LLM backend."""
