# The two commands a newcomer needs: `make site` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: site test lint bench goldens serve clean

$(VENV)/bin/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

.venv: $(STAMP)

site: $(STAMP)
	$(BIN)/aicr-catalog build

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -m "not bench"

lint: $(STAMP)
	$(BIN)/ruff check generator tests
	$(BIN)/ruff format --check generator tests
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m pytest -m bench -s -p no:xdist

goldens: $(STAMP)
	$(BIN)/python -m pytest tests --update-goldens -p no:xdist

serve: $(STAMP)
	$(BIN)/aicr-catalog serve

clean:
	rm -rf site .cache build
