# Every target installs what it needs into .venv first, so each works on a fresh clone.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

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

## Run the demo council on the embedded SQLite default (.wop/runs.db).
demo: $(STAMP)
	$(VENV)/bin/wop run councils/release-team.toml

## Run the whole test suite.
test: $(STAMP)
	$(PY) -m pytest

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
	rm -rf $(VENV) .venv-newest .wop build *.egg-info
