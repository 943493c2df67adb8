# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test bench clean docs docs-check

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e ".[test,ann]"
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/landmarking demo

test: install
	$(PY) -m pytest -q

# The documentation site: docs/_build/html, warnings are errors; every code block
# of the guides runs as a doctest. Chromium (Debian) is for `make docs-check`.
DOCS_STAMP := $(VENV)/.installed-docs

$(DOCS_STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e ".[test,ann,dask,docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
		|| echo "chromium not installed: tests/test_docs_site.py will skip"
	MPLBACKEND=Agg $(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	MPLBACKEND=Agg $(VENV)/bin/sphinx-build -W --keep-going -q -b doctest docs docs/_build/doctest docs/*.rst docs/guide/*.rst

docs-check: docs
	$(PY) -m pytest -q tests/test_docs_site.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info docs/_build
