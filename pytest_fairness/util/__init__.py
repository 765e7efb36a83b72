"""Plumbing with no domain knowledge: the one number formatter and frozen dataclasses to and from JSON."""
