"""Consolidation services: triggers (request, episode count, daily), the run, its guards."""
