# One task runner: CI calls `make test`; a new machine needs only `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: run test test-slow lint typecheck pytest schema golden bench bench-daily bench-publish bench-page eval mutation clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	$(BIN)/python -m compileall -q src  # as a wheel's install would: no compile per start
	touch $@

$(TSTAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install -q -e '.[test,dask]'
	touch $@

run: $(STAMP)
	$(BIN)/ingest run seeds/ --out out/

test: $(TSTAMP) lint typecheck pytest

lint: $(TSTAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(TSTAMP)
	$(BIN)/mypy

pytest: $(TSTAMP)
	$(BIN)/pytest

# The sweeps make test leaves out: tests marked slow, and every Hypothesis property with
# the full number of examples (the slow profile: see tests/conftest.py), the daily-run
# property (a run over the last publish = a run with --full) on 100 day sequences.
test-slow: $(TSTAMP)
	HYPOTHESIS_PROFILE=slow INGEST_REUSE_EXAMPLES=100 $(BIN)/pytest -m 'slow or hypothesis'

schema: $(STAMP)
	$(BIN)/ingest schema --write

# Regenerate the checked-in golden output after a deliberate change (then review the diff).
golden: $(STAMP)
	$(BIN)/python tests/regen_golden.py

bench: $(STAMP)
	$(BIN)/python bench/bench.py

# The daily run over the last publish against a fresh run (100 MB; the table of
# docs/performance.md "Daily runs").
bench-daily: $(STAMP)
	$(BIN)/python bench/daily.py --size 100MB --rounds 5

# ingest publish into SQLite and PostgreSQL (INGEST_TEST_PG): first, again, 1 % changed.
bench-publish: $(STAMP)
	$(BIN)/python bench/publish.py --size 100MB

# The report's pages at 25 and 100 MB: sizes, and open times in headless Chromium (playwright).
bench-page: $(TSTAMP)
	$(BIN)/python bench/page.py --size 25MB --size 100MB

# Record quality on the labelled cases (tests/eval/): precision and recall per decision kind,
# checked against tests/eval/floors.json. `$(BIN)/python bench/eval.py --pin` raises floors.
eval: $(STAMP)
	$(BIN)/python bench/eval.py --check

# Mutation testing of the identity, alignment and merge code (transform/units, near,
# components, align, merge, topics; see [tool.mutmut] in pyproject.toml). Not part of
# `make test`: about half an hour on 2 cores. Survivors: `$(BIN)/mutmut show NAME`.
mutation: $(TSTAMP)
	$(BIN)/pip install -q -e '.[test,mutation]'
	rm -rf mutants
	nice $(BIN)/mutmut run --max-children 2
	$(BIN)/mutmut results --all true | awk '{print $$NF}' | sort | uniq -c

clean:
	rm -rf $(VENV) out/*.jsonl out/*.json out/*.html out/state out/.ingest out.refused
