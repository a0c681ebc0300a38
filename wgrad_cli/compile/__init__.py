"""Building kernels: the jobs a run selects, compilers, the cache, and reading code objects."""
