"""Consolidation's domain errors."""

from atlas_platform.exceptions import AtlasError


class ConsolidationOff(AtlasError):
    """No chat model is configured, so consolidation does not run."""

    status_code = 409
    code = "consolidation_off"


class UserBusy(AtlasError):
    """Another run of this user holds the lease (it expires if that run's worker died)."""

    status_code = 409
    code = "consolidation_busy"
