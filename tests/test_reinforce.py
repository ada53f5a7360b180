"""CLARITI's policy update (``grpo.update: reference_reinforce``) and full fine-tuning on the tiny Llama."""

from __future__ import annotations

import json

import pytest

from tasks.training import LocalPolicy, get_profile, grpo_row, train_grpo
from tasks.training.reinforce import completion_mask, group_advantages, reinforce_loss, sequence_logprobs
from tests.test_training import ISSUES, _lora_b_nonzero, _tiny_llama, _tokenizer, length_stage, numbered_stage, total

pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")


@pytest.fixture(scope="module")
def tokenizer():
    return _tokenizer()


def _profile(**top):
    return get_profile("cpu", {
        "grpo": {"update": "reference_reinforce", "max_steps": 2, "batch_size": 4, "num_generations": 2,
                 "gradient_accumulation_steps": 1, "max_completion_length": 12, "max_prompt_tokens": 96,
                 "learning_rate": 1e-2, "beta": 0.05},
        **top,
    })


# ------------------------------------------------------------------ the update's rules (clariti.md §6.3)


def test_advantage_is_the_group_mean_baseline_without_std_scaling():
    adv = group_advantages([1.0, 0.0, 0.0, 0.0, 0.5, 0.5], [0.0] * 6, beta=0.05, group_size=2)
    assert adv == pytest.approx([0.5, -0.5, 0.0, 0.0, 0.0, 0.0])  # groups of 2, each centred on its own mean
    # no std normalisation: scaling the rewards scales the advantages
    assert group_advantages([2.0, 0.0], [0.0, 0.0], beta=0.05, group_size=2) == pytest.approx([1.0, -1.0])
    assert group_advantages([0.2, 0.0], [0.0, 0.0], beta=0.05, group_size=2) == pytest.approx([0.1, -0.1])


def test_kl_is_folded_into_the_reward_before_the_baseline():
    # r~ = r - beta*kl: equal rewards, the completion that drifted further from the reference gets the lower share
    adv = group_advantages([1.0, 1.0], [2.0, 0.0], beta=0.05, group_size=2)
    assert adv == pytest.approx([-0.05, 0.05])
    assert group_advantages([1.0, 0.0, 0.5], [0.0] * 3, beta=0.0, group_size=3, baseline="max") == \
        pytest.approx([0.0, -1.0, -0.5])
    with pytest.raises(ValueError, match="groups of 4"):
        group_advantages([1.0, 0.0], [0.0, 0.0], beta=0.05, group_size=4)


def test_loss_pushes_log_probability_along_the_advantage_and_the_kl_term_carries_gradient():
    import torch

    def grads(beta: float) -> list[float]:
        lp = torch.tensor([-2.0, -3.0], requires_grad=True)
        loss = reinforce_loss(lp, torch.tensor([1.0, 0.0]), torch.tensor([-2.0, -3.0]), beta=beta, group_size=2)
        loss.backward()
        return lp.grad.tolist()

    assert grads(0.0) == pytest.approx([-0.25, 0.25])  # -A/2: descent raises the better completion's log-prob
    # the public code does not detach the advantage: its -beta*kl term adds beta*(lp - mean lp)/2 to the gradient
    assert grads(0.5) == pytest.approx([-0.125, 0.125])
    # two groups: the loss is the mean of the per-group losses
    lp = torch.tensor([-1.0, -1.0, -2.0, -4.0])
    two = reinforce_loss(lp, torch.tensor([1.0, 0.0, 0.0, 1.0]), lp, beta=0.05, group_size=2)
    assert float(two) == pytest.approx(((-(-1 * 0.5 + -1 * -0.5) / 2) + (-(-2 * -0.5 + -4 * 0.5) / 2)) / 2)


def test_completion_mask_stops_at_the_first_eos_and_logprobs_are_clipped(tokenizer):
    import torch

    eos = tokenizer.eos_token_id
    ids = torch.tensor([[5, eos, 7, eos], [5, 6, 7, 8]])
    assert completion_mask(ids, [eos]).tolist() == [[1, 0, 0, 0], [1, 1, 1, 1]]  # the end token is not text
    model = _tiny_llama(tokenizer).eval()
    prompt = tokenizer(["hello there"], return_tensors="pt", add_special_tokens=False)
    lp = sequence_logprobs(model, prompt["input_ids"], prompt["attention_mask"], ids[:1], completion_mask(ids[:1],
                                                                                                      [eos]))
    lp = lp.detach()
    assert -15.0 <= float(lp) <= 0.0
    # the masked-out tail does not count: changing it leaves the mean unchanged
    other = torch.tensor([[5, eos, 9, 9]])
    lp2 = sequence_logprobs(model, prompt["input_ids"], prompt["attention_mask"], other,
                            completion_mask(other, [eos])).detach()
    assert float(lp2) == pytest.approx(float(lp), abs=1e-6)
    empty = torch.tensor([[eos, 9, 9, 9]])
    assert float(sequence_logprobs(model, prompt["input_ids"], prompt["attention_mask"], empty,
                                   completion_mask(empty, [eos])).detach()) == -8.0  # the public code's value


# ------------------------------------------------------------------ training


def _rows():
    return [grpo_row(issue, topic=f"t{n}") for n, issue in enumerate(ISSUES)]


WEIGHTS = {"length_stage": 0.0, "numbered_stage": 0.0, "total": 1.0}


def test_reference_update_with_lora_trains_and_logs_like_trl_grpo(tmp_path, tokenizer):
    out = tmp_path / "grpo"
    result = train_grpo(_tiny_llama(tokenizer), tokenizer, _rows(), [length_stage, numbered_stage, total],
                        _profile(), out, reward_weights=WEIGHTS)
    assert result.steps == 2 and result.kind == "grpo"
    assert _lora_b_nonzero(out / "adapter"), "the LoRA adapter did not train"
    history = json.loads((out / "log_history.json").read_text())
    assert [e["step"] for e in history] == [1, 2]
    assert all(f"rewards/{n}/mean" in e for e in history for n in WEIGHTS)
    # zero-weight functions are logged only; the reward is the total
    assert all(e["reward"] == pytest.approx(e["rewards/total/mean"], abs=1e-6) for e in history)
    assert history[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # the adapter starts at zero: policy = reference
    card = (out / "README.md").read_text()
    assert "REINFORCE, group-mean baseline" in card and "PEFT LoRA" in card
    assert (out / "rewards.png").is_file() and (out / "trainer_state.json").is_file()


def test_full_fine_tuning_writes_a_whole_model_that_loads_and_passes_the_gate(tmp_path, tokenizer):
    from tasks.validation.adapters import adapter_gate

    model = _tiny_llama(tokenizer).requires_grad_(False)  # frozen, as a policy loaded for inference is
    before = {k: v.clone() for k, v in model.state_dict().items()}
    profile = _profile(lora={"enabled": False})
    out = tmp_path / "grpo"
    result = train_grpo(model, tokenizer, _rows(), [length_stage, numbered_stage, total], profile, out,
                        reward_weights=WEIGHTS, check=adapter_gate(profile, "grpo"))
    folder = out / "adapter"
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    assert not (folder / "adapter_config.json").exists()
    assert result.trainable_params == sum(v.numel() for v in before.values() if v.dtype.is_floating_point)
    from safetensors.torch import load_file

    after = load_file(str(folder / "model.safetensors"))
    assert any(not after[k].equal(before[k]) for k in after if k in before), "no weight moved"
    history = json.loads((out / "log_history.json").read_text())
    assert history[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # the frozen reference is a copy of the start
    assert "full fine-tuning" in (out / "README.md").read_text()
    policy = LocalPolicy.from_adapter("ignored-base-name", folder, device=None, max_new_tokens=4)
    assert isinstance(policy.ask(ISSUES[0]), str)
    # evaluation takes the folder as a policy of its own (it is its own base; no LoRA config is asked for)
    from types import SimpleNamespace

    from tasks.clarifiers.question_methods import check_method_files
    from tasks.training.policy import adapter_base

    assert adapter_base(folder) == str(folder)
    check_method_files("policy", SimpleNamespace(adapter=str(folder)), tmp_path, "evaluate.swe.methods[0]")


def test_params_keys_select_the_update_and_full_fine_tuning():
    from tasks.params import TrainingParams

    default = TrainingParams()
    assert default.profile_overrides() == {}
    profile = get_profile("cpu", default.profile_overrides())
    assert profile.grpo.update == "trl_grpo" and profile.lora.enabled  # the default run is unchanged
    chosen = TrainingParams(grpo_update="reference_reinforce", lora=False, overrides={"grpo": {"max_steps": 3}})
    profile = get_profile("cpu", chosen.profile_overrides())
    assert profile.grpo.update == "reference_reinforce" and not profile.lora.enabled and profile.grpo.max_steps == 3
    gpu = get_profile("gpu")
    assert gpu.grpo.update == "reference_reinforce" and not gpu.grpo.use_vllm
    assert (gpu.grpo.num_generations, gpu.grpo.learning_rate, gpu.grpo.beta) == (8, 5e-6, 0.05)
    assert (gpu.grpo.temperature, gpu.grpo.top_p, gpu.grpo.max_completion_length) == (0.9, 0.9, 256)
    with pytest.raises(Exception, match="use_vllm"):
        get_profile("gpu", {"grpo": {"use_vllm": True}})


def test_one_cycle_schedule_rises_over_warmup_then_falls_to_a_thousandth():
    from tasks.training.reinforce import one_cycle_factor

    f = [one_cycle_factor(s, steps=10, warmup=5) for s in range(10)]
    assert f[0] == pytest.approx(0.1) and f[5] == pytest.approx(1.0) and f[9] == pytest.approx(0.001)
    assert f[:6] == sorted(f[:6]) and f[5:] == sorted(f[5:], reverse=True)
    assert one_cycle_factor(0, steps=2, warmup=0) == pytest.approx(1.0)  # a 2-step run starts at the peak
