# Two entry points for a fresh machine with only python3 and make:
#   make run    - the main job: a real agent run on the bundled fixture
#   make check  - every check: ruff lint, ruff format --check, pyright strict, pytest with
#                 branch coverage (fails under 95% of src/)
# Both bootstrap a local .venv from the committed, hash-pinned lock files.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check --quiet
export PYRIGHT_PYTHON_CACHE_DIR := $(CURDIR)/$(VENV)/.pyright-cache

.PHONY: run check lint format-check typecheck test fuzz bench lock format clean exports error-codes

# Every venv first upgrades pip to the pinned release (requirements/pip.txt): the pip that
# `python3 -m venv` brings (23.x here) rejects a hash-pinned lock once a newer release exists
# of a package that a dependency requires with extras (uvicorn[standard]).
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --require-hashes -r requirements/pip.txt

$(VENV)/.build-installed: requirements/build.txt pyproject.toml | $(BIN)/python
	$(PIP) install --require-hashes -r requirements/build.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.dev-installed: requirements/dev.txt $(VENV)/.build-installed examples/hello-extension/pyproject.toml
	$(PIP) install --require-hashes -r requirements/dev.txt
	# The example extension package (examples/hello-extension), found through its entry point.
	$(PIP) install --no-deps --no-build-isolation -e examples/hello-extension
	touch $@

run: $(VENV)/.build-installed
	$(BIN)/tether run

check: lint format-check typecheck test

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

format-check: $(VENV)/.dev-installed
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev-installed
	$(BIN)/pyright

test: $(VENV)/.dev-installed
	rm -f .coverage .coverage.*
	PYTHONASYNCIODEBUG=1 PYTHONDEVMODE=1 $(BIN)/python -m coverage run -m pytest -q
	$(BIN)/python -m coverage combine -q
	$(BIN)/python -m coverage report

format: $(VENV)/.dev-installed
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Regenerate the lazy package root from the modules' __all__.
exports: $(VENV)/.build-installed
	$(BIN)/python scripts/generate_init.py

# Regenerate docs/ERROR_CODES.md from the code Literals and the advice table in the script.
error-codes: $(VENV)/.build-installed
	$(BIN)/python scripts/generate_error_codes.py

# Property-based tests with many more examples, plus the 10,000-run memory soak.
fuzz: $(VENV)/.dev-installed
	HYPOTHESIS_PROFILE=fuzz PYTHONASYNCIODEBUG=1 PYTHONDEVMODE=1 $(BIN)/python -m pytest -q \
	  -m "hypothesis or soak" --hypothesis-show-statistics -s

# Side-by-side benchmarks against the peers, in their own venv (never tether dependencies).
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: requirements/bench.txt pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip --disable-pip-version-check --quiet install --require-hashes -r requirements/pip.txt
	$(BENCH_VENV)/bin/python -m pip --disable-pip-version-check --quiet install --require-hashes -r requirements/bench.txt
	$(BENCH_VENV)/bin/python -m pip --disable-pip-version-check --quiet install --no-deps --no-build-isolation -e .
	touch $@

# bench_coding's grep goal is measured against ripgrep and bench_sandbox runs bubblewrap:
# installed here when missing and this is root on a Debian-like machine (otherwise those
# goals are reported SKIPPED).
bench: $(BENCH_VENV)/.installed
	@command -v rg >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get install -y -q ripgrep >/dev/null; } || echo "ripgrep not installed: its goal is SKIPPED"
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get install -y -q bubblewrap >/dev/null; } || echo "bubblewrap not installed: its goal is SKIPPED"
	$(BENCH_VENV)/bin/python benchmarks/run_all.py

# Regenerate the lock files (needs network to the package index).
lock:
	$(PYTHON) -m venv $(VENV)/lock-tool
	$(VENV)/lock-tool/bin/python -m pip install --quiet uv
	cd requirements && for f in pip build dev bench; do \
	  ../$(VENV)/lock-tool/bin/uv pip compile --quiet --python-version 3.11 --generate-hashes \
	    --no-header $$f.in -o $$f.txt; done

clean:
	rm -rf $(VENV) $(BENCH_VENV)
