"""The suite runs on the test database, whatever was imported before it was made.

Collecting the whole tree imports the served app, whose start-up check reaches for the
database; a connection pool opened then would keep serving the real database after Django's
test setup renamed it (``tests/conftest.py``'s ``django_db_modify_db_settings`` closes it).
Workers started by tests connect by the test database's name, so the two must agree."""

from __future__ import annotations

import pytest
from django.db import connection


@pytest.mark.django_db
def test_queries_go_to_the_database_the_settings_name():
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        (current,) = cursor.fetchone()
    name = connection.settings_dict["NAME"]
    assert name.startswith("test_")
    assert current == name
