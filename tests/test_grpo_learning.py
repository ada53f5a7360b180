"""GRPO learns through ``train_grpo``: a planted reward rises on a tiny model, and only when it drives the advantage.

The reward is the share of a completion's tokens from a fixed half of the vocabulary (even token ids). The same
two reward functions run twice with the weights swapped: once the planted reward drives the advantage and must
rise by ``MARGIN`` (measured by sampling from the policy before and after, fixed seed); once it is only logged
and a decoupled copy (each completion scored with its neighbour's share) drives the update instead, and the
planted share must not rise by that margin although the adapter trained. A reward that is not wired to the update
fails the first half; a test that passes whatever the update does fails the second.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tasks.training import TrainProfile, get_profile, grpo_row, train_grpo
from tests.test_training import ISSUES, _tiny_llama, _tokenizer

# A learning-quality check (a margin on a sampled share): `make test-slow`; the default suite keeps the GRPO path's
# wiring in tests/test_training.py (two steps, every reward logged).
pytestmark = [pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
              pytest.mark.slow]

N_SPECIAL = 4
"""The test tokenizer's special tokens take ids 0-3; they count for neither half."""

PLANT = 0.5
"""Added along one hidden direction to the output rows (+ even ids, - odd ids); see :func:`_planted_llama`."""

MARGIN = 0.2
"""How far the sampled share must rise. Measured on this machine with the profile's seed set to 0-13 (the test
uses 0): the share starts at 0.44 and reaches 0.70-1.00 (+0.26 at the least) with the planted reward in the
advantage, 0.19-0.50 (+0.06 at the most) with it only logged. 0.2 sits between the two with room on both sides;
the seed-0 run gives 0.44 -> 0.95 and 0.44 -> 0.44."""

SAMPLES = 16
"""Completions sampled per prompt for each measurement (4 prompts: 64 completions, 12 tokens each)."""


def planted_share(completion_ids: Sequence[Sequence[int]], **kwargs: Any) -> list[float]:
    """Share of non-special completion tokens with an even id (0 for a completion with none)."""
    shares = []
    for ids in completion_ids:
        kept = [i for i in ids if i >= N_SPECIAL]
        shares.append(sum(i % 2 == 0 for i in kept) / len(kept) if kept else 0.0)
    return shares


def neighbour_share(completion_ids: Sequence[Sequence[int]], **kwargs: Any) -> list[float]:
    """The planted reward of the next completion: the same values, decoupled from each completion's tokens."""
    shares = planted_share(completion_ids)
    return shares[1:] + shares[:1]


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """On two busy cores, two intra-op threads made this model's ``generate`` 40x slower (6 s vs 0.15 s)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tokenizer():
    tok = _tokenizer()
    assert sorted(tok.all_special_ids) == list(range(N_SPECIAL))
    return tok


def _planted_llama(tokenizer):
    """The tiny random Llama with one direction ``u`` of the final hidden state separating the two halves.

    A random 64-wide model has near-uniform logits (output rows of norm ~0.16 against a hidden state that the final
    RMSNorm holds at norm ~8), which no LoRA on the attention can move far: the reward would be undiscoverable in a
    few steps. With ``±PLANT·u`` added to the output rows, writing ``u`` into the residual stream (which the
    attention LoRA can) raises the even share; that is what GRPO has to find.
    """
    import torch

    model = _tiny_llama(tokenizer)
    u = torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(1))
    ids = torch.arange(model.config.vocab_size)
    sign = torch.where(ids % 2 == 0, 1.0, -1.0) * (ids >= N_SPECIAL)
    with torch.no_grad():
        model.lm_head.weight += PLANT * sign[:, None] * (u / u.norm())[None, :]
    return model


def _profile() -> TrainProfile:
    # the cpu profile with a high learning rate, short completions and untruncated prompts (so that the measurement
    # below samples from exactly the prompts GRPO saw); all 4 prompts x G = 4 in every step, which keeps the
    # decoupled control's random walk small (at 2 prompts a step it drifted up to +0.21)
    return get_profile("cpu", {"grpo": {"max_steps": 12, "batch_size": 16, "num_generations": 4,
                                        "max_completion_length": 12, "max_prompt_tokens": None,
                                        "learning_rate": 1e-2}})


def _sampled_share(model, tokenizer, profile: TrainProfile, seed: int = 123) -> float:
    """Mean planted reward of ``SAMPLES`` completions per prompt, sampled as GRPO samples (temperature, top-p)."""
    import torch

    model.eval()
    torch.manual_seed(seed)
    g, shares = profile.grpo, []
    for issue in ISSUES:
        inputs = tokenizer.apply_chat_template(grpo_row(issue)["prompt"], add_generation_prompt=True,
                                               return_tensors="pt", return_dict=True)
        with torch.no_grad():
            out = model.generate(**{k: v.repeat(SAMPLES, 1) for k, v in inputs.items()}, do_sample=True,
                                 temperature=g.temperature, top_p=g.top_p, max_new_tokens=g.max_completion_length,
                                 pad_token_id=tokenizer.pad_token_id)
        completions = []
        for row in out[:, inputs["input_ids"].shape[1]:].tolist():
            completions.append(row[: row.index(tokenizer.eos_token_id)] if tokenizer.eos_token_id in row else row)
        shares += planted_share(completions)
    return sum(shares) / len(shares)


def _lora_b_trained(adapter: Path) -> bool:
    """LoRA B starts at zero: any non-zero B tensor means the update reached the adapter."""
    from safetensors.torch import load_file

    b = [t for k, t in load_file(str(adapter / "adapter_model.safetensors")).items() if "lora_B" in k]
    return bool(b) and any(float(t.abs().max()) > 0 for t in b)


def _train_and_measure(tokenizer, tmp_path: Path, weights: dict[str, float]) -> tuple[float, float, Any]:
    from peft import PeftModel

    profile = _profile()
    before = _sampled_share(_planted_llama(tokenizer), tokenizer, profile)
    rows = [grpo_row(issue) for issue in ISSUES]
    result = train_grpo(_planted_llama(tokenizer), tokenizer, rows, [planted_share, neighbour_share], profile,
                        tmp_path / "grpo", reward_weights=weights)
    assert result.steps == profile.grpo.max_steps
    assert _lora_b_trained(result.adapter_dir), "LoRA B is still zero: the update did not reach the adapter"
    trained = PeftModel.from_pretrained(_planted_llama(tokenizer), str(result.adapter_dir))
    return before, _sampled_share(trained, tokenizer, profile), result


def test_planted_reward_rises_when_it_drives_the_advantage(tmp_path, tokenizer):
    before, after, result = _train_and_measure(tokenizer, tmp_path,
                                               {"planted_share": 1.0, "neighbour_share": 0.0})
    assert after - before >= MARGIN, f"planted share {before:.2f} -> {after:.2f}: GRPO did not learn the reward"
    assert "planted_share" in result.final_rewards


def test_planted_reward_does_not_rise_when_it_only_logs(tmp_path, tokenizer):
    before, after, result = _train_and_measure(tokenizer, tmp_path,
                                               {"planted_share": 0.0, "neighbour_share": 1.0})
    assert after - before < MARGIN, f"planted share {before:.2f} -> {after:.2f} with the reward out of the advantage"
    assert "planted_share" in result.final_rewards  # computed and logged all the same
