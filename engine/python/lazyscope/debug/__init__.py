"""Debugging aids: ``metrics`` (counters and timed metrics) and graph dumps."""
from lazyscope.debug import metrics  # noqa: F401
