# Two entry points for a new machine: `make run` (the main job on built-in defaults) and
# `make test` (lint, types and every test). Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# CPU build of torch from the local wheel first, so the extra never pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,torch]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/dlrig plan --workload resnet50 --budget 8000

lint: $(STAMP)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	scripts/ensure-chromium
	$(BIN)/pytest -n 2 -m "not serial" && $(BIN)/pytest -m serial

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
