# flashprof: a menu over `flashprof <verb>` (python -P -m flashprof: the checkout root never on
# sys.path, so a target importing e.g. Hugging Face's `kernels` gets that). Logic lives in Python.
#   make            list targets
#   make sass KERNEL=5 ARCH=sm_80     (defaults: KERNEL=6 SEQ=4096 DTYPE=fp16 SET=full ARCH=sm_90 A=5 B=6)
#   make setup GPU=1 WHEELS=.whl      (GPU machine: venv over the system's CUDA torch; wheels, no registry)
#   make profile TARGET=examples/triton_attention.py:attention   (your own fn(q, k, v) -> o; README)

KERNEL  ?= 6
SEQ     ?= 4096
DTYPE   ?= fp16
SET     ?= full
ARCH    ?= sm_90
A       ?= 5
B       ?= 6
REPORTS ?= reports/h200
# Which launch per-report charts and the summary are about: dominant (default for charts), N, or all.
LAUNCH  ?=
# Your own attention (profile, bench): path/to/file.py:fn or module:fn; empty = KERNEL.
TARGET  ?=
KERNEL_REGEX ?=
MAX_LAUNCHES ?= 8
SEQS    ?=

VENV    := .venv
VENV_PY := $(VENV)/bin/python
STAMP   := $(VENV)/.flashprof-installed
GPU_STAMP := $(VENV)/.flashprof-gpu
# `make setup GPU=1` makes the GPU venv; once made, every target keeps using it.
SETUP_STAMP = $(if $(or $(GPU),$(wildcard $(GPU_STAMP))),$(GPU_STAMP),$(STAMP))
# Targets without a setup prerequisite (the GPU ones) need the venv to exist already.
PY      = $(if $(wildcard $(VENV_PY)),$(VENV_PY),$(error no $(VENV) here: run 'make setup GPU=1' (GPU machine; add WHEELS=dir without a registry) or 'make setup' first))

# User values reach the recipes through the environment, quoted: a KERNEL such as
# "6; rm -rf /" is one argument that profiling/kernels reject, never shell code.
export KERNEL SEQ DTYPE SET ARCH A B REPORTS LAUNCH HTML WHEELS EXTRAS WORKERS TARGET KERNEL_REGEX MAX_LAUNCHES SEQS SPACE ROUNDS

.DEFAULT_GOAL := help
.PHONY: help setup doctor test test-fast figures report build profile bench gpu-session tune ceilings sass sass-diff sass-data gap summary notebook clean

help: ## list targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(SETUP_STAMP) ## create .venv once: flashprof[dev,notebook]; GPU=1 [WHEELS=dir] [EXTRAS=notebook]: over the system's torch

$(STAMP): pyproject.toml
	test -x $(VENV_PY) || python3 -m venv $(VENV) && $(VENV_PY) -m pip install -q -e '.[dev,notebook]' && touch $@

$(GPU_STAMP): pyproject.toml $(if $(EXTRAS),FORCE)
	python3 -m flashprof setup-gpu --venv $(VENV) --wheels "$$WHEELS" --extras "$$EXTRAS"

FORCE:

doctor: ## what this machine has (GPU, clocks, ncu, counters, ncu_report...) and what each target lacks
	$(if $(wildcard $(VENV_PY)),$(VENV_PY),python3) -m flashprof doctor

test: setup ## run the whole test suite (static builds use the venv's CUDA wheels)
	$(VENV_PY) -m pytest

test-fast: setup ## the fast tests alone (no 'slow' marker; under a minute on 2 cores)
	$(VENV_PY) -m pytest -m 'not slow'

# OUT only from the make command line: a GPU job's environment may carry its own $OUT.
export FIGURES_OUT := $(if $(filter command line,$(origin OUT)),$(OUT))

figures: setup ## draw the figures from REPORTS (others than reports/h200 go to figures/<folder>/ or OUT=)
	$(VENV_PY) -P -m flashprof figures --reports "$$REPORTS" $${FIGURES_OUT:+--out "$$FIGURES_OUT"} $${LAUNCH:+--launch "$$LAUNCH"}

report: setup ## one self-contained HTML page of REPORTS (report.html beside its figures; HTML=file.html elsewhere)
	$(VENV_PY) -P -m flashprof report "$$REPORTS" $${HTML:+--out "$$HTML"}

build: ## build kernel KERNEL as a torch extension (GPU machine)
	$(PY) -P -m flashprof build "$$KERNEL"

# One process: gate (in the profiled program), ncu, sidecar, summary, and the figures the new
# report changes (`make figures` redraws them all); the stages' seconds go to build/profile_timing.json.
profile: ## profile KERNEL (1-7, ref, cudnn, all) or TARGET=file.py:fn with Nsight Compute, then summarise and draw it
	$(PY) -P -m flashprof profile "$${TARGET:-$$KERNEL}" --seq "$$SEQ" --dtype "$$DTYPE" --set "$$SET" \
		--max-launches "$$MAX_LAUNCHES" $${KERNEL_REGEX:+--kernel-regex "$$KERNEL_REGEX"} --timing-json build/profile_timing.json

bench: ## benchmark kernels 1-7 (or TARGET=file.py:fn; SEQS=1024,4096) against the reference
	$(PY) -P -m flashprof bench $${TARGET:+--kernels "$$TARGET"} $${SEQS:+--seqs "$$SEQS"} $${ROUNDS:+--rounds "$$ROUNDS"}

gpu-session: ## on a GPU machine: build all, GPU tests, bench, profile all (logs in reports/<gpu>/logs)
	$(PY) -P -m flashprof session

tune: ## auto-tune kernel 7 on this GPU (WORKERS=n: worker processes, default one per GPU; SPACE=seed|extended|hopper; ROUNDS=n: interleaved repeats)
	$(PY) -P -m flashprof tune $${WORKERS:+--workers "$$WORKERS"} $${SPACE:+--space "$$SPACE"} $${ROUNDS:+--rounds "$$ROUNDS"}

ceilings: ## measure this GPU's ceilings (microbenchmarks, < 2 min) -> reports/<gpu>/ceilings.{json,csv}
	$(PY) -P -m flashprof ceilings

sass: setup ## registers, spills, smem and SASS opcodes of kernel KERNEL for ARCH
	$(VENV_PY) -P -m flashprof sass "$$KERNEL" --arch "$$ARCH"

sass-diff: setup ## SASS opcode deltas from kernel A to kernel B for ARCH
	$(VENV_PY) -P -m flashprof sass diff "$$A" "$$B" --arch "$$ARCH"

sass-data: setup ## regenerate the committed reports/sass/*.csv (kernels 1-7 x sm_80/86/90)
	$(VENV_PY) -P -m flashprof sass data

gap: ## where each kernel loses to the reference
	$(PY) -P -m flashprof gap

summary: ## one-table summary of REPORTS (LAUNCH=dominant|N|all)
	$(PY) -P -m flashprof summary "$$REPORTS" $${LAUNCH:+--launch "$$LAUNCH"}

notebook: setup ## open the stall-exploration notebook
	$(VENV_PY) -P -m flashprof notebook

clean: ## remove build caches (never reports/)
	rm -rf build .pytest_cache && find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
