"""wgrad: build, verify and benchmark grouped MXFP8 weight-gradient kernels."""

__version__ = "0.1.0"
