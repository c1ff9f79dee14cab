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

# Data root: the shared reference copy beside the checkout, or beside the local checkout this one was cloned from
# (a clone made in a temporary folder finds it too), else data/.
ORIGIN := $(patsubst file://%,%,$(shell git config --get remote.origin.url 2>/dev/null))
SHARED_DATA := $(firstword $(wildcard $(abspath ../shared/data) $(if $(ORIGIN),$(abspath $(ORIGIN)/../shared/data))))
WORKBOOK_DATA ?= $(if $(SHARED_DATA),$(SHARED_DATA),$(CURDIR)/data)
export WORKBOOK_DATA

JUPYTER ?= $(BIN)/jupyter
LAB_ARGS ?=
# jupyter refuses to start as root without --allow-root (containers, cloud notebooks)
ALLOW_ROOT := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

.PHONY: install git-filter test test-browser lint run lab results book bench strip clean-cache help assignments sweep store \
	status verify

help:
	@echo "make install  create $(VENV), install (uv; INSTALLER=pip for pip alone), and set nbstripout as the git filter"
	@echo "make test   create $(VENV), install, lint and run the test suite on every core (TEST_WORKERS=1: one;"
	@echo "           TEST_ARGS=--run-browser: the browser tests too, in the same session, sharing its smoke runs)"
	@echo "make lab    start JupyterLab with WORKBOOK_DATA set (extra options: LAB_ARGS='--no-browser --port 8890')"
	@echo "make run    run every notebook with PRESET=$(PRESET) into runs/ (+ HTML, figures in docs/figures/);"
	@echo "           long stages come from results/NN/PRESET/ where stored (SOURCE=compute recomputes them)"
	@echo "make store NB=01  refresh notebook 01's stored results (results/01/PRESET/) from a from-scratch run"
	@echo "make status  which stored and cached results were computed with code that has changed since (lib/lineage.py)"
	@echo "make verify NB=01 STAGE='losses-C1-*'  recompute the stored entries matching STAGE alone, compare with the layer's"
	@echo "make results  regenerate docs/results/*.md and the README table from the executed notebooks in runs/"
	@echo "make book  the executed notebooks in runs/ (not run again), README and docs as a static site in $(BOOK)/"
	@echo "           (after make results, so that the results pages are from the same runs)"
	@echo "make test-browser  JupyterLab and the book in Debian's chromium (apt-get install chromium; minutes;"
	@echo "           READ_BOOK=runs/book: check the last make book instead of a book of the smoke runs)"
	@echo "make bench  timing and memory benchmarks (figures in benchmarks/README.md)"
	@echo "make assignments  build the otter-grader course assignments into runs/assignments/ (docs/teaching.md)"
	@echo "make sweep  a parameter sweep on Dask: GRID=$(GRID) [WORKERS=N] [SCHEDULER=tcp://host:8786]"
	@echo "make strip  strip outputs from the notebooks before committing"

install: $(STAMP) git-filter

# INSTALLER=uv (default): uv from PyPI installs the project several times faster than pip (README). torch comes
# first through pip, which finds the local CPU build through pip's own settings (uv does not read them); uv then
# keeps it. INSTALLER=pip installs everything with pip alone, as before.
# --compile-bytecode: uv writes no .pyc by default (pip does), and where PYTHONDONTWRITEBYTECODE is set (as on the
# build machine and CI) nothing ever writes them, so every process compiled scipy, pandas, matplotlib, ... from
# source: notebook 03's imports took 9 s instead of 4 s in each kernel the tests start (README, Development).
INSTALLER ?= uv
UV_VERSION := 0.13.9

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
ifeq ($(INSTALLER),uv)
	$(BIN)/python -m pip install uv==$(UV_VERSION) "$$(grep -o '"torch==[^"]*"' pyproject.toml | tr -d '"')"
	$(BIN)/uv pip install --python $(BIN)/python --compile-bytecode -e '.[dev]'
else
	$(BIN)/python -m pip install -e '.[dev]'
endif
	touch $(STAMP)

# Notebook outputs never reach a diff or a commit: git runs nbstripout on every *.ipynb it stages.
# --keep-id keeps the notebooks' stable cell ids (as `make strip` does). Idempotent; outside a git
# checkout (an unpacked archive) it does nothing. The filter runs $(BIN)/python: after deleting
# $(VENV), run `make install` again (or `git config --unset-all filter.nbstripout.required`).
git-filter: $(STAMP)
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		$(BIN)/nbstripout --install && \
		git config filter.nbstripout.clean '"$(abspath $(BIN))/python" -m nbstripout --keep-id' && \
		git config diff.ipynb.textconv '"$(abspath $(BIN))/python" -m nbstripout --keep-id -t' && \
		echo "nbstripout: git filter installed (notebook outputs are stripped when staged)"; \
	else \
		echo "nbstripout: not a git checkout, no git filter installed"; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check lib tests benchmarks notebooks assignments

# one test worker per core (pytest-xdist); a test file runs on one worker, the costliest files first
TEST_WORKERS ?= auto
TEST_ARGS ?=
test: $(STAMP) lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(TEST_ARGS)

# The real-browser test (tests/test_browser.py) alone: the notebooks' smoke runs, then JupyterLab runs each notebook
# and every explorer control is moved, and the book built from the smoke runs is opened, all in Debian's chromium
# (`apt-get install chromium`; never `playwright install`). CI runs these tests inside `make test`'s session instead
# (TEST_ARGS=--run-browser), sharing its smoke runs. Screenshots go to SHOTS when it is set. READ_BOOK=runs/book:
# the book tests read that site (the last `make book`) instead of the smoke runs' book.
SHOTS ?=
READ_BOOK ?=
test-browser: $(STAMP)
	WORKBOOK_BROWSER_SHOTS=$(SHOTS) WORKBOOK_BOOK=$(READ_BOOK) $(BIN)/python -m pytest tests/test_browser.py \
		--run-browser -v -rA

run: $(STAMP)
	mkdir -p runs $(FIGURES)
	@for nb in $(NOTEBOOKS); do \
		name=$$(basename $$nb .ipynb); \
		echo "== $$name (PRESET=$(PRESET))"; \
		$(BIN)/python -m lib.make.report $$nb runs -p PRESET $(PRESET) -p EXPLORER False \
			-p FIGURES_DIR $(FIGURES) $(if $(SOURCE),-p SOURCE $(SOURCE)) || exit 1; \
	done

# Refresh notebook NB's stored layer results/NB/PRESET/ (lib/store.py): run it from scratch in an empty cache
# (SOURCE=compute), then keep the entries its long stages marked as stored, with a manifest of their provenance.
# REUSE_CACHE=1 reads what the cache already holds instead of recomputing it (the manifest says so).
NB ?=
store: $(STAMP)
	@test -n "$(NB)" || { echo "make store needs NB, e.g. make store NB=01 [PRESET=cpu]"; exit 2; }
	$(BIN)/python -m lib.make.store_writer $(firstword $(wildcard notebooks/$(NB)_*.ipynb) notebooks/$(NB)_missing.ipynb) \
		--preset $(PRESET) $(if $(REUSE_CACHE),--reuse-cache)

# Which stored and cached results were computed with code that has changed since (lib.make.status; `record` and
# `accept` there).
status: $(STAMP)
	$(BIN)/python -m lib.make.status

# Recompute one stored stage alone and compare it with the committed entry (lib/make/verify.py):
# make verify NB=01 STAGE='losses-C1-*' [PRESET=cpu] [RTOL=1e-6]
STAGE ?=
RTOL ?= 1e-6
verify: $(STAMP)
	@test -n "$(NB)" -a -n "$(STAGE)" || { echo "make verify needs NB and STAGE, e.g. make verify NB=01 STAGE='losses-C1-*'"; exit 2; }
	$(BIN)/python -m lib.make.verify $(NB) '$(STAGE)' --preset $(PRESET) --rtol $(RTOL)

results: $(STAMP)
	$(BIN)/python -m lib.make.results --runs runs --out docs/results --readme README.md

# The book (lib.make.book, docs/book/conf.py): README as the front page, the executed notebooks of the last `make run`
# (runs/*.ipynb, not executed again), the results pages, specs and guides, as a static site in $(BOOK) (git-ignored).
# Sphinx with MyST-NB, every warning an error; it downloads nothing and the site requests nothing off the machine.
# The results pages and README's table are what `make results` last wrote: run it first (`make run`, `make results`,
# `make book`); the book warns when they are from other runs than runs/ holds, and never rewrites them itself.
BOOK ?= runs/book
book: $(STAMP)
	$(BIN)/python -m lib.make.book --runs runs --out $(BOOK)

# JupyterLab on the checkout with the environment `make run` uses (WORKBOOK_DATA, exported above).
lab: $(STAMP)
	@echo "JupyterLab with WORKBOOK_DATA=$$WORKBOOK_DATA; the notebooks are in notebooks/ (Ctrl-C to stop)"
	$(JUPYTER) lab --notebook-dir=$(CURDIR) $(ALLOW_ROOT) $(LAB_ARGS)

# otter assign each master notebook in assignments/ (student notebook, autograder zip, executed solutions as
# HTML); fails if a solution misses a point of its own tests. Grade: python assignments/course.py grade NAME FILE
assignments: $(STAMP)
	$(BIN)/python assignments/course.py build --out runs/assignments

# Parameter sweep (docs/sweeps.md): the grid file params/sweeps/NN_*.yaml runs notebooks/NN_*.ipynb, on a
# LocalCluster of WORKERS single-threaded workers (default: one per core) or on the cluster at SCHEDULER.
GRID ?= params/sweeps/04_irs_smoke.yaml
SWEEP_NOTEBOOK ?= $(firstword $(wildcard notebooks/$(firstword $(subst _, ,$(notdir $(GRID))))_*.ipynb))

sweep: $(STAMP)
	$(BIN)/python -m lib.make.sweep $(SWEEP_NOTEBOOK) $(GRID) --out runs/sweeps/$(basename $(notdir $(GRID))) \
		$(if $(WORKERS),--workers $(WORKERS)) $(if $(SCHEDULER),--scheduler $(SCHEDULER))

BENCHMARKS := $(sort $(wildcard benchmarks/bench_*.py))

bench: $(STAMP)
	@for b in $(BENCHMARKS); do echo "== $$b"; $(BIN)/python $$b || exit 1; done

strip: $(STAMP)
	$(BIN)/nbstripout --keep-id $(NOTEBOOKS) $(wildcard assignments/*/*.ipynb)

clean-cache:
	rm -rf data/cache
