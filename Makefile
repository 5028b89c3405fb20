# The two commands of the README:
#   make bench   the main job: a small comparison, its summary table, results and report
#   make test    the test suite
# Both install what they need first (scripts/setup-env.sh), as does
#   make docs    the documentation, with a page per run kept in docs/runs (docs/performance.rst)

VENV      ?= .venv
SYSTEMS   ?= lmdb-nosync,lmdb,oxigraph,memory
CHILDREN  ?= 1000
OUT       ?= results/bench
PYTEST_ARGS ?=
# make test's worker processes (pytest-xdist): more than the two processors of the CI machine, as
# many tests wait on the servers, JVMs and processes they start; PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 4

STAMP := $(VENV)/.lakebench-installed

.PHONY: bench test setup clean docs

bench: $(STAMP)
	$(VENV)/bin/lakebench run --systems $(SYSTEMS) --children $(CHILDREN) --out $(OUT)
	$(VENV)/bin/lakebench report $(OUT) --html
	$(VENV)/bin/lakebench report $(OUT) --out docs/performance --html

# Two passes: the tests in PYTEST_WORKERS processes, then those marked alone (they bound wall time,
# which the other workers' load would stretch) in one process; exit status 5 is "none selected".
test: $(STAMP)
	$(VENV)/bin/python -m pytest -n $(PYTEST_WORKERS) -m 'not benchmark and not alone' $(PYTEST_ARGS)
	$(VENV)/bin/python -m pytest -m 'alone and not benchmark' $(PYTEST_ARGS) || [ $$? -eq 5 ]

setup: $(STAMP)

# The pages of the runs kept in docs/runs, written from their results (nothing is measured), then the site.
docs: $(STAMP)
	$(VENV)/bin/lakebench report docs/runs/inprocess --out docs/performance/inprocess --title "Measured: the in-process stores"
	$(VENV)/bin/lakebench report docs/runs/http --out docs/performance/http --title "Measured: over HTTP, beside Fedora"
	$(VENV)/bin/lakebench report docs/runs/users --out docs/performance/users --title "Measured: many clients at once"
	$(VENV)/bin/lakebench report docs/runs/versions --out docs/performance/versions --title "Measured: versions taken, listed and read"
	$(VENV)/bin/lakebench report docs/runs/scale --out docs/performance/scale --title "Measured: where each system stops, a thousand to a million children"
	$(VENV)/bin/lakebench report docs/runs/durable-million --out docs/performance/durable-million --title "Measured: the durable store at a million children, its commits flushed aside"
	$(VENV)/bin/lakebench report docs/runs/nosync-million --out docs/performance/nosync-million --title "Measured: the unsynced store at a million children, its commits written back"
	$(VENV)/bin/lakebench report docs/runs/http-million --out docs/performance/http-million --title "Measured: the server at a million children"
	$(VENV)/bin/lakebench report docs/runs/three-million --out docs/performance/three-million --title "Measured: three million children, private memory"
	$(VENV)/bin/python -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "HTML: docs/_build/html/index.html"

# Re-install whenever the packaging or the compiled sources change.
$(STAMP): pyproject.toml setup.py scripts/setup-env.sh $(wildcard ext/*.pyx ext/*.pxd ext/lakebench/*.pyx ext/lakebench/*.pxd ext/sparql/Cargo.* ext/sparql/src/*.rs)
	VENV=$(VENV) scripts/setup-env.sh
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info results/bench
