# Two commands for a newcomer: `make demo` and `make test`. Both build .venv
# first, installing the CPU build of torch before the project so that pip never
# resolves torch to a multi-GB CUDA wheel.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test test-fast clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rewardkit demo

# Everything CI runs: the fast suite, then the slow (multi-process, pip
# install, training) tests.
test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"
	$(BIN)/python -m pytest -q -m slow

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
