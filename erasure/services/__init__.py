"""Erasure services: the forget-request workflow (requests.py) and its job (execute.py)."""

from erasure.services.execute import forget_request_execute
from erasure.services.requests import (
    OperatorPrincipal,
    Principal,
    forget_request_approve,
    forget_request_may_approve,
    forget_request_open,
    forget_request_reject,
    forget_request_resume_stalled,
    forget_request_retry,
)

__all__ = [
    "OperatorPrincipal",
    "Principal",
    "forget_request_approve",
    "forget_request_execute",
    "forget_request_may_approve",
    "forget_request_open",
    "forget_request_reject",
    "forget_request_resume_stalled",
    "forget_request_retry",
]
