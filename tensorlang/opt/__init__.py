"""Simplification passes: small named rewrite rules run to a fixed point."""
