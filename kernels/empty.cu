// wgrad calibration kernel: takes the ABI's six arguments and does nothing.
//
// `wgrad bench` times one workgroup of it for its calibration row: the launch-to-launch floor
// below which no kernel time can be measured on the device. `wgrad verify --kernel empty` fails
// by design (every output stays unwritten): a negative control of the poison check.

#if defined(__HIP__)
#define WGRAD_GLOBAL __attribute__((global))
#elif defined(__CUDACC__)
#define WGRAD_GLOBAL __global__
#else
#error "build as HIP (clang -x hip / hipcc) or CUDA (nvcc)"
#endif

WGRAD_GLOBAL void wgrad_empty_kernel(unsigned short*, const unsigned char*, const unsigned char*,
                                     const unsigned char*, const unsigned char*, const int*) {}
