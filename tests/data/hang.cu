// A kernel that never ends, with the ABI's six arguments (expert_off[0] is never negative): the
// GPU test of --kernel-timeout in tests/test_waiting.py runs it as `--kernel empty
// --kernel-source`. The spin reads through a volatile pointer, so the compiler cannot drop it.

#if defined(__HIP__)
#define WGRAD_GLOBAL __attribute__((global))
#elif defined(__CUDACC__)
#define WGRAD_GLOBAL __global__
#else
#error "build as HIP (clang -x hip / hipcc) or CUDA (nvcc)"
#endif

WGRAD_GLOBAL void wgrad_empty_kernel(unsigned short*, const unsigned char*, const unsigned char*,
                                     const unsigned char*, const unsigned char*, const int* expert_off) {
    while (*(volatile const int*)expert_off >= 0) {
    }
}
