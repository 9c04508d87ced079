"""Automatic differentiation by program transformation (forward and reverse mode)."""
