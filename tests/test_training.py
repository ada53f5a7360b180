"""SFT, GRPO and the policy on a tiny Llama built from a config (no downloads); SmolLM2 runs are ``slow``."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import yaml

from tasks.errors import InputError
from tasks.training import (
    SYSTEM_PROMPT,
    LocalPolicy,
    TrainProfile,
    accelerate_config_text,
    completion_text,
    get_profile,
    grpo_row,
    resolve_reward_weights,
    sft_row,
    train_grpo,
    train_sft,
)
from tasks.training.policy import Clarifier, adapter_base
from tasks.training.profiles import cpu_has_native_bf16

pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Hand-written toy issues and questions (no project data).
ISSUES = [
    "The export command crashes when the output folder has a space in its name.",
    "Parsing a config file with tabs raises an error in the loader module.",
    "The cache grows without limit after many requests to the image service.",
    "Sorting a table by date puts empty cells first instead of last.",
]
QUESTIONS = [
    "1. Which version are you running?\n2. What is the full error message?",
    "1. Which loader function raises the error?\n2. Can you share a small config that fails?",
    "1. Which cache setting is in use?\n2. How many requests until memory runs out?",
    "1. Which table widget is affected?\n2. What should happen to empty cells?",
]


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(ISSUES + QUESTIONS + [SYSTEM_PROMPT, "system user assistant"], trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                   unk_token="<|endoftext|>", pad_token="<pad>")
    fast.chat_template = CHATML
    return fast


@pytest.fixture(scope="module")
def tokenizer():
    return _tokenizer()


def _tiny_llama(tokenizer):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    return LlamaForCausalLM(config)


def _tiny_profile(**grpo) -> TrainProfile:
    return get_profile("cpu", {
        "sft": {"max_steps": 2, "batch_size": 2, "max_length": 256, "learning_rate": 1e-2},
        "grpo": {"max_steps": 2, "batch_size": 4, "num_generations": 4, "max_completion_length": 12,
                 "max_prompt_tokens": 96, "learning_rate": 1e-2, "scale_rewards": "group", **grpo},
    })


def _lora_b_nonzero(adapter: Path) -> bool:
    from safetensors.torch import load_file

    weights = load_file(str(adapter / "adapter_model.safetensors"))
    b = [t for k, t in weights.items() if "lora_B" in k]
    return bool(b) and any(float(t.abs().sum()) > 0 for t in b)


# ------------------------------------------------------------------ reward functions (per stage + gated total)


def length_stage(completions, **kwargs):
    return [min(len(completion_text(c)) / 40.0, 1.0) for c in completions]


def numbered_stage(completions, **kwargs):
    return [1.0 if completion_text(c).lstrip().startswith("1.") else 0.0 for c in completions]


def skipped_stage(completions, **kwargs):
    return [None for _ in completions]  # a gated stage that no sample reached


def total(completions, topic, **kwargs):
    assert len(topic) == len(completions)  # extra dataset columns arrive aligned with the completions
    return [0.5 * a + 0.5 * b for a, b in zip(length_stage(completions), numbered_stage(completions), strict=True)]


# ------------------------------------------------------------------ profiles


def test_profiles_validate_and_override():
    cpu = get_profile()
    assert cpu.name == "cpu" and cpu.use_cpu and cpu.dtype == "float32"
    assert cpu.bf16 is cpu_has_native_bf16()  # auto: bf16 autocast where the CPU has it, resolved to a bool
    assert cpu.lora.r == 8 and cpu.lora.target_modules == ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert (cpu.sft.max_steps, cpu.sft.batch_size, cpu.sft.max_length, cpu.sft.learning_rate) == (12, 4, 384, 1e-3)
    assert (cpu.grpo.num_generations, cpu.grpo.max_completion_length, cpu.grpo.temperature) == (4, 64, 0.9)
    gpu = get_profile("gpu")
    assert gpu.model == "Qwen/Qwen3-8B" and gpu.requires_gpu and gpu.bf16
    assert gpu.grpo.update == "reference_reinforce" and cpu.grpo.update == "trl_grpo"  # CLARITI's update on gpu
    assert (gpu.grpo.num_generations, gpu.grpo.learning_rate, gpu.grpo.beta) == (8, 5e-6, 0.05)
    assert (gpu.grpo.temperature, gpu.grpo.max_completion_length) == (0.9, 256)
    long = get_profile("cpu-long")
    assert long.model == cpu.model and long.lora == cpu.lora  # the 20-step SFT it was measured on
    assert long.sft == cpu.sft.model_copy(update={"max_steps": 20})
    assert (long.grpo.prompts, long.grpo.max_steps, long.grpo.beta, long.grpo.scale_rewards) == (None, 30, 0.0, "group")
    # one group of G completions per micro-batch, 4 groups per optimizer step
    assert long.grpo.batch_size == long.grpo.num_generations and long.grpo.gradient_accumulation_steps == 4
    assert (cpu.grpo.prompts, gpu.grpo.prompts) == (16, None)
    learn = get_profile("grpo-long")  # the smaller SFT, then GRPO on the reward as the held-out curve scores it
    assert learn.model == cpu.model and learn.lora == cpu.lora and learn.sft.max_steps == 9
    assert learn.sft.model_copy(update={"max_steps": 12}) == cpu.sft
    assert (learn.grpo.prompts, learn.grpo.max_steps, learn.grpo.learning_rate) == (None, 20, 1e-3)
    assert learn.grpo.reward_as_evaluated and not cpu.grpo.reward_as_evaluated
    tuned = get_profile("gpu", {"grpo": {"max_steps": 3}, "lora": {"r": 4}})
    assert tuned.grpo.max_steps == 3 and tuned.grpo.num_generations == 8 and tuned.lora.r == 4
    with pytest.raises(InputError, match="grpo"):
        get_profile("cpu", {"grpo": {"batch_size": 6, "num_generations": 4}})
    with pytest.raises(InputError, match="bf16"):
        get_profile("cpu", {"bf16": True, "dtype": "float16"})
    assert get_profile("cpu", {"bf16": True}).bf16 is True and get_profile("cpu", {"bf16": False}).bf16 is False
    assert get_profile("cpu-long").bf16 is False  # the learning profiles keep the fp32 they were measured in
    with pytest.raises(InputError, match="unknown training profile"):
        get_profile("tpu")
    with pytest.raises(InputError, match=re.escape("sft.nope")):
        get_profile("cpu", {"sft": {"nope": 1}})


def test_gpu_profile_renders_accelerate_config():
    config = yaml.safe_load(accelerate_config_text(get_profile("gpu")))
    assert config["mixed_precision"] == "bf16" and config["use_cpu"] is False
    assert config["num_processes"] == 1 and config["distributed_type"] == "NO"
    multi = yaml.safe_load(accelerate_config_text(get_profile("gpu", {"accelerate": {"num_processes": 4}})))
    assert multi["distributed_type"] == "MULTI_GPU" and multi["num_processes"] == 4


def test_reward_weights_resolution():
    names = ["length_stage", "numbered_stage", "total"]
    assert resolve_reward_weights(names, None) == [1.0, 1.0, 1.0]
    assert resolve_reward_weights(names, {"total": 1, "length_stage": 0, "numbered_stage": 0}) == [0.0, 0.0, 1.0]
    with pytest.raises(InputError, match="missing"):
        resolve_reward_weights(names, {"total": 1})
    with pytest.raises(InputError, match="all reward weights are 0"):
        resolve_reward_weights(names, [0, 0, 0])


def test_bad_rows_name_the_record():
    with pytest.raises(InputError, match="record 1: field 'completion'"):
        train_sft(object(), None, [sft_row("a", "1. b?"), {"prompt": "x", "completion": ""}], get_profile(), "x")
    with pytest.raises(InputError, match="field 'prompt'"):
        train_grpo(object(), None, [{"prompt": ""}], [total], get_profile(), "x")


def test_sft_max_length_too_short_is_one_clear_error(tmp_path, tokenizer):
    profile = get_profile("cpu", {"sft": {"max_steps": 1, "max_length": 24}})
    with pytest.raises(InputError, match=re.escape("sft.max_length")):
        train_sft(_tiny_llama(tokenizer), tokenizer, [sft_row(ISSUES[0], QUESTIONS[0])], profile, tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_gpu_profile_refuses_without_cuda(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(InputError, match="needs a CUDA device"):
        train_sft("Qwen/Qwen3-8B", None, [sft_row(ISSUES[0], QUESTIONS[0])], get_profile("gpu"), tmp_path / "o")


# ------------------------------------------------------------------ training on the tiny model


def _check_common(out: Path, result) -> list[dict]:
    adapter = out / "adapter"
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    assert (adapter / "tokenizer.json").is_file()
    assert _lora_b_nonzero(adapter), "LoRA B matrices are still zero: the adapter did not train"
    for name in ("README.md", "loss.png", "log_history.json", "trainer_state.json"):
        assert (out / name).is_file(), name
    assert not (out / "timing.json").exists()  # wall-clock seconds stay out of the DVC output (identical reruns)
    assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    history = json.loads((out / "log_history.json").read_text())
    assert not any(k.endswith(("_runtime", "_per_second")) or k == "step_time" for e in history for k in e)
    assert result.steps == 2 and result.trainable_params > 0
    card = (out / "README.md").read_text()
    assert "training rows" in card and "optimiser steps | 2" in card
    return history


def test_sft_two_steps_tiny_llama(tmp_path, tokenizer):
    rows = [sft_row(i, q) for i, q in zip(ISSUES, QUESTIONS, strict=True)]
    out = tmp_path / "sft"
    result = train_sft(_tiny_llama(tokenizer), tokenizer, rows, _tiny_profile(), out)
    history = _check_common(out, result)
    assert result.final_loss is not None and any("loss" in e for e in history)
    assert result.n_rows == 4 and result.kind == "sft"
    assert "in-memory LlamaForCausalLM" in (out / "README.md").read_text()


def test_sft_messages_rows(tmp_path, tokenizer):
    rows = [{"messages": [{"role": "user", "content": i}, {"role": "assistant", "content": q}]}
            for i, q in zip(ISSUES, QUESTIONS, strict=True)]
    profile = get_profile("cpu", {"sft": {"max_steps": 1, "batch_size": 2, "max_length": 64}})
    result = train_sft(_tiny_llama(tokenizer), tokenizer, rows, profile, tmp_path / "sft")
    assert result.steps == 1 and (tmp_path / "sft" / "adapter" / "adapter_model.safetensors").is_file()


def test_grpo_two_steps_logs_every_reward(tmp_path, tokenizer):
    rows = [grpo_row(issue, topic=f"t{n}") for n, issue in enumerate(ISSUES)]
    out = tmp_path / "grpo"
    weights = {"length_stage": 0.0, "numbered_stage": 0.0, "skipped_stage": 0.0, "total": 1.0}
    funcs = [length_stage, numbered_stage, skipped_stage, total]
    result = train_grpo(_tiny_llama(tokenizer), tokenizer, rows, funcs,
                        _tiny_profile(), out, reward_weights=weights)
    history = _check_common(out, result)
    for name in ("length_stage", "numbered_stage", "total"):
        assert any(f"rewards/{name}/mean" in e for e in history), name
        assert name in result.final_rewards
    assert any("rewards/skipped_stage/mean" in e for e in history) and "skipped_stage" not in result.final_rewards
    # zero-weight functions are logged but only the total drives the advantage: the logged reward equals it
    for entry in history:
        if "reward" in entry and "rewards/total/mean" in entry:
            assert entry["reward"] == pytest.approx(entry["rewards/total/mean"], abs=1e-6)
    assert (out / "rewards.png").read_bytes()[:4] == b"\x89PNG"
    assert result.reward_weights == weights
    assert "`length_stage` | 0 |" in (out / "README.md").read_text()


# ------------------------------------------------------------------ policy


def test_policy_ask_on_tiny_model(tmp_path, tokenizer):
    rows = [sft_row(i, q) for i, q in zip(ISSUES, QUESTIONS, strict=True)]
    profile = get_profile("cpu", {"sft": {"max_steps": 1, "batch_size": 2, "max_length": 256}})
    train_sft(_tiny_llama(tokenizer), tokenizer, rows, profile, tmp_path / "sft")
    policy = LocalPolicy.from_adapter(_tiny_llama(tokenizer), tmp_path / "sft" / "adapter", max_new_tokens=8)
    assert isinstance(policy, Clarifier)
    answer = policy.ask(ISSUES[0])
    assert isinstance(answer, str)
    many = policy.ask_many(ISSUES[:3])
    assert len(many) == 3 and all(isinstance(a, str) for a in many)
    assert many[0] == answer  # greedy and left-padded: batching does not change the answer
    base = LocalPolicy.from_adapter(_tiny_llama(tokenizer), None, tokenizer=tokenizer, max_new_tokens=4)
    assert isinstance(base.ask(ISSUES[1]), str)
    assert adapter_base(tmp_path / "sft" / "adapter").startswith("in-memory")


# ------------------------------------------------------------------ SmolLM2 (slow)


def trivial_reward(completions, **kwargs):
    return [float(len(completion_text(c)) % 7) / 7.0 for c in completions]


@pytest.mark.slow
def test_smollm2_grpo_two_steps_timed(tmp_path):
    profile = get_profile("cpu", {"grpo": {"max_steps": 2}})
    rows = [grpo_row(issue) for issue in ISSUES]
    start = time.perf_counter()
    result = train_grpo("smollm2-135m-instruct", None, rows, [trivial_reward], profile, tmp_path / "grpo")
    wall = time.perf_counter() - start
    print(f"\nSmolLM2 GRPO: {result.seconds_per_step:.1f} s/step ({result.seconds:.1f} s train, {wall:.1f} s total; "
          f"G={profile.grpo.num_generations}, {profile.grpo.max_completion_length} new tokens)")
    assert result.steps == 2 and "rewards/trivial_reward/mean" in (tmp_path / "grpo" / "log_history.json").read_text()
    assert adapter_base(result.adapter_dir) == "smollm2-135m-instruct"
    policy = LocalPolicy.from_adapter(None, result.adapter_dir, max_new_tokens=32)
    assert isinstance(policy.ask(ISSUES[0]), str)


def test_stacked_adapters_are_listed_relative_to_the_adapter(tmp_path):
    import json

    import pytest

    from tasks.errors import InputError
    from tasks.training.policy import STACK_FILE, stacked_on

    (tmp_path / "sft" / "adapter").mkdir(parents=True)
    (tmp_path / "sft" / "adapter" / "adapter_config.json").write_text("{}")
    (tmp_path / "grpo" / "adapter").mkdir(parents=True)
    assert stacked_on(tmp_path / "grpo" / "adapter") == []
    (tmp_path / "grpo" / STACK_FILE).write_text(json.dumps({"adapters": ["../sft/adapter"]}))
    assert stacked_on(tmp_path / "grpo" / "adapter") == [(tmp_path / "sft" / "adapter").resolve()]
    (tmp_path / "grpo" / STACK_FILE).write_text(json.dumps({"adapters": ["../missing/adapter"]}))
    with pytest.raises(InputError, match="stacked adapter not found"):
        stacked_on(tmp_path / "grpo" / "adapter")


def test_models_are_built_one_at_a_time(monkeypatch, tmp_path) -> None:
    """No two threads may build a model at once, whatever the model: policies and the MiniLM embedder load from
    evaluation worker threads, and transformers' meta-device initialisation is process-wide (a fresh-clone `make run`
    failed in evaluate@optimization with "Cannot copy out of meta tensor" while both were loading)."""
    import threading
    import time

    import transformers

    from tasks.llm import embeddings
    from tasks.llm.loading import MODEL_LOAD_LOCK
    from tasks.training import policy as policy_module

    active, overlaps = [0], []

    def building(*args, **kwargs):
        active[0] += 1
        overlaps.append(active[0])
        time.sleep(0.05)
        active[0] -= 1
        raise RuntimeError("stop after the load")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", building)
    monkeypatch.setattr(embeddings, "MiniLM", building)

    def load_policy() -> None:
        with pytest.raises(RuntimeError, match="stop after the load"):
            policy_module.LocalPolicy.from_adapter("smollm2-135m-instruct", None)

    def load_embedder(k: int) -> None:
        with pytest.raises(RuntimeError, match="stop after the load"):
            embeddings.Embedder(cache_path=tmp_path / f"e{k}.sqlite")._load()

    threads = [threading.Thread(target=load_policy) for _ in range(3)]
    threads += [threading.Thread(target=load_embedder, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [1] * 6
    assert MODEL_LOAD_LOCK.acquire(blocking=False)  # released again
    MODEL_LOAD_LOCK.release()


def test_the_default_embedder_is_one_instance_across_threads(monkeypatch) -> None:
    import threading
    import time

    from tasks.llm import embeddings

    made = []

    class Slow:
        def __init__(self):
            time.sleep(0.05)  # wide window for a second thread to arrive first too
            made.append(self)

    monkeypatch.setattr(embeddings, "Embedder", Slow)
    monkeypatch.setattr(embeddings, "_default", embeddings.ProcessDefault(lambda: embeddings.Embedder()))
    got = []
    threads = [threading.Thread(target=lambda: got.append(embeddings.default_embedder())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and all(g is made[0] for g in got)


def test_grpo_trains_on_the_evaluated_reward_when_the_profile_asks():
    from flows.train import grpo_reward
    from tasks.rewards.config import RewardConfig
    from tasks.training.profiles import get_profile

    settings = RewardConfig()
    assert grpo_reward(settings, get_profile("cpu")) is settings  # the public rule: siblings and the cache
    aligned = grpo_reward(settings, get_profile("cpu", {"grpo": {"reward_as_evaluated": True}}))
    assert (aligned.diversity.siblings, aligned.diversity.cache_size) == (False, 0)
    assert (settings.diversity.siblings, settings.diversity.cache_size) == (True, 2)



def test_a_bf16_policy_merges_its_adapter_in_float32_first(tmp_path, monkeypatch):
    """A LoRA delta far below bf16's resolution survives: the adapter is merged into float32 weights, then cast (a
    merge into bf16 weights rounds it away); ``auto`` generates in float32 on the CPU."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from tasks.training import models
    from tasks.training.models import inference_dtype, resolve_model_path

    monkeypatch.setattr(models, "cuda_available", lambda: False)
    assert inference_dtype("auto") == "float32" and inference_dtype("bfloat16") == "bfloat16"
    auto = LocalPolicy.from_adapter("smollm2-135m-instruct", None, dtype="auto", device=None)
    assert auto.model.dtype == torch.float32
    monkeypatch.setattr(models, "cuda_available", lambda: True)
    assert inference_dtype("auto") == "bfloat16"

    path = resolve_model_path("smollm2-135m-instruct")
    base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    peft = get_peft_model(base, LoraConfig(r=2, lora_alpha=2, target_modules=["q_proj"], init_lora_weights=False))
    for name, weight in peft.named_parameters():
        if "lora_B" in name:
            torch.nn.init.constant_(weight, 1e-3)
    peft.save_pretrained(tmp_path / "adapter")
    merged32 = peft.merge_and_unload().model.layers[0].self_attn.q_proj.weight.detach()
    policy = LocalPolicy.from_adapter("smollm2-135m-instruct", tmp_path / "adapter", dtype="bfloat16", device=None)
    weight = policy.model.model.layers[0].self_attn.q_proj.weight
    assert weight.dtype == torch.bfloat16
    assert torch.equal(weight, merged32.to(torch.bfloat16))
    from peft import PeftModel

    plain = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
    assert not torch.equal(weight, plain.model.layers[0].self_attn.q_proj.weight)  # the delta is there
    in_bf16 = PeftModel.from_pretrained(plain, str(tmp_path / "adapter")).merge_and_unload()
    assert not torch.equal(weight, in_bf16.model.layers[0].self_attn.q_proj.weight)  # what a bf16 merge would give


def test_a_recipe_file_is_a_profile_and_its_name_must_be_its_file_name(tmp_path, monkeypatch):
    from tasks.registry import Registry
    from tasks.training import profiles

    (tmp_path / "tiny.yaml").write_text("name: tiny\nsft: {max_steps: 1}\n")
    monkeypatch.setattr(profiles, "RECIPES", tmp_path)
    monkeypatch.setattr(profiles, "PROFILES", Registry("training profile", discover=profiles._load_recipes))
    tiny = profiles.get_profile("tiny")
    assert tiny.sft.max_steps == 1 and tiny.sft.batch_size == profiles.SFTSettings().batch_size
    with pytest.raises(InputError, match="unknown training profile 'cpu'"):
        profiles.get_profile("cpu")  # only what the folder holds
    (tmp_path / "other.yaml").write_text("name: tiny\n")
    monkeypatch.setattr(profiles, "PROFILES", Registry("training profile", discover=profiles._load_recipes))
    with pytest.raises(InputError, match=r"other\.yaml.*name must be its file name"):
        profiles.get_profile("tiny")
    (tmp_path / "other.yaml").write_text("name: other\nsft: {max_steps: 0}\n")  # refused when read, naming the field
    monkeypatch.setattr(profiles, "PROFILES", Registry("training profile", discover=profiles._load_recipes))
    with pytest.raises(InputError, match=r"other\.yaml: field 'sft\.max_steps'"):
        profiles.get_profile("tiny")
