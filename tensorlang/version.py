"""The compiler's version: part of every cache key, so a new compiler never reuses old kernels."""
__version__ = "0.1.0"
