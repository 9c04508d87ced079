# Two entry points for a fresh checkout: `make demo` and `make test`.
# Only Python 3.11+ and make are needed; everything else goes into .venv.

PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
PIP := $(VPY) -m pip

.PHONY: demo test clean

# Created once; a failed creation is removed so the next run starts clean.
$(VENV):
	$(PY) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }
	$(PIP) install -q --upgrade pip || { rm -rf $(VENV); exit 1; }

demo: $(VENV)
	$(PIP) install -q -e .
	$(VPY) examples/demo.py

test: $(VENV)
	$(PIP) install -q -e '.[test]'
	$(VPY) tests/run_parallel.py -q

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis .benchmarks
	find . -name __pycache__ -type d -not -path './.git/*' -prune -exec rm -rf {} +
