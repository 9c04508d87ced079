import sys

if len(sys.argv) > 2 and sys.argv[1] == "--worker":
    # a configuration subprocess: import nothing but the system it times
    import json

    from benchmarks.peers.worker import main as _worker
    sys.exit(_worker(json.loads(sys.argv[2])))

from benchmarks.peers.driver import main  # noqa: E402

sys.exit(main())
