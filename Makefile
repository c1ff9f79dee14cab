# The workbook's commands. On a fresh machine `make test` creates .venv, installs, runs every test;
# `make run` runs every notebook with PRESET (default cpu) into runs/, with HTML copies and figures.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PRESET ?= cpu
# figures of the default preset go to the README gallery; other presets keep theirs beside their runs
FIGURES ?= $(if $(filter cpu,$(PRESET)),$(CURDIR)/docs/figures,$(CURDIR)/runs/figures-$(PRESET))
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
STAMP := $(VENV)/.installed

# Data root: the shared reference copy when it exists beside the checkout, else data/.
SHARED_DATA := $(wildcard $(abspath ../shared/data))
WORKBOOK_DATA ?= $(if $(SHARED_DATA),$(SHARED_DATA),$(CURDIR)/data)
export WORKBOOK_DATA

.PHONY: install test lint run bench strip clean-cache help

help:
	@echo "make test   create $(VENV), install, lint and run the test suite"
	@echo "make run    run every notebook with PRESET=$(PRESET) into runs/ (+ HTML, figures in docs/figures/)"
	@echo "make bench  timing and memory benchmarks (figures quoted in README.md)"
	@echo "make strip  strip outputs from the notebooks before committing"

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check lib tests benchmarks notebooks

test: $(STAMP) lint
	$(BIN)/python -m pytest

run: $(STAMP)
	mkdir -p runs $(FIGURES)
	@for nb in $(NOTEBOOKS); do \
		name=$$(basename $$nb .ipynb); \
		echo "== $$name (PRESET=$(PRESET))"; \
		$(BIN)/python -m lib.report $$nb runs -p PRESET $(PRESET) -p EXPLORER False \
			-p FIGURES_DIR $(FIGURES) || exit 1; \
	done

BENCHMARKS := $(sort $(wildcard benchmarks/bench_*.py))

bench: $(STAMP)
	@for b in $(BENCHMARKS); do echo "== $$b"; $(BIN)/python $$b || exit 1; done

strip: $(STAMP)
	$(BIN)/nbstripout --keep-id $(NOTEBOOKS)

clean-cache:
	rm -rf data/cache
