"""Shared pytest configuration: the --update-golden option."""
import os
import sys

# Tests import the package from this checkout even when it is not installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/*.txt from the current compiler output")
