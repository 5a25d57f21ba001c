/* Undefines the per-type parameters of tsgemm_impl.h (T, V, W, SFX and the vector
 * helpers) after one instantiation, so that tsgemm_kernels.h can define the next. */
#undef T
#undef V
#undef W
#undef SFX
#undef TS_STREAM
#undef TS_BCAST
#undef TS_MASK
#undef TS_MASKLOAD
#undef TS_MASKSTORE
#undef TS_STORE_HALF
