"""The error a bad scenario (file, object or command line) raises: one clear line."""

from __future__ import annotations


class ScenarioError(Exception):
    """The scenario file or object is invalid (one clear line)."""
