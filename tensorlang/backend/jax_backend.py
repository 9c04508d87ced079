"""The JAX backend: Tensor SSA emitted as a Python function over ``jax.numpy``.

``emit(prog)`` writes the text of one function ``run(env, sizes)`` that
computes every statement of an optimised program as whole-array JAX
operations, in the same way the reference interpreter (numpy_ref.py) evaluates
it, but as code that JAX traces once per shape:

* every factor and every bracket is an array over just the indices it uses
  (an index is ``jnp.arange`` of its range, broadcast by ``expand_dims``), and a
  term's product is contracted with ``jnp.einsum`` (XLA's dot_general);
* a guard on loop indices (``[i + j < n]``) is a boolean ``iota`` mask that
  multiplies the contraction; a read whose index can leave its tensor is taken
  at the clipped position and zeroed outside, so it never reads garbage;
* a read shifted by offsets known when traced (``x[i + 1]``) is a static slice
  of the tensor padded by a rounded amount (``shift_read``), and a term that reads
  a tensor shifted by one of its indices of small extent (``x[i + t]``, t < 64) is
  computed once per value of that index, a constant extent (a 5 x 5 kernel's
  indices, summed or free) chosen first: a sum or stack of slices, not a gather of
  windows;
* a read whose axes are permuted against its term's, in an elementwise term, is
  a transpose XLA makes on its own (``transpose_read``), not a strided read inside
  the consumer's loop;
* a gather (``x[y[s]]``) is array indexing with the gathered labels;
* a scatter, a term whose bracket pins an output index to an expression of
  summed indices or labels (``[k == y[q]]``, the adjoint of a gather), is an
  ``.at[...].add`` of the term's values at the positions the bracket names,
  not a mask over every (k, q) pair; whole rows when the positions depend on the
  summed indices alone;
* a term whose bracket ties an output index to other output indices
  (``[k == p]``, a Hessian's block diagonal) is computed without that index and
  put on the diagonal with ``where``, not masked inside its sums;
* builtins are spelled by their record in builtins.py (``Builtin.jax``);
* max/min/logsumexp reductions are ``jnp.max``/``jnp.min`` and a max-shifted
  logsumexp, with the filter as ``where`` and the reduction's identity;
* a recurrence group (ssa/recur.py) is one ``lax.scan`` over its steps, whose
  carry is the members and whose body computes a slice of each member;
* a term that divides, or one whose bracket guards a builtin or a fractional
  power that may be undefined where the bracket is false (``[x > 0] * log(x)``,
  ``[i >= 1] * x[i] ** 0.5``), is computed
  point by point with ``jnp.where`` so the bracket stays a strong zero.

Sizes are Python integers when the function is traced, so every shape is
static.  Out-of-range labels read 0 (and scatters drop them): a traced function
cannot raise on data.  ``run`` also returns a flag that some gathered label is
out of range (a recurrence's step returns its own, which the scan stacks), and
``compile(backend="jax")`` then answers the call with the interpreter, which
raises the located error.

JAX is imported lazily (``load_jax``), and float64 is switched on for JAX
(``jax_enable_x64``) only when this module first runs a program: tensorlang's
values are float64, and a user who never asks for the JAX backend never has
JAX imported or configured.
"""
from __future__ import annotations

from ..builtins import jax_call
from ..errors import TLError
from ..ssa import ir
from ..ssa.ir import (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom,
                      Program, Rel, SizeValue, SizeVar, Term, ValCmp)
from ..ssa.traverse import index_names as term_index_names
from ..ssa.traverse import gathered_tensors, iter_nodes, substitute_term, tensor_reads

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# the largest extent of an index over which a term with shifted reads is unrolled
UNROLL = 64
# max/min/logsumexp reductions (a node kind of newer versions of the IR)
Reduce = getattr(ir, "Reduce", None)
_SUPPORTED = (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom, Rel,
              SizeValue, SizeVar, Term, ValCmp) + ((Reduce,) if Reduce is not None else ())


def load_jax():
    """(jax, jax.numpy), with float64 enabled; a TLError when JAX is not installed."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as exc:
        raise TLError(f"the JAX backend needs JAX, which is not installed ({exc}); "
                      f"install it with: pip install 'jax[cpu]'") from None
    if not jax.config.jax_enable_x64:
        # tensorlang computes in float64; JAX defaults to float32 until told otherwise.
        jax.config.update("jax_enable_x64", True)
    return jax, jnp


class _LA:
    """An emitted expression with the index axes it is laid out over (scope order)."""
    __slots__ = ("code", "axes", "raw")

    def __init__(self, code: str, axes: tuple, raw: tuple | None = None):
        self.code = code
        self.axes = axes
        # (code, axes) of the same values in another axis order: a tensor as stored,
        # which einsum reads without the copy a transpose would make
        self.raw = raw


class _Scope:
    """Index axes in scope, in binding order, with their ranges.  `iotas` holds the
    indices fixed to one traced value (a recurrence's step): an axis of length 1
    whose values are that code instead of an arange."""

    def __init__(self, order: tuple = (), dims: dict | None = None, iotas: dict | None = None,
                 fixed: dict | None = None):
        self.order = order
        self.dims = dims or {}
        self.iotas = iotas or {}
        # indices fixed to a Python int of the traced function (a loop variable of an
        # unrolled term, see Emitter.unrolled): no axis, a scalar in index arithmetic
        self.fixed = fixed or {}

    def extend(self, names_dims) -> "_Scope":
        dims = dict(self.dims)
        dims.update(dict(names_dims))
        bound = dict(names_dims)
        iotas = {n: c for n, c in self.iotas.items() if n not in bound}
        fixed = {n: c for n, c in self.fixed.items() if n not in bound}
        return _Scope(self.order + tuple(n for n, _ in names_dims), dims, iotas, fixed)

    def fix(self, name: str, code: str) -> "_Scope":
        return _Scope(self.order, self.dims, self.iotas, {**self.fixed, name: code})

    def union(self, *axes_lists) -> tuple:
        seen = set()
        for axes in axes_lists:
            seen.update(axes)
        return tuple(a for a in self.order if a in seen and a not in self.fixed)


class Emitter:
    def __init__(self, prog: Program):
        self.prog = prog
        self.shapes = prog.shapes()
        self.lines: list[str] = []
        self.size_names = {z: f"s{k}" for k, z in enumerate(prog.sizes())}
        self.count = 0
        self.indent = "    "
        self.checks = 0             # label range checks emitted so far (flag_labels)
        self.groups = _recurrences(prog)
        for node in (n for st in prog.stmts for n in iter_nodes(st.body)):
            if not isinstance(node, _SUPPORTED):
                raise TLError(f"{prog.name}: {type(node).__name__} is not supported by the JAX "
                              f"backend yet")
        known = {p.name for p in prog.params}
        for g in self.groups.values():
            known |= set(g.members)         # read inside their group, step by step
        for st in prog.stmts:
            later = (tensor_reads(st.body) | gathered_tensors(st.body)) - known
            if later & {s.name for s in prog.stmts}:
                raise TLError(f"{prog.name}: statement {st.name} reads "
                              f"{', '.join(sorted(later))} before it is complete (a recurrence); "
                              f"recurrences are not supported by the JAX backend yet")
            known.add(st.name)

    # ------------------------------------------------------------ helpers
    def ext(self, d) -> str:
        return str(d) if isinstance(d, int) else self.size_names[d]

    def tmp(self, code: str) -> str:
        name = f"t{self.count}"
        self.count += 1
        self.lines.append(f"{self.indent}{name} = {code}")
        return name

    def align(self, la: _LA, axes: tuple) -> str:
        """la broadcastable against `axes` (a superset of its axes, same order)."""
        if la.axes == axes:
            return la.code
        missing = tuple(k for k, a in enumerate(axes) if a not in la.axes)
        return f"jnp.expand_dims({la.code}, {missing!r})"

    def shape(self, scope: _Scope, axes) -> str:
        return "(" + "".join(self.ext(scope.dims[a]) + ", " for a in axes) + ")"

    def full(self, la: _LA, scope: _Scope, axes: tuple) -> str:
        return f"jnp.broadcast_to({self.align(la, axes)}, {self.shape(scope, axes)})"

    # ------------------------------------------------------------ program
    def program(self) -> str:
        prog = self.prog
        self.lines = ["def run(env, sizes):",
                      "    # env: name -> array; sizes: size symbol -> int (static)"]
        for z, local in self.size_names.items():
            self.lines.append(f"    {local} = sizes[{z!r}]")
        top = len(self.lines)
        done: set = set()
        for st in prog.stmts:
            if st.name in self.groups:
                self.recurrence(self.groups[st.name])
                done.update(self.groups[st.name].members)
            if st.name in done:
                continue
            scope = _Scope().extend(list(st.indices))
            axes = tuple(n for n, _ in st.indices)
            self.lines.append(f"    # {st.name}")
            code = self.body(st.body, scope, axes)
            self.lines.append(f"    env[{st.name!r}] = jnp.asarray({code}, dtype=jnp.float64)")
        if self.checks:
            self.lines.insert(top, "    bad = False")
        flag = "bad" if self.checks else "False"
        self.lines.append(f"    return [env[o] for o in {list(prog.outputs)!r}], {flag}")
        return "\n".join(self.lines) + "\n"

    def recurrence(self, g) -> None:
        """A recurrence group as one lax.scan over its steps (the leading indices,
        flattened, each running upwards when the group reads back and downwards when
        it reads forward).  The members are the carry, NaN until computed; a step
        computes each member, in order, over its remaining indices with the leading
        ones fixed to the step's values, and writes that slice into the carry."""
        prog = self.prog
        stmts = [prog.stmt(m) for m in g.members]
        k = self.count
        self.count += 1
        lead = stmts[0].indices[:g.lead]
        exts = [self.ext(d) for _, d in lead]
        self.lines.append(f"    # recurrence {', '.join(g.members)}: steps over "
                          f"{', '.join(n for n, _ in lead)}")
        for st in stmts:
            self.lines.append(f"    env[{st.name!r}] = jnp.full({self.shape(_Scope().extend(list(st.indices)), [n for n, _ in st.indices])}, jnp.nan)")
        self.lines.append(f"    outer{k} = env")
        self.lines.append(f"    def step{k}(carry, p):")
        outer, self.indent = self.indent, "        "
        self.lines.append(f"        env = dict(outer{k})")
        self.lines.append(f"        env.update(zip({list(g.members)!r}, carry))")
        top, checks = len(self.lines), self.checks
        pos = [f"q{k}_{j}" for j in range(len(lead))]
        self.lines.append("        rest = p")
        for j in reversed(range(len(lead))):
            self.lines.append(f"        {pos[j]} = rest % {exts[j]}")
            if j:
                self.lines.append(f"        rest = rest // {exts[j]}")
            if g.steps[j] > 0:
                self.lines.append(f"        {pos[j]} = {exts[j]} - 1 - {pos[j]}")
        for st in stmts:
            fixed = st.indices[:g.lead]
            scope = _Scope().extend([(n, 1) for n, _ in fixed] + list(st.indices[g.lead:]))
            scope.iotas = {n: f"jnp.reshape({q}, (1,))" for (n, _), q in zip(fixed, pos)}
            axes = tuple(n for n, _ in st.indices)
            self.lines.append(f"        # {st.name}")
            code = self.body(st.body, scope, axes)
            start = ", ".join(pos + ["0"] * (len(st.indices) - g.lead))
            self.lines.append(f"        env[{st.name!r}] = lax.dynamic_update_slice("
                              f"env[{st.name!r}], jnp.asarray({code}, dtype=jnp.float64), "
                              f"({start},))")
        # each step's labels flagged as its output: the steps' flags say whether
        # any label of the group is out of range
        checked = self.checks > checks
        if checked:
            self.lines.insert(top, "        bad = False")
        self.lines.append(f"        return tuple(env[m] for m in {list(g.members)!r}), "
                          f"{'jnp.asarray(bad)' if checked else 'None'}")
        self.indent = outer
        total = " * ".join(exts)
        self.lines.append(f"    carry{k}, {f'bad{k}' if checked else '_'} = lax.scan(step{k}, "
                          f"tuple(env[m] for m in {list(g.members)!r}), jnp.arange({total}))")
        self.lines.append(f"    env.update(zip({list(g.members)!r}, carry{k}))")
        if checked:
            self.flag_labels(f"jnp.any(bad{k})")

    def flag_labels(self, bad: str) -> None:
        """Or `bad` into the flag of the function being written (`run`, or a
        recurrence's step), where the code stands: in a step, under an unrolled
        loop or one branch of a choice made when traced, the flag still sees it."""
        self.checks += 1
        self.lines.append(f"{self.indent}bad = bad | {bad}")

    def arange(self, scope: _Scope, name: str) -> str:
        code = scope.iotas.get(name)
        return code if code is not None else f"jnp.arange({self.ext(scope.dims[name])})"

    # ------------------------------------------------------------ bodies
    def body(self, body, scope: _Scope, axes: tuple) -> str:
        """The sum of terms as a dense array over `axes`."""
        if not body:
            return f"jnp.zeros({self.shape(scope, axes)})"
        las = [self.term(t, scope) for t in body]
        code = " + ".join(self.align(la, axes) for la in las)
        if any(la.axes == axes for la in las):
            return self.tmp(code)       # a term's value is dense over its axes
        return self.tmp(f"jnp.broadcast_to({code}, {self.shape(scope, axes)})")

    def body_la(self, body, scope: _Scope) -> _LA:
        used = set()
        for t in body:
            used |= term_index_names(t) - {n for n, _ in t.sums}
        axes = scope.union(used)
        return _LA(self.body(body, scope, axes), axes)

    def term(self, t: Term, scope: _Scope, into: str | None = None) -> _LA | None:
        """Term t as an array over its free indices; None when it was added into the
        array named `into` instead (see ``unrolled``)."""
        sum_names = {n for n, _ in t.sums}
        free = scope.union(term_index_names(t) - sum_names)
        scattered = self.scatter(t, scope, free)
        if scattered is not None:
            return scattered
        placed = self.diagonal(t, scope, free)
        if placed is not None:
            return placed
        candidates = self.unroll_candidates(t, scope, free)
        if candidates:
            return self.unrolled(t, scope, free, candidates, into)
        return self.term_whole(t, scope, free)

    def term_whole(self, t: Term, scope: _Scope, free: tuple) -> _LA:
        inner = scope.extend(list(t.sums))
        sum_axes = tuple(n for n, _ in t.sums)
        plain = all(isinstance(f, Access) for f, _ in t.factors)
        pred = t.pred
        if plain and all(p > 0 for _, p in t.factors):
            # a product of reads multiplies by 0.0 wherever a read leaves its tensor (it
            # reads 0 there), as the mask of a bracket would: brackets that only restate
            # a read's bounds are left out
            pred = tuple(a for a in pred if not _restates_bounds(a, t.factors, self.shapes))
        own = None
        for atom in pred:
            m = self.atom(atom, inner)
            own = m if own is None else self.both(inner, own, m, "&")
        factors = [(self.factor(f, inner), p) for f, p in t.factors]
        # (a fractional power of a read is NaN where the read is negative: under a
        # bracket it is computed point by point too, so the bracket stays a strong zero)
        whole_powers = all(float(p).is_integer() for _, p in factors)
        if all(p > 0 for _, p in factors) and (own is None or plain and whole_powers):
            operands = [la if p == 1 else _LA(f"jnp.power({la.code}, {float(p)!r})", la.axes)
                        for la, p in factors]
            if own is not None:
                operands.append(_LA(f"{own.code}.astype(jnp.float64)", own.axes))
            val = self.contract(operands, inner, free, sum_axes)
            if t.coeff != 1:
                val = f"{float(t.coeff)!r} * {val}"
            return _LA(self.tmp(val), free)
        return self.pointwise(t.coeff, factors, own, inner, free, sum_axes)

    # ------------------------------------------------------------ shifted reads
    def unroll_candidates(self, t: Term, scope: _Scope, free: tuple) -> list:
        """Indices of term t (summed or free) that some factor reads shifted by another
        index (``x[i + t]``, ``y[k - t]``): with a small extent (known when the function
        is traced) the term is computed once per value of that index, every shifted
        read then a static slice (see ``access``) instead of a gathered window."""
        if any(n.__class__ is Gather for n in iter_nodes(t)):
            return []
        sums = dict(t.sums)
        found = []
        for f, _ in t.factors:
            if f.__class__ is not Access:
                continue
            for a in f.idx:
                names = [v.name for v, _ in a.terms if v.__class__ is IndexVar
                         and v.name not in scope.fixed]
                if len(names) < 2:
                    continue
                for name in names:
                    if name in scope.iotas or name in found:
                        continue
                    if name in sums or name in free:
                        found.append(name)
        # an index whose extent is a small constant is unrolled without a test when
        # traced (summed before free); otherwise summed indices first, at most two, to
        # keep the emitted text small
        found.sort(key=lambda n: n not in sums)
        for name in found:
            if self._static_small(sums[name] if name in sums else scope.dims[name]):
                return [name]
        return found[:2]

    @staticmethod
    def _static_small(extent) -> bool:
        return isinstance(extent, int) and extent <= UNROLL

    def unrolled(self, t: Term, scope: _Scope, free: tuple, candidates: list,
                 into: str | None = None) -> _LA | None:
        """Term t with one candidate index running over a Python loop: summed, the
        term's values are added up; free, they are stacked along its axis.  A
        candidate whose extent is a small constant is the loop, with no test; else the
        first candidate whose extent is at most UNROLL when traced, and with none
        small enough the whole term as usual (each branch assigns the same name).
        Loops over constant summed extents nest into one running sum (`into`, the
        outer loop's array): a 5 x 5 kernel's 25 products are added one after the
        other, as hand-written code adds its taps, not in five partial sums, which
        XLA (not reassociating floating-point sums) fuses less well."""
        sums = dict(t.sums)
        outer = self.indent
        static = self._static_small(sums[candidates[0]] if candidates[0] in sums
                                    else scope.dims[candidates[0]])
        running = static and candidates[0] in sums
        if running and into is not None:
            result = into
        else:
            result, into = f"t{self.count}", None
            self.count += 1
        head = outer if static else outer + "    "
        for k, name in enumerate(candidates):
            extent = self.ext(sums[name] if name in sums else scope.dims[name])
            if not static:
                self.lines.append(f"{outer}{'if' if k == 0 else 'elif'} {extent} <= {UNROLL}:")
            self.indent = head
            loop = f"u{self.count}"
            self.count += 1
            if name in sums:
                inner = Term(t.coeff, tuple((n, d) for n, d in t.sums if n != name),
                             t.pred, t.factors)
                if into is None:
                    self.lines.append(f"{head}{result} = jnp.zeros({self.shape(scope, free)})")
            else:
                inner = t
                self.lines.append(f"{head}{result} = []")
            self.lines.append(f"{head}for {loop} in range({extent}):")
            self.indent = head + "    "
            fixed = scope.fix(name, loop)
            rest = fixed.union(free)
            val = self.term(inner, fixed, result if running else None)
            if name in sums:
                if val is not None:
                    self.lines.append(f"{self.indent}{result} = {result} + "
                                      f"{self.align(val, free)}")
            else:
                self.lines.append(f"{self.indent}{result}.append({self.full(val, fixed, rest)})")
                self.lines.append(f"{head}{result} = jnp.reshape(jnp.stack({result}, "
                                  f"axis={free.index(name)}), {self.shape(scope, free)})")
        self.indent = outer
        if static:
            return None if into is not None else _LA(result, free)
        self.lines.append(f"{outer}else:")
        self.indent = outer + "    "
        val = self.term_whole(t, scope, free)
        self.lines.append(f"{self.indent}{result} = {val.code}")
        self.indent = outer
        return _LA(result, free)

    def pointwise(self, coeff, factors, own, scope: _Scope, free, sum_axes) -> _LA:
        """The term at every point of its axes (division as in builtins.quotient:
        the numerators multiplied, then one true division per denominator), the
        bracket applied with `where`, then summed."""
        axes = scope.union(*[la.axes for la, _ in factors], own.axes if own is not None else ())
        val = f"jnp.float64({float(coeff)!r})"
        den = []
        for la, p in factors:
            arr = self.align(la, axes)
            if p > 0:
                val = f"{val} * " + (arr if p == 1 else f"jnp.power({arr}, {float(p)!r})")
            else:
                d = arr if p == -1 else f"jnp.power({arr}, {float(-p)!r})"
                if la.axes != axes:
                    # XLA turns a division by a broadcast into a product with its
                    # reciprocal (not correctly rounded: one ulp off, which soft-DTW's
                    # derivatives amplify a thousandfold); behind an optimization
                    # barrier the broadcast divisor stays a divisor
                    d = (f"lax.optimization_barrier(jnp.broadcast_to({d}, "
                         f"{self.shape(scope, axes)}))")
                den.append(d)
        for d in den:
            val = f"({val}) / {d}"
        val = self.tmp(f"jnp.broadcast_to({val}, {self.shape(scope, axes)})")
        if own is not None:
            val = self.tmp(f"jnp.where({self.align(own, axes)}, {val}, 0.0)")
        summed = tuple(k for k, a in enumerate(axes) if a in sum_axes)
        if summed:
            val = self.tmp(f"jnp.sum({val}, axis={summed!r})")
        absent = [self.ext(scope.dims[a]) for a in sum_axes if a not in axes]
        if absent:
            val = self.tmp(f"{val} * {' * '.join(absent)}")
        kept = tuple(a for a in axes if a not in sum_axes)
        return _LA(self.full(_LA(val, kept), scope, free), free)

    def contract(self, operands, scope: _Scope, free, sum_axes) -> str:
        scalars = [o.code for o in operands if not o.axes]
        operands = [o for o in operands if o.axes]
        if not operands:
            count = [self.ext(scope.dims[a]) for a in sum_axes]
            val = f"jnp.full({self.shape(scope, free)}, float({' * '.join(count) or '1'}))"
        else:
            present = set().union(*[set(o.axes) for o in operands])
            letters = {a: _LETTERS[k] for k, a in
                       enumerate(scope.union(free, sum_axes, *[o.axes for o in operands]))}
            stored = [o.raw or (o.code, o.axes) for o in operands]
            subs = ",".join("".join(letters[a] for a in axes) for _, axes in stored)
            kept = tuple(a for a in free if a in present)
            out = "".join(letters[a] for a in kept)
            if len(operands) == 1 and "".join(letters[a] for a in operands[0].axes) == out:
                val = operands[0].code
            elif not (present - set(kept)):
                # nothing summed: a product of broadcast factors (XLA fuses it), not a
                # dot_general whose every axis is a batch axis
                val = self.tmp(" * ".join(self.align(o, kept) for o in operands))
            else:
                args = ", ".join(code for code, _ in stored)
                val = self.tmp(f"jnp.einsum({subs + '->' + out!r}, {args}, "
                               f"precision=lax.Precision.HIGHEST)")
            absent = [self.ext(scope.dims[a]) for a in sum_axes if a not in present]
            if absent:
                val = f"{val} * {' * '.join(absent)}"
            if kept != free:
                val = self.full(_LA(val, kept), scope, free)
        for s in scalars:
            val = f"{s} * {val}"
        return val

    # ------------------------------------------------------------ scatters
    def scatter(self, t: Term, scope: _Scope, free: tuple) -> _LA | None:
        """A term whose bracket `[k == e]` pins a free index k (coefficient +-1) to
        an expression e of summed indices or labels: the rest of the term, with k
        replaced by e, evaluated over its own indices and added at positions e."""
        sums = dict(t.sums)
        for atom in t.pred:
            if atom.__class__ is not IdxCmp or atom.op != "==":
                continue
            for var, c in atom.aff.terms:
                if var.__class__ is not IndexVar or var.name not in free or c not in (1, -1) \
                        or var.name in scope.iotas:
                    continue
                rest = atom.aff - Affine(0, ((var, c),))
                used = rest.index_vars()
                moved = [n for n in sums if n in used]
                if var.name in used or not moved:
                    continue
                expr = rest.scale(-c)
                pred = tuple(a for a in t.pred if a is not atom)
                inner = Term(t.coeff, tuple((n, d) for n, d in t.sums if n not in moved),
                             pred, t.factors)
                inner = substitute_term(inner, {var.name: expr})
                if used <= set(moved) and not set(moved) & set(scope.order):
                    return self.scatter_rows(inner, scope, free, var.name, expr,
                                             [(n, sums[n]) for n in moved])
                grid = scope.extend([(n, sums[n]) for n in moved])
                axes = grid.union([a for a in free if a != var.name], moved, used)
                vals = self.full(self.term(inner, grid), grid, axes)
                idx = self.affine(expr, grid)
                extent = self.ext(scope.dims[var.name])
                where = self.tmp(self.full(idx, grid, axes))
                where = self.tmp(f"jnp.where(({where} >= 0) & ({where} < {extent}), "
                                 f"{where}, {extent})")
                index = []
                for a in free:
                    if a == var.name:
                        index.append(where)
                    else:
                        index.append(self.align(_LA(self.arange(scope, a), (a,)), axes))
                code = (f"jnp.zeros({self.shape(scope, free)}).at[({', '.join(index)},)]"
                        f".add({vals}, mode='drop')")
                return _LA(self.tmp(code), free)
        return None

    def scatter_rows(self, inner: Term, scope: _Scope, free: tuple, name: str, expr: Affine,
                     moved: list) -> _LA:
        """The scatter of ``scatter`` when the positions e depend on the moved (summed)
        indices alone (``E_bar[k, l] = sum[m]([k == y[m]] * Y_bar[m, l])``): the values
        laid out with the moved axes where k stands in the output, so one index array
        over them and whole slices of the other axes add rows (windows of XLA's
        scatter), not one element per index tuple read from a transposed copy."""
        dims = dict(moved)
        names = tuple(dims)
        order = []
        for a in scope.order:
            order += names if a == name else [a]
        grid = _Scope(tuple(order), {**scope.dims, **dims},
                      {n: c for n, c in scope.iotas.items() if n not in dims},
                      {n: c for n, c in scope.fixed.items() if n not in dims})
        lay = grid.union([a for a in free if a != name], names)
        vals = self.full(self.term(inner, grid), grid, lay)
        extent = self.ext(scope.dims[name])
        where = self.tmp(self.full(self.affine(expr, grid), grid, grid.union(names)))
        where = self.tmp(f"jnp.where(({where} >= 0) & ({where} < {extent}), {where}, "
                         f"{extent})")
        index = [where if a == name else "slice(None)" for a in free]
        code = (f"jnp.zeros({self.shape(scope, free)}).at[({', '.join(index)},)]"
                f".add({vals}, mode='drop')")
        return _LA(self.tmp(code), free)

    # ------------------------------------------------------------ diagonals
    def diagonal(self, t: Term, scope: _Scope, free: tuple) -> _LA | None:
        """A term whose bracket `[p == e]` ties a free index p (coefficient +-1) to an
        expression e of the other free indices, constants and sizes (the Hessian's
        block diagonal `[k == p] * sum[s](V[s, l] * V[s, q])`): the rest of the term,
        with p replaced by e, computed over the other free indices, then put where
        p == e and zero elsewhere.  As a mask inside the term's product the bracket
        would multiply every summed value once per (k, p) pair, an order more work
        than the term has entries (O(m^2 n r^2) against O(m n r^2) here).  p is the
        last such index in the output's order (a position, never a name)."""
        sums = {n for n, _ in t.sums}
        for atom in t.pred:
            if atom.__class__ is not IdxCmp or atom.op != "==":
                continue
            aff = atom.aff
            if any(v.__class__ not in (IndexVar, SizeVar) or
                   (v.__class__ is IndexVar and v.name in sums) for v, _ in aff.terms):
                continue            # a sum or a label inside: a scatter (or a mask)
            ties = {v.name: c for v, c in aff.terms if v.__class__ is IndexVar and
                    v.name in free and c in (1, -1) and v.name not in scope.iotas}
            if not ties:
                continue
            name = [a for a in free if a in ties][-1]
            c = ties[name]
            expr = (aff - Affine(0, ((IndexVar(name), c),))).scale(-c)
            pred = tuple(a for a in t.pred if a is not atom)
            inner = substitute_term(Term(t.coeff, t.sums, pred, t.factors), {name: expr})
            val = self.term(inner, scope)
            mask = self.atom(atom, scope)
            axes = scope.union(val.axes, mask.axes)
            code = self.tmp(f"jnp.where({self.align(mask, axes)}, {self.align(val, axes)}, "
                            f"0.0)")
            return _LA(code if axes == free else self.tmp(self.full(_LA(code, axes), scope,
                                                                    free)), free)
        return None

    # ------------------------------------------------------------ factors
    def factor(self, f, scope: _Scope) -> _LA:
        if isinstance(f, Access):
            return self.access(f.name, f.idx, scope, "0.0")
        if isinstance(f, Apply):
            args = [self.body_la(b, scope) for b in f.args]
            axes = scope.union(*[a.axes for a in args])
            code = jax_call(f.fn, [self.align(a, axes) for a in args])
            return _LA(self.tmp(self.full(_LA(code, axes), scope, axes)), axes)
        if isinstance(f, Group):
            return self.body_la(f.body, scope)
        if isinstance(f, SizeValue):
            return _LA(f"float({self.size_names[f.name]})", ())
        if Reduce is not None and isinstance(f, Reduce):
            return self.reduce(f, scope)
        raise TypeError(f)

    def reduce(self, f, scope: _Scope) -> _LA:
        """max / min / logsumexp of the body over the reduced axes where the filter
        holds (elsewhere the identity, -inf or +inf); logsumexp shifted by the max
        (by 0 where the max is not finite), as the interpreter computes it."""
        inner = scope.extend(list(f.over))
        names = tuple(n for n, _ in f.over)
        own = None
        for atom in f.where:
            m = self.atom(atom, inner)
            own = m if own is None else self.both(inner, own, m, "&")
        val = self.body_la(f.body, inner)
        axes = inner.union(val.axes, names, own.axes if own is not None else ())
        arr = self.tmp(self.full(val, inner, axes))
        if own is not None:
            fill = "jnp.inf" if f.op == "min" else "-jnp.inf"
            arr = self.tmp(f"jnp.where({self.align(own, axes)}, {arr}, {fill})")
        red = tuple(k for k, a in enumerate(axes) if a in names)
        if f.op in ("max", "min"):
            out = self.tmp(f"jnp.{f.op}({arr}, axis={red!r})")
        elif f.op == "logsumexp":
            top = self.tmp(f"jnp.max({arr}, axis={red!r}, keepdims=True)")
            shift = self.tmp(f"jnp.where(jnp.isfinite({top}), {top}, 0.0)")
            out = self.tmp(f"jnp.log(jnp.sum(jnp.exp({arr} - {shift}), axis={red!r})) + "
                           f"jnp.squeeze({shift}, axis={red!r})")
        else:
            raise TLError(f"{self.prog.name}: the reduction {f.op} is not supported by the JAX "
                          f"backend yet")
        return _LA(out, tuple(a for a in axes if a not in names))

    def affine(self, aff: Affine, scope: _Scope) -> _LA:
        parts = []
        for atom, c in aff.terms:
            if isinstance(atom, IndexVar) and atom.name in scope.fixed:
                la = _LA(scope.fixed[atom.name], ())
            elif isinstance(atom, IndexVar):
                la = _LA(self.arange(scope, atom.name), (atom.name,))
            elif isinstance(atom, SizeVar):
                la = _LA(self.size_names[atom.name], ())
            else:
                la = self.access(atom.name, atom.idx, scope, "0")
            parts.append((la, c))
        axes = scope.union(*[p.axes for p, _ in parts])
        code = " + ".join(([str(aff.const)] if aff.const or not parts else []) + [
            (self.align(la, axes) if c == 1 else f"{c} * {self.align(la, axes)}")
            for la, c in parts])
        return _LA(f"({code})", axes)

    def access(self, name: str, idx, scope: _Scope, fill: str) -> _LA:
        data = f"env[{name!r}]"
        if not idx:
            return _LA(data, ())
        dims = self.shapes[name][1]
        plain = [len(a.terms) == 1 and a.const == 0 and a.terms[0][1] == 1
                 and a.terms[0][0].__class__ is IndexVar
                 and a.terms[0][0].name not in scope.fixed for a in idx]
        names = [a.terms[0][0].name if ok else None for a, ok in zip(idx, plain)]
        if all(plain) and len(set(names)) == len(names) and \
                all(scope.dims[n] == d for n, d in zip(names, dims)):
            # x[i, j] over the full ranges: the array itself, its axes in scope order
            axes = scope.union(names)
            perm = tuple(names.index(a) for a in axes)
            if perm == tuple(range(len(perm))):
                return _LA(data, axes)
            return _LA(f"transpose_read({data}, {perm!r})", axes, (data, tuple(names)))
        shifted = self.shifted(data, idx, dims, scope, fill)
        if shifted is not None:
            return shifted
        las = [self.affine(a, scope) for a in idx]
        axes = scope.union(*[la.axes for la in las])
        subs, oks = [], []
        for k, (la, d) in enumerate(zip(las, dims)):
            arr = self.tmp(self.align(la, axes))
            hi = self.ext(d)
            inside = (la.axes and plain[k] and scope.dims[names[k]] == d)
            if any(isinstance(a, Gather) for a in idx[k].atoms()):
                # labels out of range anywhere (brackets not consulted): the caller
                # then asks the interpreter, which raises the located error or not
                self.flag_labels(f"jnp.any(({arr} < 0) | ({arr} >= {hi}))")
            if not inside:
                oks.append(f"({arr} >= 0) & ({arr} < {hi})")
                arr = f"jnp.clip({arr}, 0, {hi} - 1)"
            subs.append(arr)
        vals = f"{data}[{', '.join(subs)},]"
        if oks:
            vals = f"jnp.where({' & '.join(oks)}, {vals}, {fill})"
        return _LA(self.tmp(self.full(_LA(vals, axes), scope, axes)), axes)

    def shifted(self, data: str, idx, dims, scope: _Scope, fill: str) -> _LA | None:
        """x[i + c, j + d, ...]: each position one index (coefficient 1, distinct, an
        axis of the scope) plus an offset known when the function is traced (constants,
        sizes, fixed indices): the tensor shifted by the offsets and cut or padded with
        `fill` to the indices' ranges, one lax.pad (negative padding cuts), no gather."""
        names, offsets = [], []
        for a in idx:
            moving = [(v, c) for v, c in a.terms
                      if not (v.__class__ is SizeVar or
                              (v.__class__ is IndexVar and v.name in scope.fixed))]
            if len(moving) > 1:
                return None
            if moving:
                (v, c), = moving
                if v.__class__ is not IndexVar or c != 1 or v.name in scope.iotas:
                    return None
                names.append(v.name)
            else:
                v = None                # a position fixed when traced: one element
                names.append(None)
            rest = Affine(a.const, tuple((u, k) for u, k in a.terms if u is not v))
            offsets.append(self.affine(rest, scope).code)
        kept = [n for n in names if n is not None]
        if len(set(kept)) != len(kept) or (kept == names and all(o == "(0)" for o in offsets)):
            return None
        spec = ", ".join(f"({off}, {self.ext(scope.dims[n]) if n else 1})"
                         for n, off in zip(names, offsets))
        code = self.tmp(f"shift_read({data}, {fill}, ({spec},))")
        if len(kept) != len(names):
            code = self.tmp(f"jnp.reshape({code}, {self.shape(scope, kept)})")
        names = kept
        axes = scope.union(names)
        perm = tuple(names.index(a) for a in axes)
        if perm != tuple(range(len(perm))):
            return _LA(f"transpose_read({code}, {perm!r})", axes, (code, tuple(names)))
        return _LA(code, axes)

    # ------------------------------------------------------------ predicates
    def both(self, scope: _Scope, a: _LA, b: _LA, op: str) -> _LA:
        axes = scope.union(a.axes, b.axes)
        return _LA(f"({self.align(a, axes)} {op} {self.align(b, axes)})", axes)

    def atom(self, atom, scope: _Scope) -> _LA:
        if isinstance(atom, IdxCmp):
            la = self.affine(atom.aff, scope)
            test = {">=": ">= 0", "==": "== 0", "!=": "!= 0"}.get(atom.op)
            if atom.op == "%":
                test = f"% {atom.mod} == 0"
            if not la.axes:
                # a comparison of sizes and constants only (`[n >= 2]`) is a Python
                # bool when traced, with sizes static: make it an array like the rest
                return _LA(self.tmp(f"jnp.asarray({la.code} {test})"), la.axes)
            return _LA(self.tmp(f"{la.code} {test}"), la.axes)
        if isinstance(atom, Rel):
            la = self.access(atom.name, atom.idx, scope, "False")
            return _LA(f"{la.code}.astype(bool)", la.axes)
        if isinstance(atom, ValCmp):
            left = self.body_la(atom.left, scope)
            right = self.body_la(atom.right, scope)
            op = atom.op
            return self.both(scope, left, right, op)
        if isinstance(atom, NotAtom):
            la = self.atom(atom.atom, scope)
            return _LA(f"jnp.logical_not({la.code})", la.axes)
        if isinstance(atom, AnyOf):
            result = None
            for alt in atom.alts:
                conj = None
                for a in alt:
                    la = self.atom(a, scope)
                    conj = la if conj is None else self.both(scope, conj, la, "&")
                if conj is None:
                    conj = _LA("jnp.asarray(True)", ())
                result = conj if result is None else self.both(scope, result, conj, "|")
            return _LA(self.tmp(result.code), result.axes) if result is not None \
                else _LA("jnp.asarray(False)", ())
        raise TypeError(atom)


def _restates_bounds(atom, factors, shapes) -> bool:
    """`atom` is ``a >= 0`` or ``d - 1 - a >= 0`` for the index a of some read of the
    product into a dimension of extent d."""
    if atom.__class__ is not IdxCmp or atom.op != ">=":
        return False
    for f, _ in factors:
        for a, d in zip(f.idx, shapes[f.name][1]):
            for bound in (a, Affine.dim(d) - a - Affine(1)):
                gap = atom.aff - bound
                if not gap.terms and gap.const == 0:
                    return True
    return False


def _recurrences(prog: Program) -> dict:
    """first member -> recurrence group (ssa/recur.py), on an IR that has them."""
    try:
        from ..ssa.recur import recurrences
    except ImportError:
        return {}
    return {g.members[0]: g for g in recurrences(prog)}


# shift_read pads every axis of an array by a multiple of this many elements (at least
# one), the same for every small shift
PAD_GRAIN = 8


def shift_read(data, fill, spec):
    """data[o_0 + i_0, o_1 + i_1, ...] for i_k in range(L_k), `fill` outside data, for
    (o_k, L_k) in `spec` (Python ints when traced): a static slice of data when the
    window lies inside it; otherwise a static slice of data padded with `fill` on
    both sides of every axis by a multiple of PAD_GRAIN elements, at least one
    multiple.  The padding depends only on how far the window leaves data, rounded
    up, so the reads of one array at different small shifts (the taps of a stencil,
    unrolled) pad it alike: XLA computes that padded copy once and every tap is a
    slice of it, as hand-written JAX pads an image once and slices it per tap."""
    from jax import lax
    import jax.numpy as jnp
    need = [max(0, -off, off + length - d) for (off, length), d in zip(spec, data.shape)]
    if not any(need):
        return lax.slice(data, [off for off, _ in spec], [off + n for off, n in spec])
    pads = [max(1, -(-k // PAD_GRAIN)) * PAD_GRAIN for k in need]
    padded = lax.pad(data, jnp.asarray(fill, data.dtype), [(p, p, 0) for p in pads])
    return lax.slice(padded, [off + p for (off, _), p in zip(spec, pads)],
                     [off + n + p for (off, n), p in zip(spec, pads)])


# the least number of elements of an array whose transposed read is fenced off from
# its consumer (transpose_read)
FENCE = 4096


def transpose_read(data, perm):
    """jnp.transpose(data, perm) for an elementwise consumer.  XLA on CPU fuses a
    transpose that moves the last axis into the consumer's loop, which then reads
    the array element by element along a stride (A + A^T at n = 2000: ~15x the time
    of a transposed copy followed by the sum).  Inside a conditional, whose branches
    are computations of their own that nothing fuses into, the transpose is a copy
    of its own made by XLA's tiled transpose.  Both branches are the same transpose,
    so the predicate never matters: a constant behind an optimization barrier, which
    XLA does not fold, and which depends on no argument, so the read stays linear in
    data (JAX transposes it in reverse mode) and is not batched under jax.vmap.
    Small arrays, and permutations that keep the last axis, are plain transposes."""
    from jax import lax
    import jax.numpy as jnp
    perm = tuple(perm)
    if perm[-1] == len(perm) - 1 or data.size < FENCE:
        return jnp.transpose(data, perm)
    branch = lambda a: jnp.transpose(a, perm)  # noqa: E731
    return lax.cond(lax.optimization_barrier(jnp.asarray(False)), branch, branch, data)


HEADER = """\
# JAX code emitted by tensorlang from the program below; sizes are static.
{program}
import jax
import jax.numpy as jnp
from jax import lax
from tensorlang.backend.jax_backend import shift_read, transpose_read

"""


def emit(prog: Program) -> str:
    """The text of `run(env, sizes)` computing `prog` with jax.numpy: it returns the
    list of outputs and a flag, true when some gathered label lies outside the
    tensor it indexes (wherever a bracket may exclude it)."""
    return Emitter(prog).program()


def module_text(prog: Program) -> str:
    from ..ssa.printer import print_program
    comment = "\n".join("# " + line for line in print_program(prog).splitlines())
    return HEADER.format(program=comment) + emit(prog)


_CACHE: dict = {}


def runner(prog: Program):
    """The emitted `run(env, sizes)` of `prog` as a Python function (cached per program)."""
    fn = _CACHE.get(prog)
    if fn is None:
        jax, jnp = load_jax()
        from jax import lax
        text = emit(prog)
        space = {"jax": jax, "jnp": jnp, "lax": lax, "shift_read": shift_read,
                 "transpose_read": transpose_read}
        exec(compile(text, f"<tensorlang jax: {prog.name}>", "exec"), space)  # noqa: S102
        fn = space["run"]
        _CACHE[prog] = fn
    return fn


def sizes_of(prog: Program, arrays: dict) -> dict:
    """The size symbols' values read off the (static) shapes of the arguments."""
    from .. import sizexpr
    sizes: dict = {}
    for p in prog.params:
        for d, got in zip(p.dims, arrays[p.name].shape):
            if isinstance(d, str) and not sizexpr.is_derived(d):
                sizes.setdefault(d, int(got))
    for z in prog.sizes():
        if z not in sizes and sizexpr.is_derived(z):
            sizes[z] = sizexpr.value(z, sizes)
    return sizes
