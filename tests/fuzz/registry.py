"""The fuzzers, by name, in the order the harness reports them."""
from . import bigconst, gathers, malformed, names, wellformed

FUZZERS = {m.NAME: m for m in (wellformed, names, gathers, bigconst, malformed)}
