"""Prefect flows: one per DVC stage (thin: read params, call tasks, validate, publish), plus the pipeline flow."""
