/* Tall-and-skinny GEMM micro-kernels, one instantiation per element type.
 *
 * Included twice by tsgemm_kernels.h with T (element type), V (32-byte GCC vector of
 * T), W (elements per vector), SFX (name suffix) and TS_STREAM (non-temporal store
 * of one V) defined. Every kernel streams its tall operand(s) exactly once from
 * memory; the small operand sits in L1 or L2 (packed) and the output tile in registers:
 * accumulators are arrays of V indexed by compile-time constants after inlining, so
 * GCC keeps them in registers (at most 12 of the 16 ymm registers).
 */

/* Register tile height for NV vectors per row: 12 accumulators (two FMA pipes x 4
 * cycles latency need at least 8 independent chains; 12 leave slack; NV = 1 keeps two
 * per row, for even and odd p),
 * plus up to 3 vectors of B kept in registers (a 4th is read from L1 by each FMA)
 * and one broadcast: at most 16 vector registers. */
#define TS_ROWS_FOR(nv) ((nv) == 1 ? 6 : (nv) == 2 ? 6 : (nv) == 3 ? 4 : 3)
#define TS_CAT2(a, b) a##_##b
#define TS_CAT(a, b) TS_CAT2(a, b)
#define F(name) TS_CAT(name, SFX)

static inline V F(ld)(const T *p) { V v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void F(st)(T *p, V v) { __builtin_memcpy(p, &v, sizeof v); }
static inline V F(bc)(T x) { return (V)TS_BCAST(x); }
/* The first `count` (< W) elements: AVX2 masked loads and stores (never touching the
 * elements beyond), byte copies elsewhere. */
static inline V F(ld_part)(const T *p, int count)
{
#if defined(TS_MASKLOAD)
    return TS_MASKLOAD(p, TS_MASK(count));
#else
    V v = {0};
    __builtin_memcpy(&v, p, (size_t)count * sizeof(T));
    return v;
#endif
}
static inline void F(st_part)(T *p, V v, int count)
{
#if defined(TS_MASKSTORE)
    if (count == W / 2)
        TS_STORE_HALF(p, v); /* masked stores are microcoded (slow) on AMD cores */
    else
        TS_MASKSTORE(p, TS_MASK(count), v);
#else
    __builtin_memcpy(p, &v, (size_t)count * sizeof(T));
#endif
}

/* ---------------------------------------------------------------------------
 * C = A B, A row-major (m x k, lda), B packed, C row-major (ldc).
 * Packed B: column panels of at most TS_NV_MAX vectors; panel cp (NV vectors: TS_NV_MAX
 * but for the last) starts at bp + cp * k * TS_NV_MAX * W and holds rows p = 0..k-1 of
 * NV * W elements, zero padded: element (p, j) at [p * NV * W + j]. Rows only as wide as
 * the panel keep B's cache lines dense: TSM2R fp32 n = 16 with 64- instead of 128-byte
 * rows of B, same process, one thread 46.5 -> 57.5 and 58.5 -> 72.9 GFLOP/s, two threads
 * 93 -> 113.
 * Micro-kernel: R rows of A times one panel of NV vectors over rows p0..p0+kb-1.
 * Software prefetch of A (the hardware prefetchers alone leave the stream short of the
 * copy bandwidth): pf > 0, short contiguous rows: pf bytes ahead of each block;
 * pf_row > 0, long rows: pf_row bytes ahead along each of the R rows, one cache line
 * per row per strip of 64 bytes of p, running on into the next block's rows at the end.
 */
static inline void F(pf_rows)(const T *a, long lda, int R, int p, int kb, long pf_row)
{
    long q = p + pf_row / (long)sizeof(T);
    if (q >= kb) {
        q -= kb;
        a += R * lda;
    }
    for (int r = 0; r < R; ++r) __builtin_prefetch(a + r * lda + q);
}

static inline __attribute__((always_inline)) void F(mk_ab_c)(
    const int R, const int NV, const int FULL, long blocks, const T *restrict a, long lda, int kb,
    const T *restrict bp, T *restrict c, long ldc, int ncols, int accumulate, int stream, long pf,
    long pf_row)
{
    enum { L = 64 / sizeof(T) };
    for (long blk = 0; blk < blocks; ++blk, a += R * lda, c += R * ldc) {
        if (pf)
            for (long l = 0; l < R * lda * (long)sizeof(T); l += 64)
                __builtin_prefetch((const char *)a + pf + l);
        V acc[12][4];
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = F(bc)(0);
        int p = 0;
        if (NV == 1 && kb >= 16) {
            /* one vector per row and long rows: two accumulators per row (even and odd
             * p) so that short row blocks still keep 8 FMA chains in flight */
            V odd[12];
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r) odd[r] = F(bc)(0);
            while (p + 1 < kb) {
              const int strip_end = pf_row && p + L < kb ? p + L : kb;
              if (pf_row) F(pf_rows)(a, lda, R, p, kb, pf_row);
              for (; p + 1 < strip_end; p += 2) {
                V b0 = F(ld)(bp + (long)p * NV * W);
                V b1 = F(ld)(bp + (long)(p + 1) * NV * W);
                TS_KEEP(b0);
                TS_KEEP(b1);
#pragma GCC unroll 12
                for (int r = 0; r < R; ++r) {
                    acc[r][0] += F(bc)(a[r * lda + p]) * b0;
                    odd[r] += F(bc)(a[r * lda + p + 1]) * b1;
                }
              }
            }
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r) acc[r][0] += odd[r];
        }
        while (p < kb) {
          const int strip_end = pf_row && p + L < kb ? p + L : kb;
          if (pf_row) F(pf_rows)(a, lda, R, p, kb, pf_row);
          for (; p < strip_end; ++p) {
            V b[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                b[v] = F(ld)(bp + (long)p * NV * W + v * W);
                if (v < 3) TS_KEEP(b[v]);
            }
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r) {
                V ar = F(bc)(a[r * lda + p]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[r][v] += ar * b[v];
            }
          }
        }
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) {
            T *cr = c + r * ldc;
            if (FULL) {
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) {
                    V x = acc[r][v];
                    if (accumulate) x += F(ld)(cr + v * W);
                    if (stream) TS_STREAM(cr + v * W, x); else F(st)(cr + v * W, x);
                }
            } else {
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) {
                    if (v * W >= ncols) break;
                    int count = ncols - v * W < W ? ncols - v * W : W;
                    V x = acc[r][v];
                    if (accumulate) x += F(ld_part)(cr + v * W, count);
                    F(st_part)(cr + v * W, x, count);
                }
            }
        }
    }
}

#define TS_AB_C(RR, NN) case RR * 16 + NN: \
    if (ncols == NN * W) F(mk_ab_c)(RR, NN, 1, blocks, a, lda, kb, bp, c, ldc, ncols, \
                                    accumulate, stream, pf, pf_row); \
    else F(mk_ab_c)(RR, NN, 0, blocks, a, lda, kb, bp, c, ldc, ncols, accumulate, stream, pf, pf_row); \
    break;

static void F(mk_ab_c_any)(int R, int NV, long blocks, const T *a, long lda, int kb,
                           const T *bp, T *c, long ldc, int ncols, int accumulate, int stream,
                           long pf, long pf_row)
{
    switch (R * 16 + NV) {
        TS_AB_C(1, 1) TS_AB_C(2, 1) TS_AB_C(3, 1) TS_AB_C(4, 1)
        TS_AB_C(5, 1) TS_AB_C(6, 1) TS_AB_C(7, 1) TS_AB_C(8, 1)
        TS_AB_C(9, 1) TS_AB_C(10, 1) TS_AB_C(11, 1) TS_AB_C(12, 1)
        TS_AB_C(1, 2) TS_AB_C(2, 2) TS_AB_C(3, 2) TS_AB_C(4, 2) TS_AB_C(5, 2) TS_AB_C(6, 2)
        TS_AB_C(1, 3) TS_AB_C(2, 3) TS_AB_C(3, 3) TS_AB_C(4, 3)
        TS_AB_C(1, 4) TS_AB_C(2, 4) TS_AB_C(3, 4)
    }
}

/* ---------------------------------------------------------------------------
 * k = n = W/2 (float 4 x 4, double 2 x 2): a row of A, B or C is half a vector, so
 * the kernels below work on pairs of rows, one full vector each, and pick element q of
 * each row with an in-lane permute (vpermilps/vpermilpd) instead of half-empty
 * broadcasts and masked loads. */
#if W == 8
typedef int F(iv) __attribute__((vector_size(32)));
#define TS_LANE(v, q) __builtin_shuffle((v), (F(iv)){(q), (q), (q), (q), (q) + 4, (q) + 4, \
                                                     (q) + 4, (q) + 4})
#else
typedef long long F(iv) __attribute__((vector_size(32)));
#define TS_LANE(v, q) __builtin_shuffle((v), (F(iv)){(q), (q), (q) + 2, (q) + 2})
#endif

/* Rows [r0, r1) of C = A B, A (m x H) and C (m x H) contiguous row-major, B row q at
 * b + q * ldb: two rows of C per vector, no loop-carried dependency. */
static void F(ab_half)(long r0, long r1, const T *restrict a, const T *restrict b, long ldb,
                       T *restrict c, int stream)
{
    enum { H = W / 2 };
    V bq[H];
#pragma GCC unroll 4
    for (int q = 0; q < H; ++q) {
        V row = {0};
        for (int e = 0; e < W; ++e) row[e] = b[q * ldb + e % H];
        bq[q] = row;
    }
    if (stream && ((unsigned long)(c + r0 * H) % 32) != 0) stream = 0;
    long i = r0;
#pragma GCC unroll 2
    for (; i + 2 <= r1; i += 2) {
        __builtin_prefetch((const char *)(a + i * H) + TS_PF_BYTES);
        V av = F(ld)(a + i * H);
        V x = TS_LANE(av, 0) * bq[0];
#pragma GCC unroll 4
        for (int q = 1; q < H; ++q) x += TS_LANE(av, q) * bq[q];
        if (stream) TS_STREAM(c + i * H, x); else F(st)(c + i * H, x);
    }
    for (; i < r1; ++i)
        for (int j = 0; j < H; ++j) {
            T sum = 0;
            for (int q = 0; q < H; ++q) sum += a[i * H + q] * b[q * ldb + j];
            c[i * H + j] = sum;
        }
}

/* One core reads faster from four sequential streams (A and B of two parts) than from
 * two: two = 1, long row ranges are read as two parts at once (ts_two_parts); two = 0, as
 * one part. Which paths of atb_c_rows read two parts:
 * - one register tile covering C: only for C of at most TS_ATB_TWO_MAX_NV vectors per row;
 * - the half-vector kernel: only when its thread streams alone (with two threads one
 *   part each is faster);
 * - C in L1: always.
 * The measurements behind each rule: docs/MEASUREMENTS.md#in-code. */
static inline int F(atb_parts)(long r0, long r1, long lda, int two, ts_part part[3])
{
    if (!two) {
        part[0] = (ts_part){r0, r1 - r0, 0};
        return 1;
    }
    return ts_two_parts(r0, r1, TS_PART_SKEW / (lda * (long)sizeof(T)), part);
}
#ifndef TS_ATB_TWO_MAX_NV
#define TS_ATB_TWO_MAX_NV 2
#endif

/* C += A^T B over rows [r0, r1) (and, TWO = 1, rows [r0 + d, r1 + d) too, two parts at
 * once), A and B (m x H) contiguous row-major, C row-major (ldc): U pairs of rows per
 * step, H accumulators per pair (8 chains). */
static inline __attribute__((always_inline)) void F(atb_half_rows)(
    const int TWO, long r0, long r1, long d, const T *restrict a, const T *restrict b,
    T *restrict c, long ldc)
{
    enum { H = W / 2, U = 8 / H };
    V acc[U][H];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u)
#pragma GCC unroll 4
        for (int q = 0; q < H; ++q) acc[u][q] = F(bc)(0);
    long i = r0;
    for (; i + 2 * U <= r1; i += 2 * U)
#pragma GCC unroll 2
        for (int h = 0; h < 1 + TWO; ++h)
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                const long row = i + h * d + 2 * u;
                if (u == 0) {
                    ts_prefetch_span(a + row * H, 2 * U * H * sizeof(T), TS_ATB_PF_BYTES);
                    ts_prefetch_span(b + row * H, 2 * U * H * sizeof(T), TS_ATB_PF_BYTES);
                }
                V av = F(ld)(a + row * H), bv = F(ld)(b + row * H);
#pragma GCC unroll 4
                for (int q = 0; q < H; ++q) acc[u][q] += TS_LANE(av, q) * bv;
            }
    T sum[H][H];
    for (int q = 0; q < H; ++q)
        for (int j = 0; j < H; ++j) {
            T x = 0;
            for (int u = 0; u < U; ++u) x += acc[u][q][j] + acc[u][q][j + H];
            sum[q][j] = x;
        }
    for (; i < r1; ++i)
        for (int h = 0; h < 1 + TWO; ++h)
            for (int q = 0; q < H; ++q)
                for (int j = 0; j < H; ++j)
                    sum[q][j] += a[(i + h * d) * H + q] * b[(i + h * d) * H + j];
    for (int q = 0; q < H; ++q)
        for (int j = 0; j < H; ++j) c[q * ldc + j] += sum[q][j];
}

/* ---------------------------------------------------------------------------
 * C = A B for long rows of A (TSM2R) and n <= 4: dot products instead of broadcasts
 * (a row of C would fill at most half a float vector). Vectors run along A's rows;
 * B^T (n x k, ldbt, zero padded to whole vectors) stays in L1/L2. Micro-kernel: R rows
 * of A x all N columns, U vectors of each row per step (R N U >= 8 chains), horizontal
 * sums at the end. Per W elements of a row: one load of A, N loads of B^T per R rows;
 * each step prefetches the R rows TS_PF_ROW_BYTES ahead (as in mk_ab_c).
 */
#define TS_DOT_ROWS(nn) ((nn) == 4 ? 3 : (nn) == 3 ? 3 : 4)
#define TS_DOT_UNROLL(nn) ((nn) == 1 ? 2 : 1)

static inline __attribute__((always_inline)) void F(mk_ab_dot)(
    const int R, const int N, const T *restrict a, long lda, int kb, const T *restrict bt,
    long ldbt, T *restrict c, long ldc, int accumulate)
{
    enum { U = 2 };
    const int unroll = TS_DOT_UNROLL(N);
    V acc[4][4][U];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < N; ++j)
#pragma GCC unroll 2
            for (int u = 0; u < unroll; ++u) acc[r][j][u] = F(bc)(0);
    const int kv = kb / (W * unroll) * (W * unroll);
    for (int p = 0; p < kv; p += W * unroll) {
        F(pf_rows)(a, lda, R, p, kb, TS_PF_ROW_BYTES);
#pragma GCC unroll 2
        for (int u = 0; u < unroll; ++u) {
            V ar[4];
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                ar[r] = F(ld)(a + r * lda + p + u * W);
                TS_KEEP(ar[r]);
            }
#pragma GCC unroll 4
            for (int j = 0; j < N; ++j) {
                V bj = F(ld)(bt + j * ldbt + p + u * W);
#pragma GCC unroll 4
                for (int r = 0; r < R; ++r) acc[r][j][u] += ar[r] * bj;
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < N; ++j) {
            V x = acc[r][j][0];
            if (unroll > 1) x += acc[r][j][1];
            T sum = 0;
            for (int e = 0; e < W; ++e) sum += x[e];
            for (int p = kv; p < kb; ++p) sum += a[r * lda + p] * bt[j * ldbt + p];
            c[r * ldc + j] = accumulate ? c[r * ldc + j] + sum : sum;
        }
}

#define TS_AB_DOT(RR, NN) case RR * 16 + NN: \
    F(mk_ab_dot)(RR, NN, a, lda, kb, bt, ldbt, c, ldc, accumulate); break;

static void F(mk_ab_dot_any)(int R, int N, const T *a, long lda, int kb, const T *bt,
                             long ldbt, T *c, long ldc, int accumulate)
{
    switch (R * 16 + N) {
        TS_AB_DOT(1, 1) TS_AB_DOT(2, 1) TS_AB_DOT(3, 1) TS_AB_DOT(4, 1)
        TS_AB_DOT(1, 2) TS_AB_DOT(2, 2) TS_AB_DOT(3, 2) TS_AB_DOT(4, 2)
        TS_AB_DOT(1, 3) TS_AB_DOT(2, 3) TS_AB_DOT(3, 3)
        TS_AB_DOT(1, 4) TS_AB_DOT(2, 4) TS_AB_DOT(3, 4)
    }
}

/* Rows [r0, r1) of C = A B by dot products (n <= 4): B^T unpacked from the packed B (one
 * panel of one vector) into a buffer of this thread (rows one cache line apart beyond a
 * multiple of 4 KiB, so that they never share an L1 set); k in panels of TS_KB_BYTES of
 * B^T. */
static int F(ab_dot_rows)(long r0, long r1, int n, int k, const T *a, long lda,
                          const T *bp, T *c, long ldc)
{
    const long ldbt = (k + W - 1) / W * W + 64 / (long)sizeof(T);
    T *bt = malloc((size_t)(n * ldbt) * sizeof(T));
    if (!bt) return -1;
    for (int j = 0; j < n; ++j)
        for (long p = 0; p < ldbt; ++p) bt[j * ldbt + p] = p < k ? bp[p * W + j] : 0;
    int kb = TS_KB_BYTES / (n * (int)sizeof(T)) / W * W;
    if (kb > k) kb = k;
    const int rows = TS_DOT_ROWS(n);
    for (int p0 = 0; p0 < k; p0 += kb) {
        const int depth = k - p0 < kb ? k - p0 : kb;
        long i = r0;
        for (; i + rows <= r1; i += rows)
            F(mk_ab_dot_any)(rows, n, a + i * lda + p0, lda, depth, bt + p0, ldbt,
                             c + i * ldc, ldc, p0 > 0);
        if (i < r1)
            F(mk_ab_dot_any)((int)(r1 - i), n, a + i * lda + p0, lda, depth, bt + p0, ldbt,
                             c + i * ldc, ldc, p0 > 0);
    }
    free(bt);
    return 0;
}

/* Rows [r0, r1) of C = A B (row-major A and C). k is cut into panels of kb rows of B
 * (TS_KB_BYTES of packed B, kept in L2; all of B when k is small); A is read once
 * (each row segment of a panel once), C is rewritten per k panel (from cache) and
 * streamed out on the last one. */
static void F(ab_c_rows)(long r0, long r1, int n, int k, const T *a, long lda, const T *bp,
                         T *c, long ldc, int stream)
{
    if (k == W / 2 && n == W / 2 && lda == k && ldc == n) {
        F(ab_half)(r0, r1, a, bp, W, c, stream);
        return;
    }
    if (n <= TS_DOT_MAX_N && k >= TS_DOT_MIN_K && F(ab_dot_rows)(r0, r1, n, k, a, lda, bp, c, ldc) == 0)
        return;
    const int panels = (n + TS_NV_MAX * W - 1) / (TS_NV_MAX * W);
    int kb = TS_KB_BYTES / ((n + W - 1) / W * W * (int)sizeof(T));
    if (kb < 8) kb = 8;
    if (kb > k) kb = k;
    for (int p0 = 0; p0 < k; p0 += kb) {
        const int depth = k - p0 < kb ? k - p0 : kb;
        const int accumulate = p0 > 0, last = p0 + depth == k;
        /* Long rows (TSM2R), one vector per row (two accumulators per row): the current
         * cache lines of the R rows sit in one cache set when lda * s is a multiple of
         * 4 KiB, so at most 4 rows at a time (each row's segment of several KiB is followed
         * by the hardware prefetchers). Wider rows of C keep the 6-row tile (12 chains;
         * why: docs/MEASUREMENTS.md#in-code). */
        const int long_rows = k > 64;
        /* One panel of C columns: the row loop runs inside the micro-kernel. Several
         * panels (n > 4W): 3-row blocks visit every panel while A's rows are in L1. */
        const long rows_per_sweep = panels == 1 ? 4096 : 3;
        for (long i = r0; i < r1; i += rows_per_sweep) {
            const long i_end = r1 - i < rows_per_sweep ? r1 : i + rows_per_sweep;
            for (int cp = 0; cp < panels; ++cp) {
                const int j0 = cp * TS_NV_MAX * W;
                const int ncols = n - j0 < TS_NV_MAX * W ? n - j0 : TS_NV_MAX * W;
                const int nv = (ncols + W - 1) / W;
                int rows = panels > 1 ? 3 : TS_ROWS_FOR(nv);
                if (long_rows && nv == 1 && rows > 4) rows = 4;
                const T *panel = bp + (long)cp * k * TS_NV_MAX * W + (long)p0 * nv * W;
                const long pf = long_rows || cp > 0 ? 0 : TS_PF_BYTES;
                const long pf_row = long_rows ? TS_PF_ROW_BYTES : 0;
                const long full = (i_end - i) / rows, rest = (i_end - i) % rows;
                F(mk_ab_c_any)(rows, nv, full, a + i * lda + p0, lda, depth, panel,
                               c + i * ldc + j0, ldc, ncols, accumulate, stream && last, pf, pf_row);
                if (rest)
                    F(mk_ab_c_any)((int)rest, nv, 1, a + (i + full * rows) * lda + p0, lda,
                                   depth, panel, c + (i + full * rows) * ldc + j0, ldc, ncols,
                                   accumulate, stream && last, pf, pf_row);
            }
        }
    }
}

/* ---------------------------------------------------------------------------
 * C = A B, A column-major (m x k, lda), B row-major k x n (ldb), C column-major (ldc).
 * Micro-kernel: 2 vectors of rows (2W rows) times NC columns of C, over p0..p0+kb-1;
 * each A column segment is one load per vector, each B element one broadcast. */
static inline __attribute__((always_inline)) void F(mk_ab_f)(
    const int NC, const T *restrict a, long lda, int kb, const T *restrict b, long ldb,
    T *restrict c, long ldc, int accumulate, int stream, int prefetch)
{
    V acc[6][2];
#pragma GCC unroll 6
    for (int j = 0; j < NC; ++j) { acc[j][0] = F(bc)(0); acc[j][1] = F(bc)(0); }
    for (int p = 0; p < kb; ++p) {
        const T *ap = a + p * lda;
        if (prefetch) __builtin_prefetch(ap + 16 * W);
        V a0 = F(ld)(ap), a1 = F(ld)(ap + W);
        TS_KEEP(a0);
        TS_KEEP(a1);
#pragma GCC unroll 6
        for (int j = 0; j < NC; ++j) {
            V bj = F(bc)(b[p * ldb + j]);
            acc[j][0] += a0 * bj;
            acc[j][1] += a1 * bj;
        }
    }
#pragma GCC unroll 6
    for (int j = 0; j < NC; ++j) {
        T *cj = c + j * ldc;
        V x0 = acc[j][0], x1 = acc[j][1];
        if (accumulate) { x0 += F(ld)(cj); x1 += F(ld)(cj + W); }
        if (stream) { TS_STREAM(cj, x0); TS_STREAM(cj + W, x1); }
        else { F(st)(cj, x0); F(st)(cj + W, x1); }
    }
}

#define TS_AB_F(NN) case NN: F(mk_ab_f)(NN, a, lda, kb, b, ldb, c, ldc, accumulate, stream, \
    prefetch); break;

static void F(mk_ab_f_any)(int NC, const T *a, long lda, int kb, const T *b, long ldb, T *c,
                           long ldc, int accumulate, int stream, int prefetch)
{
    switch (NC) { TS_AB_F(1) TS_AB_F(2) TS_AB_F(3) TS_AB_F(4) TS_AB_F(5) TS_AB_F(6) }
}

/* Rows [r0, r1) of C = A B (column-major A and C; b row-major k x n, ldb). Tiles of
 * 256 rows x 64 columns of A (column segments of 1-2 KiB, read once from memory and
 * kept in L2) swept by 2W-row micro-kernels for every 6-wide column panel of C; the
 * C tile (256 x n) stays in L1/L2 across k panels and is streamed out after the last.
 * Rows left over (< 2W) go scalar. */
static void F(ab_f_rows)(long r0, long r1, int n, int k, const T *a, long lda, const T *b,
                         long ldb, T *c, long ldc, int stream)
{
    const long mb = 256;
    const int kb = 64;
    long i0 = r0;
    for (; i0 + 2 * W <= r1; i0 += mb) {
        long i1 = i0 + mb < r1 ? i0 + mb : r1;
        i1 = i0 + (i1 - i0) / (2 * W) * (2 * W);
        for (int p0 = 0; p0 < k; p0 += kb) {
            const int depth = k - p0 < kb ? k - p0 : kb;
            const int accumulate = p0 > 0, last = p0 + depth == k;
            for (long i = i0; i < i1; i += 2 * W)
                for (int j0 = 0; j0 < n; j0 += 6) {
                    const int nc = n - j0 < 6 ? n - j0 : 6;
                    F(mk_ab_f_any)(nc, a + p0 * lda + i, lda, depth, b + (long)p0 * ldb + j0,
                                   ldb, c + j0 * ldc + i, ldc, accumulate, stream && last,
                                   j0 == 0);
                }
        }
        if (i1 < i0 + mb) { i0 = i1; break; }
    }
    for (long i = i0; i < r1; ++i)
        for (int j = 0; j < n; ++j) {
            T sum = 0;
            for (int p = 0; p < k; ++p) sum += a[p * lda + i] * b[(long)p * ldb + j];
            c[j * ldc + i] = sum;
        }
}

/* ---------------------------------------------------------------------------
 * C += A^T B over rows [r0, r1), A row-major (m x k, lda), B row-major (m x n, ldb),
 * C row-major k x n (ldc, private to the caller).
 *
 * One register tile covers C (k <= TS_ROWS_FOR(ceil(n / W)), n <= 4 W): mk_atb_c keeps C
 * in KR x NV accumulators and reads each row once; TWO = 1: row i of a second pair
 * (a2, b2) too, into the same accumulators (two parts of the row range read at once). */
static inline __attribute__((always_inline)) void F(mk_atb_c)(
    const int KR, const int NV, const int FULL, const int TWO, const T *restrict a, long lda,
    const T *restrict b, long ldb, long rows, T *restrict c, long ldc, int ncols,
    const T *restrict a2, const T *restrict b2)
{
    V acc[6][4];
#pragma GCC unroll 6
    for (int q = 0; q < KR; ++q)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[q][v] = F(bc)(0);
    for (long i = 0; i < rows; ++i) {
#pragma GCC unroll 2
        for (int h = 0; h < 1 + TWO; ++h) {
            const T *ai = (h ? a2 : a) + i * lda, *bi = (h ? b2 : b) + i * ldb;
            ts_prefetch_span(ai, lda * sizeof(T), TS_ATB_PF_BYTES);
            ts_prefetch_span(bi, ldb * sizeof(T), TS_ATB_PF_BYTES);
            V bv[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                if (FULL || v + 1 < NV) bv[v] = F(ld)(bi + v * W);
                else bv[v] = F(ld_part)(bi + v * W, ncols - v * W);
                if (v < 3) TS_KEEP(bv[v]);
            }
#pragma GCC unroll 6
            for (int q = 0; q < KR; ++q) {
                V aq = F(bc)(ai[q]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[q][v] += aq * bv[v];
            }
        }
    }
#pragma GCC unroll 6
    for (int q = 0; q < KR; ++q)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            T *cq = c + q * ldc + v * W;
            if (FULL || v + 1 < NV) {
                F(st)(cq, F(ld)(cq) + acc[q][v]);
            } else {
                int count = ncols - v * W;
                F(st_part)(cq, F(ld_part)(cq, count) + acc[q][v], count);
            }
        }
}

/* FN(R, N, FULL, TWO, ...) with FULL and TWO the compile-time forms of full and two */
#define TS_FULL_TWO(FN, R, N, ...) \
    if (full && two) FN(R, N, 1, 1, __VA_ARGS__); \
    else if (two) FN(R, N, 0, 1, __VA_ARGS__); \
    else if (full) FN(R, N, 1, 0, __VA_ARGS__); \
    else FN(R, N, 0, 0, __VA_ARGS__);
#define TS_ATB_C(RR, NN) case RR * 16 + NN: \
    TS_FULL_TWO(F(mk_atb_c), RR, NN, a, lda, b, ldb, rows, c, ldc, ncols, a2, b2) break;

/* a2 != 0: two parts at once (the wider tiles, NV > TS_ATB_TWO_MAX_NV, never get one) */
static void F(mk_atb_c_any)(int KR, int NV, const T *a, long lda, const T *b, long ldb,
                            long rows, T *c, long ldc, int ncols, const T *a2, const T *b2)
{
    const int full = ncols == NV * W, two = a2 != 0;
    switch (KR * 16 + NV) {
        TS_ATB_C(1, 1) TS_ATB_C(2, 1) TS_ATB_C(3, 1) TS_ATB_C(4, 1) TS_ATB_C(5, 1) TS_ATB_C(6, 1)
        TS_ATB_C(1, 2) TS_ATB_C(2, 2) TS_ATB_C(3, 2) TS_ATB_C(4, 2) TS_ATB_C(5, 2) TS_ATB_C(6, 2)
        TS_ATB_C(1, 3) TS_ATB_C(2, 3) TS_ATB_C(3, 3) TS_ATB_C(4, 3)
        TS_ATB_C(1, 4) TS_ATB_C(2, 4) TS_ATB_C(3, 4)
    }
}

/* Larger C (more than one register tile): C in L1, each row of A and B read once, U rows
 * per step. A step keeps the U rows' B vectors of one group of at most 4 column vectors
 * in registers and, for each q < k, updates row q of C with U broadcasts A[i + u][q]: per
 * C vector one load, U FMAs and one store. Per step and group of NV vectors: U k NV FMAs,
 * k NV loads and stores of C (L1, store-forwarded), U k broadcasts, U NV loads of B. The
 * register tiles swept over prefetched L1-resident chunks that this replaced (C in
 * registers, each chunk re-read from L1 once per tile) barely overlapped those sweeps
 * with the memory stream: A, B 2^22 x 16 allocated by NumPy, same process, one thread,
 * before -> after: fp64 17.5-18.6 -> 22.5-23.5 GFLOP/s, fp32 41.6-42.0 -> 48.0-49.0
 * (64-byte aligned operands in a C harness: fp64 18.4 -> 27.6); rows resident in L2
 * (1024 rows, repeated), same hour: fp64 22-25 -> 32-36.
 * TWO = 1: the same steps for the rows d further on, in alternate steps. U per NV: U NV
 * B vectors, U broadcasts and one C vector fit the 16 ymm registers. */
#define TS_ATB_L1_ROWS(nv) ((nv) == 1 ? 7 : (nv) == 2 ? 4 : 3)

static inline __attribute__((always_inline)) void F(atb_l1_steps)(
    const int U, const int NV, const int FULL, const int TWO, const T *restrict a, long lda,
    const T *restrict b, long ldb, long steps, long d, int k, int ncols, T *restrict c,
    long ldc)
{
    for (long s = 0; s < steps; ++s, a += U * lda, b += U * ldb)
#pragma GCC unroll 2
        for (int h = 0; h < 1 + TWO; ++h) {
            const T *as = a + h * d * lda, *bs = b + h * d * ldb;
            ts_prefetch_span(as, U * lda * sizeof(T), TS_ATB_PF_BYTES);
            ts_prefetch_span(bs, U * ldb * sizeof(T), TS_ATB_PF_BYTES);
            V bv[7][4];
#pragma GCC unroll 7
            for (int u = 0; u < U; ++u)
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) {
                    if (FULL || v + 1 < NV) bv[u][v] = F(ld)(bs + u * ldb + v * W);
                    else bv[u][v] = F(ld_part)(bs + u * ldb + v * W, ncols - v * W);
                    TS_KEEP(bv[u][v]);
                }
#pragma GCC unroll 4
            for (int q = 0; q < k; ++q) {
                V aq[7];
#pragma GCC unroll 7
                for (int u = 0; u < U; ++u) aq[u] = F(bc)(as[u * lda + q]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) {
                    T *cq = c + q * ldc + v * W;
                    V x = F(ld)(cq);
#pragma GCC unroll 7
                    for (int u = 0; u < U; ++u) x += aq[u] * bv[u][v];
                    F(st)(cq, x);
                }
            }
            /* C stays in memory (L1): GCC would otherwise keep all of it in registers
             * across steps, which do not hold it (spills) */
            __asm__ volatile("" ::: "memory");
        }
}

#define TS_ATB_L1(UU, NN) case UU * 16 + NN: \
    TS_FULL_TWO(F(atb_l1_steps), UU, NN, a, lda, b, ldb, steps, d, k, ncols, c, ldc) break;

static void F(atb_l1_steps_any)(int U, int NV, const T *a, long lda, const T *b, long ldb,
                                long steps, long d, int k, int ncols, T *c, long ldc)
{
    const int full = ncols == NV * W, two = d != 0;
    switch (U * 16 + NV) {
        TS_ATB_L1(7, 1) TS_ATB_L1(4, 2) TS_ATB_L1(3, 3) TS_ATB_L1(3, 4)
        TS_ATB_L1(1, 1) TS_ATB_L1(1, 2) TS_ATB_L1(1, 3) TS_ATB_L1(1, 4)
    }
}

#ifndef TS_ATB_CHUNK_BYTES
#define TS_ATB_CHUNK_BYTES 65536
#endif

/* Rows [i0, i0 + rows) (and, d != 0, [i0 + d, i0 + d + rows) in alternate steps) into the
 * padded C buffer cb (k x ldcb): groups of at most 4 column vectors, each swept over a
 * chunk of TS_ATB_CHUNK_BYTES of rows (L2) before the next group (one group: one sweep). */
static void F(atb_l1_range)(long i0, long rows, long d, int n, int k, const T *a, long lda,
                            const T *b, long ldb, T *cb, long ldcb)
{
    const int groups = (n + TS_NV_MAX * W - 1) / (TS_NV_MAX * W);
    const long chunk = groups == 1 ? rows
                                   : TS_ATB_CHUNK_BYTES / ((long)(k + n) * (long)sizeof(T));
    for (long s0 = i0; s0 < i0 + rows; s0 += chunk) {
        const long len = i0 + rows - s0 < chunk ? i0 + rows - s0 : chunk;
        for (int j0 = 0; j0 < n; j0 += TS_NV_MAX * W) {
            const int ncols = n - j0 < TS_NV_MAX * W ? n - j0 : TS_NV_MAX * W;
            const int nv = (ncols + W - 1) / W, u = TS_ATB_L1_ROWS(nv);
            const long full = len / u * u;
            F(atb_l1_steps_any)(u, nv, a + s0 * lda, lda, b + s0 * ldb + j0, ldb, len / u, d,
                                k, ncols, cb + j0, ldcb);
            F(atb_l1_steps_any)(1, nv, a + (s0 + full) * lda, lda, b + (s0 + full) * ldb + j0,
                                ldb, len - full, d, k, ncols, cb + j0, ldcb);
        }
    }
}

/* Callers keep k, n <= TS_ATB_MAX (kernels.py: MAX_SMALL) */
#define TS_ATB_MAX 64

static void F(atb_c_rows)(long r0, long r1, int n, int k, const T *a, long lda, const T *b,
                          long ldb, T *c, long ldc, int alone)
{
    const int half = k == W / 2 && n == W / 2 && lda == k && ldb == n;
    const int nv = (n + W - 1) / W, one_tile = nv <= TS_NV_MAX && k <= TS_ROWS_FOR(nv);
    const int two = half ? alone : one_tile ? nv <= TS_ATB_TWO_MAX_NV : 1;
    ts_part part[3];
    const int parts = F(atb_parts)(r0, r1, lda, two, part);
    if (half || one_tile) {
        for (int p = 0; p < parts; ++p) {
            const long i = part[p].i, e = i + part[p].rows, d = part[p].d;
            if (half && d) F(atb_half_rows)(1, i, e, d, a, b, c, ldc);
            else if (half) F(atb_half_rows)(0, i, e, 0, a, b, c, ldc);
            else F(mk_atb_c_any)(k, nv, a + i * lda, lda, b + i * ldb, ldb, part[p].rows, c,
                                 ldc, n, d ? a + (i + d) * lda : 0, d ? b + (i + d) * ldb : 0);
        }
        return;
    }
    /* C in L1: a zero-padded private copy (whole vectors, no masked stores), added to c */
    const long ldcb = (long)nv * W;
    T cb[TS_ATB_MAX * TS_ATB_MAX] __attribute__((aligned(64)));
    memset(cb, 0, (size_t)(k * ldcb) * sizeof(T));
    for (int p = 0; p < parts; ++p)
        F(atb_l1_range)(part[p].i, part[p].rows, part[p].d, n, k, a, lda, b, ldb, cb, ldcb);
    for (int q = 0; q < k; ++q)
        for (int j = 0; j < n; ++j) c[q * ldc + j] += cb[q * ldcb + j];
}

/* ---------------------------------------------------------------------------
 * C += A^T B over rows [r0, r1), A column-major (lda), B column-major (ldb), C
 * row-major k x n (ldc). Rows in chunks of 512 (column segments of 2-4 KiB);
 * register tiles of KR columns of A x NJ columns of B, each accumulator a vector of
 * partial sums over rows, summed horizontally at the end of the chunk. */
static inline __attribute__((always_inline)) void F(mk_atb_f)(
    const int KR, const int NJ, const T *restrict a, long lda, const T *restrict b, long ldb,
    long rows, T *restrict c, long ldc)
{
    V acc[3][4];
#pragma GCC unroll 3
    for (int q = 0; q < KR; ++q)
#pragma GCC unroll 4
        for (int j = 0; j < NJ; ++j) acc[q][j] = F(bc)(0);
    long i = 0;
    for (; i + W <= rows; i += W) {
        V aq[3];
#pragma GCC unroll 3
        for (int q = 0; q < KR; ++q) {
            aq[q] = F(ld)(a + q * lda + i);
            TS_KEEP(aq[q]);
        }
#pragma GCC unroll 4
        for (int j = 0; j < NJ; ++j) {
            V bj = F(ld)(b + j * ldb + i);
            TS_KEEP(bj);
#pragma GCC unroll 3
            for (int q = 0; q < KR; ++q) acc[q][j] += aq[q] * bj;
        }
    }
#pragma GCC unroll 3
    for (int q = 0; q < KR; ++q)
#pragma GCC unroll 4
        for (int j = 0; j < NJ; ++j) {
            T sum = 0;
            for (int e = 0; e < W; ++e) sum += acc[q][j][e];
            for (long t = i; t < rows; ++t) sum += a[q * lda + t] * b[j * ldb + t];
            c[q * ldc + j] += sum;
        }
}

#define TS_ATB_F(RR, NN) case RR * 16 + NN: F(mk_atb_f)(RR, NN, a, lda, b, ldb, rows, c, ldc); \
    break;

static void F(mk_atb_f_any)(int KR, int NJ, const T *a, long lda, const T *b, long ldb,
                            long rows, T *c, long ldc)
{
    switch (KR * 16 + NJ) {
        TS_ATB_F(1, 1) TS_ATB_F(1, 2) TS_ATB_F(1, 3) TS_ATB_F(1, 4)
        TS_ATB_F(2, 1) TS_ATB_F(2, 2) TS_ATB_F(2, 3) TS_ATB_F(2, 4)
        TS_ATB_F(3, 1) TS_ATB_F(3, 2) TS_ATB_F(3, 3) TS_ATB_F(3, 4)
    }
}

static void F(atb_f_rows)(long r0, long r1, int n, int k, const T *a, long lda, const T *b,
                          long ldb, T *c, long ldc)
{
    const long chunk = 512;
    for (long i0 = r0; i0 < r1; i0 += chunk) {
        const long rows = r1 - i0 < chunk ? r1 - i0 : chunk;
        for (int q0 = 0; q0 < k; q0 += 3) {
            const int kr = k - q0 < 3 ? k - q0 : 3;
            for (int j0 = 0; j0 < n; j0 += 4) {
                const int nj = n - j0 < 4 ? n - j0 : 4;
                F(mk_atb_f_any)(kr, nj, a + q0 * lda + i0, lda, b + j0 * ldb + i0, ldb, rows,
                                c + (long)q0 * ldc + j0, ldc);
            }
        }
    }
}

#undef F
#undef TS_CAT
#undef TS_CAT2
#undef TS_ROWS_FOR
#undef TS_AB_C
#undef TS_AB_F
#undef TS_AB_DOT
#undef TS_DOT_ROWS
#undef TS_DOT_UNROLL
#undef TS_ATB_C
#undef TS_FULL_TWO
#undef TS_ATB_L1
#undef TS_ATB_L1_ROWS
#undef TS_ATB_MAX
#undef TS_ATB_F
#undef TS_LANE
