"""Policy generation: batched, sorted by length, stopped per sequence at the end of the answer, and torch's thread
count chosen from the free cores. The tiny Llama of test_training runs by default; SmolLM2 is ``slow``."""

from __future__ import annotations

import pytest

from tasks.training import threads
from tasks.training.policy import LocalPolicy, answer_end, cut_answer, list_end
from tests.test_training import ISSUES, _tiny_llama, _tokenizer

pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")

LISTS = [
    "1. Which version do you run?\n2. What is the full error?\n\nThese details help me reproduce it.",
    "Some questions first:\n\n1. Which file fails?\n\n2. Which platform?\n\nThanks, I can look then.",
    "1. Which file fails?\n   (the full path, if you can)\n\n   And the line.\n2. Which shell?\n\nNothing else.",
    "- Which loader function raises?\n- Can you share a config?\n\n**Note**: a small one is enough.",
    "1. Which version?\n2. Which error?",
    "No list here at all.\n\nJust prose, then more prose.",
]


def test_list_end_cuts_the_finished_list_only():
    assert cut_answer(LISTS[0]) == "1. Which version do you run?\n2. What is the full error?"
    # prose before the list stays; a blank line between items does not end it
    assert cut_answer(LISTS[1]) == "Some questions first:\n\n1. Which file fails?\n\n2. Which platform?"
    # an indented line after a blank continues the item
    assert cut_answer(LISTS[2]).endswith("2. Which shell?")
    assert cut_answer(LISTS[3]) == "- Which loader function raises?\n- Can you share a config?"
    assert cut_answer(LISTS[4]) == LISTS[4] and cut_answer(LISTS[5]) == LISTS[5]
    assert cut_answer(LISTS[0], at_list_end=False) == LISTS[0]
    assert cut_answer("1. A question?\nSTOP here", stop=["STOP"]) == "1. A question?"
    # a line still being generated is judged only once it is long enough (or complete)
    assert list_end("1. Which version?\n\nThe") is None
    assert list_end("1. Which version?\n\n2.") is None
    assert list_end("1. Which version?\n\nThe", final=True) == len("1. Which version?")


@pytest.mark.parametrize("text", LISTS)
@pytest.mark.parametrize("stop", [(), ("?\n",), ("full", "\n\n")])
def test_a_decision_on_a_prefix_holds_for_the_whole_text(text, stop):
    """What makes early stopping safe: once a prefix is done, it is cut where the complete text is cut."""
    whole = cut_answer(text, stop)
    for k in range(len(text) + 1):
        end, done = answer_end(text[:k], stop)
        if done:
            assert text[:end].strip() == whole, (k, text[:k])


def _plain(policy: LocalPolicy, issue: str, max_new_tokens: int) -> str:
    """One prompt, plain ``model.generate`` (greedy, no stopping criteria): the reference the batch must match."""
    import torch

    tok = policy.tokenizer
    enc = tok(policy._render(issue), return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = policy.model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                    pad_token_id=tok.pad_token_id)
    return tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


def _window(text: str) -> str | None:
    """Two characters from the middle of ``text`` without a replacement character (None when there are none)."""
    for k in range(len(text) // 2, len(text) - 1):
        if "\ufffd" not in text[k:k + 2] and text[k:k + 2].strip():
            return text[k:k + 2]
    return None


def test_batched_generation_equals_unbatched_cut_at_its_stop():
    tokenizer = _tokenizer()
    policy = LocalPolicy(_tiny_llama(tokenizer), tokenizer, settings=None)
    policy.settings = policy.settings.model_copy(update={"max_new_tokens": 12, "batch_size": 3})
    plain = [_plain(policy, issue, 12) for issue in ISSUES]
    # stop strings taken from the middle of two answers: those sequences end early, the others run on (never a
    # replacement character: a prefix that ends inside a multi-byte character decodes to one)
    stops = [w for t in plain[:2] for w in [_window(t)] if w]
    assert stops
    policy.settings = policy.settings.model_copy(update={"stop": stops})
    got = policy.ask_many(ISSUES)  # 4 issues of different lengths: sorted into two batches, answered in order
    assert got == [cut_answer(t, stops) for t in plain]
    assert policy.ask_many(ISSUES) == got  # deterministic
    assert policy.ask_many(ISSUES[::-1]) == got[::-1]


def test_the_stopping_criterion_ends_each_sequence_on_its_own():
    import torch

    from tasks.training.policy import GenerationSettings, _answer_stopper

    tok = _tokenizer()
    prompt = tok("system user", add_special_tokens=False)["input_ids"]
    answers = ["1. Which version?\n\nThese details help", "1. Which version?\n2. Which error"]
    generated = [tok(a, add_special_tokens=False)["input_ids"] for a in answers]
    width = max(map(len, generated))  # a sequence that is done is padded on the right, as generate pads it
    ids = torch.tensor([prompt + g + [tok.pad_token_id] * (width - len(g)) for g in generated])
    stopper = _answer_stopper(tok, len(prompt), [tok.eos_token_id], GenerationSettings())
    done = stopper(ids, None)
    assert done.tolist() == [True, False]
    eos = torch.cat([ids, torch.tensor([[tok.pad_token_id], [tok.eos_token_id]])], dim=1)
    assert stopper(eos, None).tolist() == [True, True]


@pytest.mark.slow
def test_smollm2_batched_answers_equal_unbatched_ones():
    """The embedded SmolLM2, three short prompts, 40 new tokens: the batch (KV cache, left padding, sorted, stopped
    per sequence) returns what one-at-a-time plain generation returns up to where each answer ends."""
    policy = LocalPolicy.from_adapter("smollm2-135m-instruct", None, device=None, max_new_tokens=40, batch_size=3,
                                      stop=["\n\n"], progress=False)
    issues = ISSUES[:3]
    plain = [_plain(policy, issue, 40) for issue in issues]
    got = policy.ask_many(issues)
    assert got == [cut_answer(t, ["\n\n"]) for t in plain]
    assert any(len(a) < len(p.strip()) for a, p in zip(got, plain))  # at least one answer stopped early


# ------------------------------------------------------------------ threads


def _machine(monkeypatch, *, cores: int, load: float, running: float | None, own: float = 0.0):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(threads, "running_others", lambda *args: running)
    monkeypatch.setattr(threads, "own_load", lambda: own)


def test_free_cores_subtracts_other_processes_and_clamps(monkeypatch):
    _machine(monkeypatch, cores=8, load=3.2, running=2.2, own=1.0)
    assert threads.usable_cores() == 8
    assert threads.other_load() == pytest.approx(2.2)  # others' runnable threads now
    assert threads.free_cores() == 6
    _machine(monkeypatch, cores=2, load=1.8, running=0.0)  # the stage that just ended still in the load average
    assert threads.free_cores() == 2
    _machine(monkeypatch, cores=2, load=0.1, running=1.0)  # a competitor that just started: seen right away
    assert threads.free_cores() == 1
    _machine(monkeypatch, cores=4, load=40.0, running=30.0)
    assert threads.free_cores() == 1  # never below one
    _machine(monkeypatch, cores=4, load=0.0, running=None)
    assert threads.free_cores() == 4  # never above the usable cores
    assert threads.free_cores(cores=16, others=3.6) == 12


def test_configure_torch_threads_once_from_auto_or_the_environment(monkeypatch, capsys):
    import torch

    chosen: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", chosen.append)
    monkeypatch.setattr(threads, "_chosen", None)
    monkeypatch.delenv(threads.ENV, raising=False)
    _machine(monkeypatch, cores=4, load=1.0, running=1.0)
    assert threads.configure_torch_threads() == 4 and chosen == [4]  # every core, whatever else runs
    assert threads.configure_torch_threads(1) == 4 and chosen == [4]  # once per process
    assert "torch threads: 4 (every usable core)" in capsys.readouterr().err
    assert threads.configure_torch_threads("auto", force=True) == 3
    assert "torch threads: 3 (auto: 4 usable cores" in capsys.readouterr().err
    assert threads.configure_torch_threads(2, force=True) == 2
    monkeypatch.setenv(threads.ENV, "5")
    assert threads.configure_torch_threads("auto", force=True) == 5 and chosen[-1] == 5
    monkeypatch.setenv(threads.ENV, "auto")
    assert threads.configure_torch_threads(force=True) == 3
    monkeypatch.setenv(threads.ENV, "cores")
    assert threads.configure_torch_threads("auto", force=True) == 4
    monkeypatch.setenv(threads.ENV, "none")
    with pytest.raises(ValueError, match="positive integer"):
        threads.configure_torch_threads(force=True)
    monkeypatch.setattr(threads, "_chosen", None)


def test_generation_takes_the_free_cores_and_restores_the_training_count(monkeypatch):
    """The benchmark's answer (benchmarks/results/torch_threads/threads.json): a generation phase takes the cores
    free when it starts (one of two beside a CPU-bound job, both alone) and gives the count back when it ends."""
    import torch

    monkeypatch.delenv(threads.GENERATE_ENV, raising=False)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(threads, "running_others", lambda *args: 0.0)
    assert threads.generation_threads() == 2
    monkeypatch.setattr(threads, "running_others", lambda *args: 1.0)
    assert threads.generation_threads() == 1
    monkeypatch.setenv(threads.GENERATE_ENV, "3")
    assert threads.generation_threads() == 3
    before = torch.get_num_threads()
    with threads.torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_grpo_sampling_runs_on_the_free_cores_and_the_update_on_the_training_threads(monkeypatch):
    """TRL's sampling inside a GRPO step is a generation phase of its own (beside a competing job both cores made it
    3x slower); the loss and the update keep the training count."""
    import torch

    from tasks.training.trainers import _sampling_on_free_cores

    class Trainer:  # the one method of TRL's GRPOTrainer that the subclass replaces
        def _generate_single_turn(self, prompt_ids):
            return torch.get_num_threads(), prompt_ids

    monkeypatch.delenv(threads.GENERATE_ENV, raising=False)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(threads, "running_others", lambda *args: 1.0)  # one core taken by another process
    with threads.torch_threads(2):
        assert _sampling_on_free_cores(Trainer)()._generate_single_turn([7]) == (1, [7])
        assert torch.get_num_threads() == 2


def test_a_training_step_gives_the_same_weights_on_one_thread_and_on_two():
    """Why training may take the free cores step by step (tasks/training/threads.py: step_threads_callback): LoRA
    steps (forward, backward, AdamW) on one thread and on two give the same weights to the bit, in fp32 and under
    bf16 autocast. The SFT stage's adapter on SmolLM2 had the same md5 both ways; this checks a small Llama of
    the same architecture, with shapes large enough for torch to split its kernels over threads."""
    import hashlib

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    def train(n_threads: int, bf16: bool) -> str:
        with threads.torch_threads(n_threads):
            torch.manual_seed(0)
            config = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
            model = get_peft_model(LlamaForCausalLM(config), LoraConfig(r=8, lora_alpha=16,
                                                                        target_modules=["q_proj", "v_proj"]))
            opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
            data = torch.Generator().manual_seed(1)
            for _ in range(2):
                ids = torch.randint(0, 512, (4, 192), generator=data)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    loss = model(input_ids=ids, labels=ids).loss
                loss.backward()
                opt.step()
                opt.zero_grad()
            digest = hashlib.sha256()
            for _, p in sorted(model.named_parameters()):
                if p.requires_grad:
                    digest.update(p.detach().float().numpy().tobytes())
            return digest.hexdigest()

    for bf16 in (False, True):
        assert train(1, bf16) == train(2, bf16)


def test_each_training_step_takes_the_free_cores_unless_the_count_is_pinned(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.delenv(threads.ENV, raising=False)
    monkeypatch.setattr(threads, "running_others", lambda *args: 1.0)  # a CPU-bound job beside the run
    assert threads.step_threads() == 1
    monkeypatch.setattr(threads, "running_others", lambda *args: 0.0)
    assert threads.step_threads() == 2
    monkeypatch.setenv(threads.ENV, "1")  # the test suite's pin (and a user's)
    monkeypatch.setattr(threads, "running_others", lambda *args: 0.0)
    assert threads.step_threads() == 1
    monkeypatch.setenv(threads.ENV, "cores")
    assert threads.step_threads() == 2
