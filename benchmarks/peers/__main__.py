import sys

if len(sys.argv) > 2 and sys.argv[1] == "--worker":
    # a configuration subprocess: import nothing but the system it times
    import json

    _cfg = json.loads(sys.argv[2])
    if _cfg.get("snapshot"):
        # `python -m` puts the working directory (the repository) first on sys.path, ahead
        # of PYTHONPATH: its tensorlang would hide the copy of --tensorlang-commit
        sys.path.insert(0, _cfg["snapshot"])
    from benchmarks.peers.worker import main as _worker
    sys.exit(_worker(_cfg))

from benchmarks.peers.driver import main  # noqa: E402

sys.exit(main())
