// y = a x + y over n floats: a kernel of the project's own whose arguments are not wgrad's ABI
// (two pointers, a float and a count), for the launch-file tests. Header-free: clang-22 builds it.
extern "C" __attribute__((global)) void axpy(float *y, const float *x, float a, unsigned n) {
    const unsigned i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
    if (i < n) y[i] = a * x[i] + y[i];
}
