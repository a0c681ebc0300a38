// The ABI's compile-time shape (docs/kernel-contract.md), shared by the project's kernels: the defines'
// defaults, the four sizes as constants, and the input rules a build must satisfy.
#pragma once

#ifndef WGRAD_M
#define WGRAD_M 8192
#endif
#ifndef WGRAD_N
#define WGRAD_N 8192
#endif
#ifndef WGRAD_K
#define WGRAD_K 8192
#endif
#ifndef WGRAD_E
#define WGRAD_E 8
#endif

namespace {
constexpr long long M = WGRAD_M, N = WGRAD_N, K = WGRAD_K, E = WGRAD_E;
static_assert(M % 128 == 0 && N % 256 == 0 && K % 256 == 0 && E >= 1, "shape breaks the ABI's input rules");
}  // namespace
