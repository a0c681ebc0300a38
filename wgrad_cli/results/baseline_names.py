"""The baselines bench can time, by name (baselines.py runs them): results files, tables and plots
know them without loading the code that runs torch."""

NAMES = ("torch-grouped", "torch-loop", "compiled-grouped", "compiled-loop", "autotuned-grouped",
         "compiled-dequant", "bf16-ceiling", "bf16-grouped", "bf16-loop", "fp8-ceiling")
# dequantization and GEMM timed; dequantization alone; the one GEMM; the GEMMs on this shape, not dequantizing
TORCH_PATHS, DEQUANT, CEILING, SAME_SHAPE = NAMES[:5], NAMES[5], NAMES[6], NAMES[7:9]
