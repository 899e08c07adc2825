# Atlas. `make run` serves the platform on the embedded default; `make test` runs the whole suite
# against real Elasticsearch, PostgreSQL and Redis (started by `make services`).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
SERVICES_ENV := .services/env
PYTEST_ARGS ?=

.PHONY: help install run services services-down test lint format ci bench eval clean

help:
	@echo "make run            serve Atlas (uvicorn, ASGI: admin + MCP) on the embedded default"
	@echo "make test           start the services and run the whole test suite against them"
	@echo "make services       start Elasticsearch, PostgreSQL, Redis; write $(SERVICES_ENV)"
	@echo "make services-down  stop them"
	@echo "make lint           ruff, mypy, makemigrations --check"
	@echo "make eval           recall quality eval on Elasticsearch (var/eval.json, var/eval.png)"

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py atlas_demo --url http://$(HOST):$(PORT)/admin/
	$(VENV)/bin/uvicorn atlas_platform.asgi:application --host $(HOST) --port $(PORT)

services:
	bash deploy/services/up.sh

services-down:
	bash deploy/services/down.sh

test: install services
	set -a && source $(SERVICES_ENV) && set +a && $(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(PY) manage.py makemigrations --check --dry-run

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

ci:
	ATLAS_REQUIRE_SERVICES=1 $(MAKE) test
	$(MAKE) lint

bench: install services
	mkdir -p var
	$(PY) manage.py migrate --noinput -v0
	ATLAS_EMBEDDED_PATH=var/bench-memory.sqlite3 \
	  $(PY) manage.py bench --backend embedded --memories 1000,10000 --json var/bench-embedded.json
	set -a && source $(SERVICES_ENV) && set +a && $(PY) manage.py migrate --noinput -v0 && \
	  ATLAS_ES_INDEX_PREFIX=atlas-bench-$$$$ \
	  $(PY) manage.py bench --backend es --memories 1000,10000 --json var/bench-es.json

eval: install services
	mkdir -p var
	set -a && source $(SERVICES_ENV) && set +a && $(PY) manage.py migrate --noinput -v0 && \
	  $(PY) manage.py eval_recall --backend elasticsearch --json var/eval.json --plot var/eval.png

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
