"""Side-by-side benchmark of tensorlang against JAX, PyTorch and NumPy on twelve workloads.

    python -m benchmarks.peers [--quick] [--only W1 W5 ...]

See driver.py for the protocol; spec.py holds the workloads, sys_*.py one module per system,
worker.py the subprocess that times one configuration.
"""
