#!/bin/sh
# The JAX backend on a GPU: tensorlang via JAX beside hand-written JAX on the peer workloads of
# issue 14 (benchmarks/jax_backend.py: W1, W2, W3, W7a, W7b, W8, W9, W10a, W10b, W11, W12).
# Run from the repository root on a machine where JAX sees a GPU (pip install 'jax[cuda12]'):
#
#     sh benchmarks/gpu.sh                 # PYTHON=path/to/python to choose the interpreter
#
# With a GPU: every workload at its three sizes (SIZES=full), written to
# benchmarks/results/jax_backend_gpu.md (OUT=path writes elsewhere). Each row is compiled,
# checked, then timed for at most 11 rounds or 10 s of rounds, and no row is started after
# 8 minutes, so the run stays under 10 minutes (the whole sweep takes 8 minutes on a 2-core
# CPU, where JAX's own Hessians of W8 and W9 take tens of seconds a call).
# Without a GPU: says so and makes a dry run on the CPU, one small size per workload
# (SIZES=quick, about a minute), written to a temporary file unless OUT is given.
set -e
PY=${PYTHON:-python}
PLATFORM=$($PY -c "import jax; print(jax.devices()[0].platform)")
if [ "$PLATFORM" = "gpu" ]; then
    SIZES=${SIZES:-full}
    OUT=${OUT:-benchmarks/results/jax_backend_gpu.md}
else
    echo "JAX sees no GPU (platform: $PLATFORM): a dry run on the CPU with SIZES=${SIZES:-quick}" >&2
    SIZES=${SIZES:-quick}
    OUT=${OUT:-${TMPDIR:-/tmp}/jax_backend_dry_run.md}
fi
JAX_ENABLE_X64=1 $PY -m benchmarks.jax_backend --sizes "$SIZES" --repeats 11 --budget 10 \
    --deadline 480 --out "$OUT"
echo "wrote $OUT" >&2
