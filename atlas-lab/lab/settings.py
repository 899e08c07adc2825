"""The product's settings plus the lab app: what the test suite, `make eval` and `make bench`
run with (``DJANGO_SETTINGS_MODULE=lab.settings``). The product's own settings never name the
lab, so `make run` serves without it even from a venv that has it installed."""

from atlas_platform.settings import *  # noqa: F403
from atlas_platform.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "lab.apps.LabConfig"]
