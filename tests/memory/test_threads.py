"""memory.threads: the process's BLAS runs on ``ATLAS_BLAS_THREADS`` threads."""

from __future__ import annotations

import subprocess
import sys

from threadpoolctl import threadpool_info, threadpool_limits

from memory.threads import blas_threads_limit


def blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_the_app_caps_numpys_blas_at_the_setting_at_start(settings):
    # Django is set up here, so MemoryConfig.ready has run with the default (1).
    assert settings.ATLAS_BLAS_THREADS == 1
    assert blas_threads() == {1}


def test_the_limit_applies_to_a_fresh_process_and_zero_leaves_the_default():
    probe = (
        "import numpy, threadpoolctl; from memory.threads import blas_threads_limit;"
        "blas_threads_limit({n});"
        "print(sorted({{p['num_threads'] for p in threadpoolctl.threadpool_info()"
        " if p['user_api'] == 'blas'}}))"
    )

    def threads_after(n: int) -> str:
        done = subprocess.run(  # noqa: S603 - this interpreter, a fixed probe
            [sys.executable, "-c", probe.format(n=n)], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    assert threads_after(1) == "[1]"
    assert threads_after(0) == threads_after(-1) != ""  # OpenBLAS's own default: one per core


def test_a_limit_of_zero_changes_nothing():
    with threadpool_limits(limits=1, user_api="blas"):
        blas_threads_limit(0)
        assert blas_threads() == {1}
