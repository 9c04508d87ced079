"""python -m benchmarks.adbench [--quick] [--data DIR] ...: see driver.py."""
import sys

if len(sys.argv) > 2 and sys.argv[1] == "--worker":
    # one configuration: imports only the tool it times
    import json

    from benchmarks.adbench.worker import main as _worker
    sys.exit(_worker(json.loads(sys.argv[2])))

if len(sys.argv) > 3 and sys.argv[1] == "--plot":
    from benchmarks.adbench.driver import plot_main
    sys.exit(plot_main(sys.argv[2], sys.argv[3]))

from benchmarks.adbench.driver import main  # noqa: E402

sys.exit(main())
