# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := test,ann,scale

.PHONY: install demo test lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/landmarking demo

test: install
	$(PY) -m pytest -q

$(VENV)/.lint-installed: $(STAMP)
	$(PY) -m pip install --quiet -e ".[$(EXTRAS),lint]"
	touch $@

lint: $(VENV)/.lint-installed
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
