/*
 * linalg-io's in-process driver for HPL: the steps of HPL_pdtest (HPL's testing/ptest),
 * split so that the caller can count one factorization's traffic around lio_hpl_factor.
 *
 *   lio_hpl_grid(comm, P, Q)          HPL's grid (row-major, as HPL.dat's PMAP 0) over the
 *                                     communicator and HPL's eps (HPL_pdinfo's steps)
 *   lio_hpl_allocate(N, NB)           the local A | b | x, as HPL_pdtest (its all-reduce
 *                                     of who failed included); -3 if some rank could not
 *   lio_hpl_generate()                HPL_pdmatgen with HPL's seed (HPL_ISEED)
 *   lio_hpl_factor(out)               barrier, HPL_pdgesv between HPL's timers: LU with
 *                                     the solve (what HPL times); out[0] HPL's wall time
 *                                     (max over ranks, as HPL reports it), out[1] this
 *                                     rank's, out[2..7] this rank's detailed timers
 *                                     rpfact, pfact, mxswp, update, laswp, up tr sv,
 *                                     out[8..13] their max over ranks (HPL's report)
 *   lio_hpl_check(out)                HPL_pdtest's residual check: out = scaled residual,
 *                                     ||Ax-b||_oo, ||A||_oo, ||A||_1, ||x||_oo, ||x||_1,
 *                                     ||b||_oo, eps, info
 *   lio_hpl_release()                 frees the matrix (HPL_pdtest's last step)
 *
 * So allocate, generate, factor, check, release move exactly the messages of one
 * HPL_pdtest, the unit of xhpl's loop over problem sizes.
 *
 * The algorithm is the one of HPL.dat's example values (hpl_dat.py writes the same for
 * xhpl): right-looking panel factorization, Crout recursion, NBMIN 4, NDIV 2, 1rM
 * broadcast, look-ahead 1, mixed swapping with threshold 64, L1 and U transposed,
 * equilibration, alignment 8 doubles.
 */
#include "hpl.h"

#ifndef LIO_HPL_VERSION
#define LIO_HPL_VERSION "HPL (unknown version)"
#endif

static HPL_T_grid grid;
static HPL_T_palg algo;
static HPL_T_pmat mat;
static void *vptr = NULL;
static int nq = 0, gridded = 0;
static double eps;

const char *lio_hpl_version(void) { return LIO_HPL_VERSION; }

int lio_hpl_grid(MPI_Comm comm, int nprow, int npcol)
{
   if( gridded ) return -1;
   if( HPL_grid_init( comm, HPL_ROW_MAJOR, nprow, npcol, &grid ) != MPI_SUCCESS ) return -2;
   gridded = 1;
   /* HPL_pdinfo's: once, before the tests */
   eps = HPL_pdlamch( grid.all_comm, HPL_MACH_EPS );
   algo.btopo = HPL_1RING_M; algo.depth = 1; algo.nbmin = 4; algo.nbdiv = 2;
   algo.pfact = HPL_RIGHT_LOOKING; algo.pffun = HPL_pdpanrlT;
   algo.rfact = HPL_CROUT; algo.rffun = HPL_pdrpancrT;
   algo.upfun = HPL_pdupdateTT;
   algo.fswap = HPL_SW_MIX; algo.fsthr = 64; algo.equil = 1; algo.align = 8;
   return 0;
}

int lio_hpl_allocate(int n, int nb)
{
   int myrow, mycol, nprow, npcol, ii, ip2, info[3];

   if( !gridded || vptr != NULL ) return -1;
   (void) HPL_grid_info( &grid, &nprow, &npcol, &myrow, &mycol );
   mat.n = n; mat.nb = nb; mat.info = 0;
   mat.mp = HPL_numroc( n, nb, nb, myrow, 0, nprow );
   nq = HPL_numroc( n, nb, nb, mycol, 0, npcol );
   mat.nq = nq + 1;
   /* HPL_pdtest's leading dimension: aligned, never a power of two */
   mat.ld = ( ( Mmax( 1, mat.mp ) - 1 ) / algo.align ) * algo.align;
   do
   {
      ii = ( mat.ld += algo.align ); ip2 = 1;
      while( ii > 1 ) { ii >>= 1; ip2 <<= 1; }
   }
   while( mat.ld == ip2 );
   vptr = malloc( ( (size_t)algo.align + (size_t)( mat.ld + 1 ) * (size_t)mat.nq )
                  * sizeof( double ) );
   info[0] = ( vptr == NULL ); info[1] = myrow; info[2] = mycol;
   (void) HPL_all_reduce( (void *)info, 3, HPL_INT, HPL_max, grid.all_comm );
   if( info[0] != 0 )
   {
      free( vptr ); vptr = NULL;
      return -3;
   }
   mat.A = (double *)HPL_PTR( vptr, ( (size_t)algo.align * sizeof( double ) ) );
   mat.X = Mptr( mat.A, 0, mat.nq, mat.ld );
   return 0;
}

void lio_hpl_generate(void)
{
   HPL_pdmatgen( &grid, mat.n, mat.n + 1, mat.nb, mat.A, mat.ld, HPL_ISEED );
}

int lio_hpl_factor(double out[14])
{
   double wall[1];
   int i;
   HPL_ptimer_boot(); (void) HPL_barrier( grid.all_comm );
   HPL_ptimer( 0 );
   HPL_pdgesv( &grid, &algo, &mat );
   HPL_ptimer( 0 );
   out[1] = HPL_ptimer_inquire( HPL_WALL_PTIME, 0 );
   HPL_ptimer_combine( grid.all_comm, HPL_AMAX_PTIME, HPL_WALL_PTIME, 1, 0, wall );
   out[0] = wall[0];
#ifdef HPL_DETAILED_TIMING
   for( i = 0; i < HPL_TIMING_N; i++ )
      out[2 + i] = HPL_ptimer_inquire( HPL_WALL_PTIME, HPL_TIMING_BEG + i );
   HPL_ptimer_combine( grid.all_comm, HPL_AMAX_PTIME, HPL_WALL_PTIME, HPL_TIMING_N,
                       HPL_TIMING_BEG, out + 8 );
#else
   for( i = 2; i < 14; i++ ) out[i] = -1.0;
#endif
   return mat.info;
}

void lio_hpl_check(double out[9])
{
   double anorm1, anormi, xnorm1, xnormi, bnormi, resid0, resid1, *bptr;
   int mycol, myrow, npcol, nprow, n = mat.n, nb = mat.nb;

   (void) HPL_grid_info( &grid, &nprow, &npcol, &myrow, &mycol );
   HPL_pdmatgen( &grid, n, n + 1, nb, mat.A, mat.ld, HPL_ISEED );
   anorm1 = HPL_pdlange( &grid, HPL_NORM_1, n, n, nb, mat.A, mat.ld );
   anormi = HPL_pdlange( &grid, HPL_NORM_I, n, n, nb, mat.A, mat.ld );
   /* x is a row vector (1 x N): its 1-norm is HPL_NORM_I and its oo-norm HPL_NORM_1 */
   xnormi = HPL_pdlange( &grid, HPL_NORM_1, 1, n, nb, mat.X, 1 );
   xnorm1 = HPL_pdlange( &grid, HPL_NORM_I, 1, n, nb, mat.X, 1 );
   bptr = Mptr( mat.A, 0, nq, mat.ld );
   if( mycol == HPL_indxg2p( n, nb, nb, 0, npcol ) )
   {
      bnormi = mat.mp > 0 ? Mabs( bptr[HPL_idamax( mat.mp, bptr, 1 )] ) : HPL_rzero;
      (void) HPL_all_reduce( (void *)&bnormi, 1, HPL_DOUBLE, HPL_max, grid.col_comm );
   }
   (void) HPL_broadcast( (void *)&bnormi, 1, HPL_DOUBLE, HPL_indxg2p( n, nb, nb, 0, npcol ),
                         grid.row_comm );
   if( mycol == HPL_indxg2p( n, nb, nb, 0, npcol ) )
      HPL_dgemv( HplColumnMajor, HplNoTrans, mat.mp, nq, -HPL_rone, mat.A, mat.ld, mat.X, 1,
                 HPL_rone, bptr, 1 );
   else if( nq > 0 )
      HPL_dgemv( HplColumnMajor, HplNoTrans, mat.mp, nq, -HPL_rone, mat.A, mat.ld, mat.X, 1,
                 HPL_rzero, bptr, 1 );
   else
      for( int ii = 0; ii < mat.mp; ii++ ) bptr[ii] = HPL_rzero;
   if( mat.mp > 0 )
      (void) HPL_reduce( bptr, mat.mp, HPL_DOUBLE, HPL_sum, 0, grid.row_comm );
   resid0 = HPL_pdlange( &grid, HPL_NORM_I, n, 1, nb, bptr, mat.ld );
   resid1 = n <= 0 ? HPL_rzero : resid0 / ( eps * ( anormi * xnormi + bnormi ) * (double)n );
   out[0] = resid1; out[1] = resid0; out[2] = anormi; out[3] = anorm1; out[4] = xnormi;
   out[5] = xnorm1; out[6] = bnormi; out[7] = eps; out[8] = (double)mat.info;
}

void lio_hpl_release(void)
{
   free( vptr ); vptr = NULL;
}
