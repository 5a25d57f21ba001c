/* One line of add_masked (C side of linalg_io._kernels.compact): a line of the outputs'
 * innermost axis, contiguous, where the mask and the three costs each step by 0 or 1
 * element along it (the broadcast shapes a piece's collectives take).
 *
 * masked_terms writes (s, r, g, max(s, r)) = m * (sent, recv, msgs) into four buffers
 * of the line, one loop per kind of steps so that each is a plain vector loop; masked_put
 * then adds each buffer to its old line (or copies it where there is none). The
 * arithmetic is add_masked's general loop's, element by element (m * c exact, m 0 or 1;
 * the larger by `s > r || s != s`, np.maximum's NaN and signed zero), so the lines hold
 * the same bits. */
#ifndef LINALG_IO_COMPACT_MASKED_H
#define LINALG_IO_COMPACT_MASKED_H

#include <stddef.h>

#define MASKED_TERMS(M, S, R, G)                                          \
    for (ptrdiff_t i = 0; i < len; i++) {                                 \
        double m = (M), s = m * (S), r = m * (R), g = m * (G);            \
        ts[i] = s;                                                        \
        tr[i] = r;                                                        \
        tg[i] = g;                                                        \
        tt[i] = (s > r || s != s) ? s : r;                                \
    }

static inline void masked_terms(ptrdiff_t len, const unsigned char *restrict mask,
                                int mask_step, const double *restrict sent,
                                const double *restrict recv, const double *restrict msgs,
                                int cost_step, double *restrict ts, double *restrict tr,
                                double *restrict tg, double *restrict tt)
{
    if (mask_step && cost_step) {
        MASKED_TERMS((double) mask[i], sent[i], recv[i], msgs[i])
    } else if (mask_step) {
        const double s0 = sent[0], r0 = recv[0], g0 = msgs[0];
        MASKED_TERMS((double) mask[i], s0, r0, g0)
    } else if (cost_step) {
        const double m0 = (double) mask[0];
        MASKED_TERMS(m0, sent[i], recv[i], msgs[i])
    } else {
        const double m0 = (double) mask[0], s0 = sent[0], r0 = recv[0], g0 = msgs[0];
        MASKED_TERMS(m0, s0, r0, g0)
    }
}

#undef MASKED_TERMS

/* out = old + term along the line (old_step 0: one value; old NULL: out = term). out
 * may be old itself (the same line, a sum kept in place: a loop of its own, which the
 * compiler need not guard against overlap). */
static inline void masked_put(ptrdiff_t len, double *out, const double *old, int old_step,
                              const double *restrict term)
{
    if (old == NULL) {
        for (ptrdiff_t i = 0; i < len; i++)
            out[i] = term[i];
    } else if (old == out && old_step) {
        for (ptrdiff_t i = 0; i < len; i++)
            out[i] = out[i] + term[i];
    } else if (old_step) {
        for (ptrdiff_t i = 0; i < len; i++)
            out[i] = old[i] + term[i];
    } else {
        const double o = old[0];
        for (ptrdiff_t i = 0; i < len; i++)
            out[i] = o + term[i];
    }
}

#endif
