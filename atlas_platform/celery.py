"""The Celery app. Tasks take ids, load the object and call one service."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_platform.settings")

app = Celery("atlas")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
