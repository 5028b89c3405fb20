# The two commands of the README:
#   make bench   the main job: a small comparison, its summary table, results and report
#   make test    the test suite
# Both install what they need first (scripts/setup-env.sh).

VENV      ?= .venv
SYSTEMS   ?= lmdb-nosync,lmdb,oxigraph,memory
CHILDREN  ?= 1000
OUT       ?= results/bench
PYTEST_ARGS ?=

STAMP := $(VENV)/.lakebench-installed

.PHONY: bench test setup clean

bench: $(STAMP)
	$(VENV)/bin/lakebench run --systems $(SYSTEMS) --children $(CHILDREN) --out $(OUT)
	$(VENV)/bin/lakebench report $(OUT) --html
	$(VENV)/bin/lakebench report $(OUT) --out docs/performance --html

test: $(STAMP)
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

setup: $(STAMP)

# Re-install whenever the packaging or the compiled sources change.
$(STAMP): pyproject.toml setup.py scripts/setup-env.sh $(wildcard ext/*.pyx ext/*.pxd ext/lakebench/*.pyx ext/lakebench/*.pxd ext/sparql/Cargo.* ext/sparql/src/*.rs)
	VENV=$(VENV) scripts/setup-env.sh
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info results/bench
