"""The fuzzers, by name, in the order the harness reports them."""
from . import bigconst, cheap, gathers, malformed, names, wellformed

FUZZERS = {m.NAME: m for m in (wellformed, names, gathers, bigconst, malformed, cheap)}

# Shares of the time budget: the compiled fuzzers get more, malformed text
# (parse only, thousands of programs a minute) less.
# The cost-certificate fuzzer runs on the interpreter only and needs thousands
# of programs per run.
WEIGHTS = {"wellformed": 1.5, "names": 1.5, "gathers": 1.0, "bigconst": 1.0, "malformed": 0.5,
           "cheap": 1.0}
