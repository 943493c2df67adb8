# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := test,ann,scale,gpu,amg,mvu
# The `gpu` extra's PyTorch, installed first and exactly: the CPU build of this
# release lies on the machines' disk, so pip needs no download (an unpinned `torch`
# could fetch a multi-gigabyte CUDA build). The test suite checks the torch path
# against the NumPy path with it; `gpu = ["torch>=2.13.0"]` then finds it satisfied.
TORCH := torch==2.13.0

# `make test-min`: the oldest supported Python with every dependency at its declared
# floor, in a venv of its own (tools/min_requirements.py reads the floors).
PYTHON_MIN ?= python3.11
VENV_MIN := .venv-min
PY_MIN := $(VENV_MIN)/bin/python
STAMP_MIN := $(VENV_MIN)/.installed

.PHONY: install demo test lint test-min clean docs docs-check wheel-check

# The compiled loops: every .pyx under src/ is one extension module (setup.py). An
# edited loop is rebuilt in place (pip's editable build, without re-installing the
# dependencies); Cython comes from the build requirements of pyproject.toml.
LOOPS := $(shell find src -name '*.pyx' -o -name '*.pxd') setup.py
CYTHON := "Cython>=3.1"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The compiled loops (Cython) are built by the install: no first call compiles.
$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet "$(TORCH)" $(CYTHON) "setuptools>=77"
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

$(VENV)/.loops: $(STAMP) $(LOOPS)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

install: $(STAMP) $(VENV)/.loops

demo: install
	$(VENV)/bin/landmarking demo

# SCIPY_ARRAY_API=1, set before SciPy is first imported: scikit-learn's array-API
# check of each estimator (NumPy input with array-API dispatch on must give the same
# results) skips without it. `make test-min` runs SciPy in its default mode, so both
# modes are tested (scikit-learn 1.6 generates no array-API check for estimators
# without array-API support). tests/test_docs_site.py needs the built site: `make
# docs-check` runs it.
PYTEST_ARGS := -q --ignore=tests/test_docs_site.py

test: install
	SCIPY_ARRAY_API=1 $(PY) -m pytest $(PYTEST_ARGS)

# A wheel built from the sdist, installed where nothing compiles, without AVX-512
# code, fits and saves every estimator (tools/check_wheel.sh says how).
wheel-check: $(STAMP)
	PY=$(PY) tools/check_wheel.sh

$(VENV)/.lint-installed: $(STAMP)
	$(PY) -m pip install --quiet -e ".[$(EXTRAS),lint]"
	touch $@

lint: $(VENV)/.lint-installed
	$(VENV)/bin/ruff check .

# Rebuilt from scratch whenever a floor changes, so no newer package is left behind.
# Wheels only: every floor (and what it pulls in) must install without a compiler.
$(STAMP_MIN): pyproject.toml tools/min_requirements.py Makefile
	rm -rf $(VENV_MIN)
	$(PYTHON_MIN) -m venv $(VENV_MIN)
	$(PY_MIN) -m pip install --quiet --upgrade pip
	$(PY_MIN) -m pip install --quiet "$(TORCH)"
	$(PY_MIN) tools/min_requirements.py --extras $(EXTRAS) > $(VENV_MIN)/requirements-min.txt
	$(PY_MIN) -m pip install --quiet --only-binary=:all: -r $(VENV_MIN)/requirements-min.txt
	$(PY_MIN) -m pip install --quiet $(CYTHON) "setuptools>=77"
	$(PY_MIN) -m pip install --quiet --no-deps --no-build-isolation -e .
	$(PY_MIN) -m pip check
	touch $(STAMP_MIN)

$(VENV_MIN)/.loops: $(STAMP_MIN) $(LOOPS)
	$(PY_MIN) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# The floors' suite also runs on another OpenBLAS kernel than `make test`'s (the
# processor's own: Haswell, SkylakeX, ...): Nehalem's SSE kernels, with a 512 KB L2,
# as some machines set them. Blocking, accumulation order and FMA use differ from
# kernel to kernel, so a test whose tolerance was read off one machine, or whose
# bit-for-bit claim holds only on one kernel, fails here; without a third run of
# the suite. NumPy's and SciPy's wheels (DYNAMIC_ARCH builds of OpenBLAS) read both
# variables when they load; the check below stops if a kernel other than Nehalem
# was picked (the variable ignored), as the run would then prove nothing.
KERNEL_MIN := OPENBLAS_CORETYPE=Nehalem OPENBLAS_L2_SIZE=512

test-min: $(STAMP_MIN) $(VENV_MIN)/.loops
	@echo "Installed at the declared floors:"
	@$(PY_MIN) -m pip freeze --exclude-editable \
	  | grep -iE "^($$(sed -E 's/[^A-Za-z0-9_.-].*//' $(VENV_MIN)/requirements-min.txt | paste -sd'|'))=="
	$(KERNEL_MIN) $(PY_MIN) -c "import numpy, scipy.linalg, threadpoolctl; \
	  kernels = {p['filepath'].rsplit('/', 1)[-1]: p.get('architecture') \
	             for p in threadpoolctl.threadpool_info() if p['user_api'] == 'blas'}; \
	  print('BLAS kernels:', kernels); \
	  assert kernels and all(str(k).lower() == 'nehalem' for k in kernels.values()), kernels"
	$(KERNEL_MIN) $(PY_MIN) -m pytest $(PYTEST_ARGS)

# The documentation site: docs/_build/html, warnings are errors; every code block
# of the guides runs as a doctest. Chromium (Debian) is for `make docs-check`:
# without it the browser tests skip, but under CI (CI set and not false) it fails.
DOCS_STAMP := $(VENV)/.installed-docs

$(DOCS_STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[$(EXTRAS),docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
		|| case "$${CI:-false}" in \
		[Ff][Aa][Ll][Ss][Ee]|0|[Nn][Oo]) echo "chromium not installed: tests/test_docs_site.py will skip";; \
		*) echo "chromium could not be installed; CI=$$CI must check the site in it" >&2; exit 1;; \
		esac
	MPLBACKEND=Agg $(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	MPLBACKEND=Agg $(VENV)/bin/sphinx-build -W --keep-going -q -b doctest docs docs/_build/doctest docs/*.rst docs/guide/*.rst

docs-check: docs
	$(PY) -m pytest -q tests/test_docs_site.py

clean:
	rm -rf $(VENV) $(VENV_MIN) build *.egg-info src/*.egg-info docs/_build
	find src \( -name "*.so" -o -name "*.c" \) -delete
