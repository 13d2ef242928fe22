# Two commands do all the set-up on a fresh machine:
#   make run   — virtualenv, install, migrate the embedded SQLite, demo study, web + detector worker
#   make test  — installs what the suite needs (Postgres, Chromium from Debian), runs everything
# (make install: only the virtualenv, with what bench/ needs.)
PYTHON ?= python3
PORT ?= 5000
VENV := .venv
BIN := $(VENV)/bin
DEPS_HASH := $(shell cat pyproject.toml | sha1sum | cut -c1-12)
RUN_STAMP := $(VENV)/.run-$(DEPS_HASH)
TEST_STAMP := $(VENV)/.test-$(DEPS_HASH)
BENCH_STAMP := $(VENV)/.bench-$(DEPS_HASH)

.PHONY: run test install lint format bench mutants clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned to the local CPU wheel first, so nothing pulls GBs of CUDA packages.
$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e .
	touch $@

# label-studio-converter without its declared dependencies: the test extra has the ones
# its JSON_MIN and CSV exports import (its pandas would add ~60 MB for nothing).
$(TEST_STAMP): $(RUN_STAMP)
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip install -q --no-deps label-studio-converter==0.0.59
	touch $@

# The app and what bench/ needs (psutil, httpx).
$(BENCH_STAMP): $(RUN_STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	touch $@

install: $(BENCH_STAMP)

run: $(RUN_STAMP)
	$(BIN)/marginalia db upgrade
	$(BIN)/marginalia demo
	@echo
	@echo "  Annotate the demo:  http://127.0.0.1:$(PORT)/s/demo"
	@echo "  (each browser is given its own worker ID and comes back to its own work; the demo"
	@echo "  has a place for every arrival; \`$(BIN)/marginalia demo --reset\` starts it afresh)"
	@echo
	@# The production web server (granian, `marginalia web`), on this machine only. Ctrl+C
	@# reaches it (foreground: it stops gracefully); the trap stops the background worker,
	@# once (the old `trap 'kill 0'` signalled its own shell again and again until it crashed).
	@$(BIN)/marginalia worker & worker=$$!; \
	  trap 'trap - INT TERM EXIT; kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' INT TERM EXIT; \
	  WEB_HOST=127.0.0.1 PORT=$(PORT) $(BIN)/marginalia web

test: $(TEST_STAMP)
	bash .ci/install-system-deps.sh
	$(BIN)/python -m tests.browser.axe
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo --no-cache
	MARGINALIA_REQUIRE_POSTGRES=1 MARGINALIA_REQUIRE_BROWSER=1 MARGINALIA_REQUIRE_NODES=1 \
	  $(BIN)/pytest -q

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/ruff format --check .

bench: $(TEST_STAMP)
	@ls bench/*.py

# Mutation testing of the rules' packages (docs/TESTING.md; [tool.mutmut] in pyproject.toml),
# not in CI. MUTANTS narrows it to mutant names, e.g. MUTANTS='app.annotation.timing.*';
# results are kept in mutants/ (git-ignored), so a second run only tries what changed.
MUTANTS ?=
MUTANT_JOBS ?= 2
mutants: $(TEST_STAMP)
	MARGINALIA_SHARED_DATA=$(CURDIR)/../shared/data $(BIN)/mutmut run --max-children $(MUTANT_JOBS) $(MUTANTS)
	@$(BIN)/mutmut results --all true 2>/dev/null | tr '\r' '\n' | awk -F'[ :]+' \
	  '$$2 ~ /^app\./ { split($$2, n, "."); p = n[1] "." n[2]; s = $$3; \
	    if (s == "not") next; all[p]++; if (s == "killed") k[p]++; } \
	  END { for (p in all) printf "%-18s %5d mutants %5d killed %5.1f%%\n", p, all[p], k[p], 100 * k[p] / all[p] }'
	@echo "survivors: $(BIN)/mutmut results; one of them: $(BIN)/mutmut show NAME"

clean:
	rm -rf $(VENV) instance .pytest_cache tests/.artifacts
