/* The CUDA kernels of linalg_io/kernels/cuda compiled for the host (emulation.h) as a
 * shared library for ctypes (tests/cuda_emulator.py). TSM2_SOURCE and SPTRSV_SOURCE name
 * the sources (with `extern __shared__` rewritten, see emulation.h); TSM2_TABLE a file of
 * TSM2_KERNEL(kernel, type, T1, T2, T3, row_major) lines, the instantiations to build. */
#include "emulation.h"

#include <cstring>
#include <functional>

#include TSM2_SOURCE
#include SPTRSV_SOURCE

alignas(16) unsigned char shared_raw[48 * 1024];

namespace {
using Tsm2Call = std::function<void(const void *, const void *, void *, long long, int, int,
                                    long long, long long)>;
struct Tsm2Entry {
    const char *name;
    Tsm2Call call;
};

template <class T>
Tsm2Call tsm2_call(void (*kernel)(const T *, const T *, T *, long long, int, int, long long,
                                  long long))
{
    return [kernel](const void *a, const void *b, void *c, long long m, int k, int n,
                    long long lda, long long ldc) {
        kernel(static_cast<const T *>(a), static_cast<const T *>(b), static_cast<T *>(c), m, k,
               n, lda, ldc);
    };
}

#define TSM2_KERNEL(KERNEL, T, T1, T2, T3, ROW) \
    {#KERNEL "<" #T ", " #T1 ", " #T2 ", " #T3 ", " #ROW ">", \
     tsm2_call<T>(KERNEL<T, T1, T2, T3, ROW>)},
const Tsm2Entry tsm2_table[] = {
#include TSM2_TABLE
};
}  // namespace

/* The launch of cupy's RawModule function `name` (a name expression), its threads fibers;
 * -1: not built, -2: more dynamic shared memory than shared_raw holds, -3: a barrier that
 * not every thread of a block reaches. */
extern "C" int tsm2_launch(const char *name, unsigned grid_x, unsigned grid_y, unsigned threads,
                           long shared, const void *a, const void *b, void *c, long long m,
                           int k, int n, long long lda, long long ldc)
{
    if (shared > (long)sizeof shared_raw) return -2;
    for (const Tsm2Entry &entry : tsm2_table)
        if (std::strcmp(entry.name, name) == 0) {
            return emu::launch(dim3{grid_x, grid_y, 1}, dim3{threads, 1, 1},
                               [&] { entry.call(a, b, c, m, k, n, lda, ldc); }) ? 0 : -3;
        }
    return -1;
}

extern "C" void sptrsv_launch(unsigned grid, unsigned threads, const long long *colptr,
                              const int *rowidx, const double *val, const double *diag,
                              double *left, int *in_degree, double *x, int m, int nrhs,
                              int *next_column)
{
    // OS threads: a warp spins until the columns it needs are solved (emulation.h)
    emu::launch_threads(dim3{grid, 1, 1}, dim3{threads, 1, 1}, [&] {
        sptrsv_syncfree_csc(colptr, rowidx, val, diag, left, in_degree, x, m, nrhs,
                            next_column);
    });
}
