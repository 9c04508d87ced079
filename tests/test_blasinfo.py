"""Which OpenBLAS kernels run, and the advice when the CPU has faster ones."""
import pathlib

from tensorlang.backend import blasinfo
from tensorlang.cli import main

AVX512 = blasinfo.AVX512_FLAGS | {"avx2", "fma"}
AVX2 = frozenset({"avx", "avx2", "fma"})
EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def test_no_advice_when_the_kernels_already_use_the_cpu():
    for core in ("SkylakeX", "cooperlake", "SAPPHIRERAPIDS"):
        assert blasinfo.advice_for(core, AVX512, {}) is None
        assert blasinfo.advice_for(core, AVX512, {"OPENBLAS_CORETYPE": core}) is None


def test_no_advice_without_avx512_or_without_openblas():
    assert blasinfo.advice_for("Haswell", AVX2, {}) is None
    assert blasinfo.advice_for("Haswell", AVX2, {"OPENBLAS_CORETYPE": "Haswell"}) is None
    assert blasinfo.advice_for(None, AVX512, {}) is None
    # one of the instruction sets the AVX-512 kernels need is missing
    assert blasinfo.advice_for("Haswell", AVX512 - {"avx512vl"}, {}) is None


def test_the_advice_names_the_variable_when_the_environment_chose_the_kernels():
    text = blasinfo.advice_for("Haswell", AVX512, {"OPENBLAS_CORETYPE": "Haswell"})
    assert "because OPENBLAS_CORETYPE=Haswell is set" in text and "unset the variable" in text
    text = blasinfo.advice_for("Zen", AVX512, {})
    assert "chose its Zen kernels" in text and "OPENBLAS_CORETYPE=SkylakeX" in text


def test_generated_drivers_that_call_blas_are_recognised():
    assert blasinfo.uses_blas("        env['C'] = tl_matmul(env['A'], env['B'])")
    assert blasinfo.uses_blas("float(tl_contract('ab,ab->', env['C'], env['W']))")
    assert not blasinfo.uses_blas("def k_y(x, y):\n    for i in range(n):\n        y[i] = x[i]")


def test_explain_reports_the_blas_kernels_under_a_product(capsys, monkeypatch):
    monkeypatch.setattr(blasinfo, "openblas_core", lambda: "Haswell")
    monkeypatch.setattr(blasinfo, "cpu_flags", lambda: AVX512)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    assert main(["explain", str(EXAMPLES / "matchain.tl")]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].startswith(
        "# BLAS: OpenBLAS, Haswell kernels. OpenBLAS runs its Haswell kernels because")


def test_explain_says_nothing_of_blas_for_a_loop_nest(capsys):
    assert main(["explain", str(EXAMPLES / "cumsum.tl")]) == 0
    assert "# BLAS:" not in capsys.readouterr().out


def test_the_loaded_openblas_reports_a_core_or_nothing():
    core = blasinfo.openblas_core()
    assert core is None or (isinstance(core, str) and core)
