// Tall-and-skinny GEMM on the GPU after TSM2X (Rivera et al.): C = A B with B small.
//
// Compiled by CuPy's RawModule (NVRTC, no host headers); the launcher
// (linalg_io/kernels/tsm2_gpu.py) instantiates the templates through name_expressions.
// T: float or double; T1 threads per block (= rows of A per block and rows of the B
// tile), T2 columns of C per thread (kept in registers), T3 elements of A prefetched
// into registers; ROW_A: A and C row-major (C order) instead of column-major.
//
// tsm2r: A m x k large, B k x n with n small. One thread per row of A; the block walks
// k in tiles of T1 rows of B (a T1 x T2 tile in shared memory, double-buffered: the
// next tile is read into registers while the current one is used). A is streamed
// once per column tile of C (gridDim.y = ceil(n / T2) tiles).
// tsm2l: A m x k with m huge, k small; B (k x n) sits whole in shared memory, loaded
// once per block, and each thread walks rows with a grid stride (fewer blocks, more
// rows per thread), prefetching the next T3 elements of its row of A.

template <typename T, bool ROW_A>
__device__ __forceinline__ T load_a(const T *a, long long i, long long p, long long lda)
{
    return ROW_A ? a[i * lda + p] : a[p * lda + i];
}

template <typename T, bool ROW_A>
__device__ __forceinline__ void store_c(T *c, long long i, int j, long long ldc, T value)
{
    if (ROW_A) c[i * ldc + j] = value; else c[(long long)j * ldc + i] = value;
}

template <typename T, int T1, int T2, int T3, bool ROW_A>
__global__ void __launch_bounds__(T1) tsm2r(const T *__restrict__ a, const T *__restrict__ b,
                                            T *__restrict__ c, long long m, int k, int n,
                                            long long lda, long long ldc)
{
    __shared__ T tile[2][T1][T2];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * T1 + t;
    const int j0 = blockIdx.y * T2;
    T acc[T2];
#pragma unroll
    for (int j = 0; j < T2; ++j) acc[j] = T(0);

    // B tile 0: thread t holds row t of the tile (B is row-major k x n).
#pragma unroll
    for (int j = 0; j < T2; ++j)
        tile[0][t][j] = (t < k && j0 + j < n) ? b[(long long)t * n + j0 + j] : T(0);
    __syncthreads();

    int buf = 0;
    for (int p0 = 0; p0 < k; p0 += T1) {
        T next_b[T2];
        const int pn = p0 + T1 + t;
#pragma unroll
        for (int j = 0; j < T2; ++j)
            next_b[j] = (pn < k && j0 + j < n) ? b[(long long)pn * n + j0 + j] : T(0);

        T a_now[T3], a_next[T3];
#pragma unroll
        for (int q = 0; q < T3; ++q)
            a_now[q] = (i < m && p0 + q < k) ? load_a<T, ROW_A>(a, i, p0 + q, lda) : T(0);
#pragma unroll 1
        for (int pp = 0; pp < T1; pp += T3) {
#pragma unroll
            for (int q = 0; q < T3; ++q) {
                const int p = p0 + pp + T3 + q;
                a_next[q] = (i < m && pp + T3 < T1 && p < k) ? load_a<T, ROW_A>(a, i, p, lda)
                                                               : T(0);
            }
#pragma unroll
            for (int q = 0; q < T3; ++q)
#pragma unroll
                for (int j = 0; j < T2; ++j) acc[j] += a_now[q] * tile[buf][pp + q][j];
#pragma unroll
            for (int q = 0; q < T3; ++q) a_now[q] = a_next[q];
        }
#pragma unroll
        for (int j = 0; j < T2; ++j) tile[buf ^ 1][t][j] = next_b[j];
        __syncthreads();
        buf ^= 1;
    }
    if (i < m) {
#pragma unroll
        for (int j = 0; j < T2; ++j)
            if (j0 + j < n) store_c<T, ROW_A>(c, i, j0 + j, ldc, acc[j]);
    }
}

template <typename T, int T1, int T2, int T3, bool ROW_A>
__global__ void __launch_bounds__(T1) tsm2l(const T *__restrict__ a, const T *__restrict__ b,
                                            T *__restrict__ c, long long m, int k, int n,
                                            long long lda, long long ldc)
{
    extern __shared__ unsigned char shared_raw[];
    T *sb = reinterpret_cast<T *>(shared_raw);  // k x T2 slice of B, row-major
    const int j0 = blockIdx.y * T2;
    for (int e = threadIdx.x; e < k * T2; e += T1) {
        const int p = e / T2, j = e % T2;
        sb[e] = (j0 + j < n) ? b[(long long)p * n + j0 + j] : T(0);
    }
    __syncthreads();

    const long long stride = (long long)gridDim.x * T1;
    for (long long i = (long long)blockIdx.x * T1 + threadIdx.x; i < m; i += stride) {
        T acc[T2];
#pragma unroll
        for (int j = 0; j < T2; ++j) acc[j] = T(0);
        T a_now[T3], a_next[T3];
#pragma unroll
        for (int q = 0; q < T3; ++q) a_now[q] = q < k ? load_a<T, ROW_A>(a, i, q, lda) : T(0);
        for (int p0 = 0; p0 < k; p0 += T3) {
#pragma unroll
            for (int q = 0; q < T3; ++q)
                a_next[q] = p0 + T3 + q < k ? load_a<T, ROW_A>(a, i, p0 + T3 + q, lda) : T(0);
#pragma unroll
            for (int q = 0; q < T3; ++q) {
                if (p0 + q < k) {
#pragma unroll
                    for (int j = 0; j < T2; ++j) acc[j] += a_now[q] * sb[(p0 + q) * T2 + j];
                }
            }
#pragma unroll
            for (int q = 0; q < T3; ++q) a_now[q] = a_next[q];
        }
#pragma unroll
        for (int j = 0; j < T2; ++j)
            if (j0 + j < n) store_c<T, ROW_A>(c, i, j0 + j, ldc, acc[j]);
    }
}

#ifdef LINALG_IO_NVCC_CHECK
// Offline compile check only (tests/test_tsgemm_cuda_compile.py): one instantiation of
// each template per type and layout, so nvcc type-checks the bodies.
template __global__ void tsm2r<double, 128, 16, 8, false>(const double *, const double *,
                                                          double *, long long, int, int,
                                                          long long, long long);
template __global__ void tsm2r<float, 256, 8, 4, true>(const float *, const float *, float *,
                                                       long long, int, int, long long,
                                                       long long);
template __global__ void tsm2l<double, 128, 16, 4, true>(const double *, const double *,
                                                         double *, long long, int, int,
                                                         long long, long long);
template __global__ void tsm2l<float, 256, 32, 2, false>(const float *, const float *,
                                                         float *, long long, int, int,
                                                         long long, long long);
#endif
