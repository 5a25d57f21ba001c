/* Tall-and-skinny GEMM kernels (C side of linalg_io._kernels.tsgemm).
 *
 * tsgemm_impl.h is instantiated for double (suffix d) and float (suffix s) with
 * 32-byte GCC vectors: AVX2 registers on x86-64-v3 and newer, pairs of SSE
 * registers or scalars elsewhere (same results, lower speed). Non-temporal stores
 * (TS_STREAM) are used only where the caller checked 32-byte alignment.
 */
#ifndef LINALG_IO_TSGEMM_KERNELS_H
#define LINALG_IO_TSGEMM_KERNELS_H

#include <stdlib.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#define TS_NV_MAX 4
/* Bytes of packed B per k panel of the row-major A B kernel: half of a 512 KiB L2, so
 * that long rows of A (TSM2R) are read in segments of several KiB (hardware
 * prefetchers follow them) while the panel of B is reused from L2 by every row. */
#ifndef TS_KB_BYTES
#define TS_KB_BYTES 262144
#endif

/* A B with n <= TS_DOT_MAX_N and k >= TS_DOT_MIN_K (long rows, TSM2R): dot products. */
#ifndef TS_DOT_MAX_N
#define TS_DOT_MAX_N 4
#endif
#ifndef TS_DOT_MIN_K
#define TS_DOT_MIN_K 64
#endif

/* Reading one range as several sequential streams (the read probe; A^T B's two parts):
 * each starts TS_PART_SKEW bytes beyond an equal split, so that no two are a power of two
 * apart (on the development machine, with software prefetch, four streams exactly 256 MiB
 * apart read 8.7 GB/s, three 341 MiB apart 18.1). */
#ifndef TS_PART_SKEW
#define TS_PART_SKEW (1L << 20)
#endif

/* Rows [r0, r1) as parts read together, each {i, rows, d}: rows [i, i + rows) and, d != 0,
 * [i + d, i + d + rows) at once. With at least 8 skew rows (skew: TS_PART_SKEW in rows) two
 * halves a skew apart, then the skew rows between and the one left after; else one part.
 * Returns the number of parts (1 or 3). */
typedef struct { long i, rows, d; } ts_part;

static inline int ts_two_parts(long r0, long r1, long skew, ts_part part[3])
{
    if (r1 - r0 < 8 * skew) {
        part[0] = (ts_part){r0, r1 - r0, 0};
        return 1;
    }
    const long half = (r1 - r0 - skew) / 2;
    part[0] = (ts_part){r0, half, half + skew};
    part[1] = (ts_part){r0 + half, skew, 0};
    part[2] = (ts_part){r0 + 2 * half + skew, r1 - r0 - 2 * half - skew, 0};
    return 3;
}

/* Software prefetch distance of the streamed operands (bytes ahead). */
#ifndef TS_PF_BYTES
#define TS_PF_BYTES 2048
#endif
#ifndef TS_PF_ROW_BYTES
#define TS_PF_ROW_BYTES 2048
#endif

/* A^T B reads four streams (A and B of two parts) with no reuse; software prefetch this
 * far ahead in each (same process, NumPy arrays 2^22 x K, one thread, none -> 1 KiB, five
 * and four paired runs: fp64 K = 16 17.2-22.8 -> 20.8-26.1 GFLOP/s; K = 4 4.0-6.4 ->
 * 4.2-6.3, +31% in one run, -2% to +8% in the others). */
#ifndef TS_ATB_PF_BYTES
#define TS_ATB_PF_BYTES 1024
#endif

/* Prefetch the cache lines that start in [p + ahead, p + ahead + bytes): called for
 * consecutive spans of a stream, every line ahead of it is asked for once. */
static inline void ts_prefetch_span(const void *p, long bytes, long ahead)
{
    const unsigned long from = (unsigned long)p + ahead, to = from + bytes;
    for (unsigned long line = (from + 63) & ~63UL; line < to; line += 64)
        __builtin_prefetch((const void *)line);
}

typedef double ts_vd __attribute__((vector_size(32)));
typedef float ts_vs __attribute__((vector_size(32)));

/* TS_KEEP(v): keep a loaded vector in a register (stops GCC from folding the load into
 * every FMA that uses it, which would double the load traffic of the micro-kernels). */
#if defined(__AVX__)
#define TS_KEEP(v) __asm__("" : "+x"(v))
#else
#define TS_KEEP(v) ((void)0)
#endif

#define T double
#define V ts_vd
#define W 4
#define SFX d
#if defined(__AVX__)
#define TS_STREAM(p, v) _mm256_stream_pd((p), (__m256d)(v))
#define TS_BCAST(x) _mm256_set1_pd(x)
#if defined(__AVX2__)
#define TS_MASK(count) _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), \
                                          _mm256_setr_epi64x(0, 1, 2, 3))
#define TS_MASKLOAD(p, mask) ((ts_vd)_mm256_maskload_pd((p), (mask)))
#define TS_MASKSTORE(p, mask, v) _mm256_maskstore_pd((p), (mask), (__m256d)(v))
#define TS_STORE_HALF(p, v) _mm_storeu_pd((p), _mm256_castpd256_pd128((__m256d)(v)))
#endif
#else
#define TS_BCAST(x) ((ts_vd){(x), (x), (x), (x)})
#define TS_STREAM(p, v) st_d((p), (v))
#endif
#include "tsgemm_impl.h"
#include "tsgemm_undef.h"

#define T float
#define V ts_vs
#define W 8
#define SFX s
#if defined(__AVX__)
#define TS_STREAM(p, v) _mm256_stream_ps((p), (__m256)(v))
#define TS_BCAST(x) _mm256_set1_ps(x)
#if defined(__AVX2__)
#define TS_MASK(count) _mm256_cmpgt_epi32(_mm256_set1_epi32(count), \
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define TS_MASKLOAD(p, mask) ((ts_vs)_mm256_maskload_ps((p), (mask)))
#define TS_MASKSTORE(p, mask, v) _mm256_maskstore_ps((p), (mask), (__m256)(v))
#define TS_STORE_HALF(p, v) _mm_storeu_ps((p), _mm256_castps256_ps128((__m256)(v)))
#endif
#else
#define TS_BCAST(x) ((ts_vs){(x), (x), (x), (x), (x), (x), (x), (x)})
#define TS_STREAM(p, v) st_s((p), (v))
#endif
#include "tsgemm_impl.h"
#include "tsgemm_undef.h"

/* Sum of p[0..n) read once, as TS_READ_STREAMS sequential streams visited one cache line
 * at a time, each starting TS_PART_SKEW bytes beyond an equal split; what the split
 * leaves over is read after. A read-only
 * bandwidth probe: on one core of the development machine four such streams read
 * 1.2-1.7x as fast as one (1 GiB, runs taken back to back: 12.2-14.0 against 9.8-10.0
 * GB/s in a slow hour, 20.3 against 11.9 in a fast one). */
#define TS_READ_STREAMS 4
static inline double ts_read_sum(const double *p, long n)
{
    enum { S = TS_READ_STREAMS, L = 8 };
    const long skew = TS_PART_SKEW / sizeof(double);
    const long len = n > S * skew ? (n - (S - 1) * skew) / S / L * L : 0;
    double sum = 0;
    if (len == 0) {
        for (long i = 0; i < n; ++i) sum += p[i];
        return sum;
    }
    ts_vd acc[S][2];
    for (int s = 0; s < S; ++s) acc[s][0] = acc[s][1] = (ts_vd){0};
    for (long i = 0; i < len; i += L)
        for (int s = 0; s < S; ++s) {
            const double *q = p + s * (len + skew) + i;
            acc[s][0] += ld_d(q);
            acc[s][1] += ld_d(q + 4);
        }
    ts_vd total = {0};
    for (int s = 0; s < S; ++s) total += acc[s][0] + acc[s][1];
    sum = total[0] + total[1] + total[2] + total[3];
    for (int s = 0; s < S; ++s) {
        const long gap_end = s + 1 < S ? (s + 1) * (len + skew) : n;
        for (long i = s * (len + skew) + len; i < gap_end; ++i) sum += p[i];
    }
    return sum;
}

/* Order stores issued with TS_STREAM before the results are read elsewhere. */
static inline void ts_store_fence(void)
{
#if defined(__AVX__)
    _mm_sfence();
#endif
}

#endif
