"""The per-step progress line that SFT and GRPO print (their trainers run without tqdm)."""

from types import SimpleNamespace

from tasks.training.progress import progress_callback, progress_line


def test_progress_line_shows_step_loss_reward_and_time_left():
    line = progress_line("grpo", 3, 30, {"loss": 0.0123, "reward": 0.41234, "grad_norm": 1.0}, 104.2)
    assert line == "grpo step 3/30: loss 0.0123, reward 0.4123 | 104.2 s/step, 47 min left"


def test_progress_line_without_reward_or_loss():
    assert progress_line("sft", 20, 20, {"learning_rate": 1e-3}, 5.0) == \
        "sft step 20/20: no loss logged | 5.0 s/step, 0 min left"


def test_callback_prints_one_line_per_training_log(capsys):
    callback = progress_callback("sft")
    state = SimpleNamespace(global_step=0, max_steps=4)
    callback.on_train_begin(None, state, None)
    state.global_step = 2
    callback.on_log(None, state, None, logs={"loss": 1.5})
    callback.on_log(None, state, None, logs={"train_runtime": 9.0})  # the summary log at the end: no line
    out = capsys.readouterr().err.splitlines()
    assert len(out) == 1 and out[0].startswith("sft step 2/4: loss 1.5 | ")


def test_lines_reach_stderr_bare_inside_a_flow_that_logs_prints(prefect_api, capfd):
    """The flows run with ``log_prints``: Prefect's print turns ``print(..., file=sys.stderr)`` into a log record
    (dropped at PREFECT_LOGGING_LEVEL=WARNING, and never the bare line); ``say`` writes the line itself."""
    from prefect import flow

    from tasks.training.progress import say

    @flow(name="progress-under-log-prints", log_prints=True)
    def run() -> None:
        say("grpo step 1/2: loss 0.5 | 3.0 s/step, 0 min left")

    run()
    assert "grpo step 1/2: loss 0.5 | 3.0 s/step, 0 min left" in capfd.readouterr().err.splitlines()
