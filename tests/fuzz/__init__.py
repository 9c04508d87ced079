"""tensorlang's fuzzers and the harness that runs them (see docs/fuzzing.md).

    python -m tests.fuzz --minutes 30 [--seed S] [--only NAME] [--backend numba|numpy|both]
"""
