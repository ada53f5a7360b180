"""What a row of an evaluation's ``methods`` list always holds: a name and the kind of method it runs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tasks.records import SAFE_ID


class NamedMethod(BaseModel):
    """A method entry's name and kind; each evaluation adds its own fields after these two."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SAFE_ID)
    """Display name (the report row, ``protocol::name`` for episodes) and the run-folder name."""
    method: str | None = None
    """The registered method kind (episodes: ``tasks/clarifiers/__init__.py``; question lists: ``no_questions``,
    ``oracle_template``, ``ask_everything``, ``policy``, ``llm_questioner``, ``published``); defaults to ``name``."""

    @property
    def kind(self) -> str:
        return self.method or self.name
