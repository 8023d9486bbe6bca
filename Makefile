# Two commands for a newcomer: `make demo` and `make test`. Both build .venv
# first, installing the CPU build of torch before the project so that pip never
# resolves torch to a multi-GB CUDA wheel.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.test-installed

.PHONY: venv demo test test-fast clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[test,ray]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rewardkit demo

# verl (its files only, --no-deps) for the compatibility tests: our ports of
# its scorers and its sandbox client are checked against verl's own code.
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q --no-deps "verl==0.9.1"
	touch $(TEST_STAMP)

# Everything CI runs: the fast suite, then the slow (multi-process, pip
# install, training) tests.
test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m "not slow"
	$(BIN)/python -m pytest -q -m slow

test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
