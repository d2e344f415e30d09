"""Runnable examples built on the package (docs/python.md): `python3 -m pwab.examples.remote_agent`."""
