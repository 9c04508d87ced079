"""The fuzzers, by name, in the order the harness reports them."""
from . import bigconst, gathers, malformed, names, wellformed

FUZZERS = {m.NAME: m for m in (wellformed, names, gathers, bigconst, malformed)}

# Shares of the time budget: the compiled fuzzers get more, malformed text
# (parse only, thousands of programs a minute) less.
WEIGHTS = {"wellformed": 1.5, "names": 1.5, "gathers": 1.0, "bigconst": 1.0, "malformed": 0.5}
