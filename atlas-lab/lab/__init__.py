"""The research lab: recall evaluation, benchmarks, load tests and offline model candidates.

It sits on top of the product and uses only ``memory``'s public API (services, selectors,
``memory.plans``, ``memory.embedding``'s hook and types); nothing in the product imports it.
Installed with the dev extra; ``atlas_platform.settings`` adds the app when it is importable.
"""
