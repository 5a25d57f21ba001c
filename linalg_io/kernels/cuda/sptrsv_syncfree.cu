// Synchronization-free sparse triangular solve (Liu et al., Euro-Par'16), CSC form.
//
// Solves the m x m lower-triangular block L x = s where `left` holds s on entry (b minus
// the contributions of values outside the block, already subtracted). One warp per
// column j, taken in increasing order from a global counter (so every column a warp
// waits for belongs to a warp that is already running: no deadlock). The warp spins until
// in_degree[j] == 0 (all rows j depends on are solved), computes x_j = left_j / diag_j,
// then pushes -L_ij x_j into left_i with atomicAdd and decrements in_degree[i] for each
// row i below j in column j (a fence orders the two). nrhs right-hand sides, row-major.
// Per solve: every nonzero read once, one double atomic per off-diagonal nonzero per rhs.

extern "C" __global__ void sptrsv_syncfree_csc(
    const long long* __restrict__ colptr, const int* __restrict__ rowidx,
    const double* __restrict__ val, const double* __restrict__ diag,
    double* left, int* in_degree, double* x, const int m, const int nrhs,
    int* next_column)
{
    const int lane = threadIdx.x & 31;
    int j = 0;
    if (lane == 0) {
        j = atomicAdd(next_column, 1);
    }
    j = __shfl_sync(0xffffffffu, j, 0);
    if (j >= m) {
        return;
    }
    if (lane == 0) {
        volatile int* degree = in_degree;
        while (degree[j] != 0) {
        }
    }
    __syncwarp();
    __threadfence();
    const volatile double* ready = left;
    const double d = diag[j];
    const long long begin = colptr[j], end = colptr[j + 1];
    for (int r = 0; r < nrhs; ++r) {
        const double xj = ready[(long long)j * nrhs + r] / d;
        if (lane == 0) {
            x[(long long)j * nrhs + r] = xj;
        }
        for (long long k = begin + lane; k < end; k += 32) {
            atomicAdd(&left[(long long)rowidx[k] * nrhs + r], -val[k] * xj);
        }
    }
    __threadfence();
    for (long long k = begin + lane; k < end; k += 32) {
        atomicSub(&in_degree[rowidx[k]], 1);
    }
}
