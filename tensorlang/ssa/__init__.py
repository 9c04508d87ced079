"""Tensor SSA: the flat single-assignment IR every later stage works on."""
