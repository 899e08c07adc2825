"""The real services the suite runs against (CI requires every one of them)."""

import os

import pytest
from django.db import connection

from tests.conftest import service_missing


@pytest.mark.django_db
def test_the_suite_runs_on_postgresql_when_the_services_are_up():
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        service_missing("PostgreSQL (DATABASE_URL)")
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        assert int(cursor.fetchone()[0].split(".")[0]) >= 13


def test_the_celery_broker_is_redis_and_answers():
    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url.startswith("redis://"):
        service_missing("Redis (CELERY_BROKER_URL)")
    from atlas_platform.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=3)
        assert conn.transport.driver_type == "redis"
