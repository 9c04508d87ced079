#!/bin/sh
# The JAX backend on a GPU: tensorlang via JAX beside hand-written JAX on the peer workloads.
# Run from the repository root on a machine where JAX sees a GPU (pip install 'jax[cuda12]');
# falls back to the CPU, saying so. Takes a few minutes; writes benchmarks/results/jax_backend_gpu.md.
# SIZES=quick (one small size per workload) checks that the script runs; OUT=path writes elsewhere.
set -e
PY=${PYTHON:-python}
SIZES=${SIZES:-full}
OUT=${OUT:-benchmarks/results/jax_backend_gpu.md}
PLATFORM=$($PY -c "import jax; print(jax.devices()[0].platform)")
if [ "$PLATFORM" != "gpu" ]; then
    echo "JAX sees no GPU (platform: $PLATFORM); running on it anyway" >&2
fi
JAX_ENABLE_X64=1 $PY -m benchmarks.jax_backend --sizes "$SIZES" --repeats 11 --out "$OUT"
