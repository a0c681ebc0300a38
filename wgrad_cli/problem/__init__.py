"""The problem itself: the kernel ABI and dims, MXFP8 quantization, random problems, the numpy reference."""
