"""The litellm response an embedded provider returns: the text and its token counts, as one assistant message."""

from __future__ import annotations


def build_response(model: str, text: str, prompt_tokens: int, completion_tokens: int):
    from litellm import ModelResponse
    from litellm.types.utils import Choices, Message, Usage

    return ModelResponse(
        model=model,
        choices=[Choices(index=0, finish_reason="stop", message=Message(role="assistant", content=text))],
        usage=Usage(
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        ),
    )
