# Every target installs what it needs first, so each works on a fresh clone: `make demo` the
# core package alone into .venv-demo (light: what `wop run` needs), every other target the
# dev extras into .venv (the tests', the linters' and the UIs' tools).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_VENV ?= .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed

.PHONY: install demo test test-newest lint bench bench-postgres clean

# The install's own output (pip's, the build backend's notices) goes to $(VENV)/install.log,
# shown only when a step fails: `make demo` prints the demo, not a page of installer notes.
$(STAMP): pyproject.toml
	@echo "installing wopdsl with its dev extras into $(VENV) (a few minutes; log: $(VENV)/install.log)"
	@python3 -m venv $(VENV)
	@{ $(PY) -m pip install --quiet --upgrade pip && \
	   $(PY) -m pip install --quiet -e '.[dev]' && \
	   $(PY) -m ipykernel install --sys-prefix --name python3; } >$(VENV)/install.log 2>&1 || \
	 { tail -n 40 $(VENV)/install.log; echo "install failed: see $(VENV)/install.log" >&2; exit 1; }
	@touch $(STAMP)

install: $(STAMP)

# The demo's environment: wopdsl and its core dependencies only (no extras, no test tools).
$(DEMO_STAMP): pyproject.toml
	@echo "installing wopdsl (the core package only) into $(DEMO_VENV) (log: $(DEMO_VENV)/install.log)"
	@python3 -m venv $(DEMO_VENV)
	@$(DEMO_VENV)/bin/python -m pip install --quiet -e . >$(DEMO_VENV)/install.log 2>&1 || \
	 { tail -n 40 $(DEMO_VENV)/install.log; echo "install failed: see $(DEMO_VENV)/install.log" >&2; exit 1; }
	@touch $(DEMO_STAMP)

## Run the demo council on the embedded SQLite default (.wop/runs.db), in .venv-demo.
demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/wop run councils/release-team.toml

# The test modules with syrupy snapshots (tests/<dir>/__snapshots__/<module>[.ambr]). syrupy
# finds unused snapshots only in a session of its own (not across pytest-xdist's workers), so
# these run in a second, serial session after the parallel one.
SNAPSHOT_MODULES = $(sort $(foreach f,$(wildcard tests/*/__snapshots__/*),$(dir $(patsubst %/,%,$(dir $f)))$(basename $(notdir $f)).py))

## Run the whole test suite: on every core, at most 4 (pytest-xdist), then the snapshot
## modules alone.
test: $(STAMP)
	$(PY) -m pytest -n auto --maxprocesses 4 --dist loadgroup $(addprefix --ignore=,$(SNAPSHOT_MODULES))
	$(PY) -m pytest -p no:xdist $(SNAPSHOT_MODULES)

## The plugin's, the example's and the UIs' tests on the newest releases of the extras, in
## a venv of their own (.venv-newest; see docs/ci.md).
test-newest:
	.ci/newest.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check wopdsl tui tests bench examples
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/run.py

## The PostgreSQL store's figures, on the server $$WOPDSL_TEST_POSTGRES names (.ci/postgres.sh).
bench-postgres: $(STAMP)
	$(PY) bench/postgres.py

clean:
	rm -rf $(VENV) $(DEMO_VENV) .venv-newest .wop build *.egg-info
