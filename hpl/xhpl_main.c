/*
 * main() for HPCC's HPL (its HPL_pddriver.c defines HPL_main, called by HPCC): xhpl
 * reads hpccinf.txt (HPL.dat's format) and appends to hpccoutf.txt in the working
 * directory. HPCC_Defaults (HPCC's fallback on unreadable input) stops instead.
 */
#include "hpl.h"

int HPL_main(int argc, char **argv, HPL_RuntimeData *rdata, int *failure);

int HPCC_Defaults(HPL_T_test *test, int *ns, int *n, int *nbs, int *nb, HPL_T_ORDER *pmap,
                  int *npqs, int *p, int *q, int *npfs, HPL_T_FACT *pf, int *nbms, int *nbm,
                  int *ndvs, int *ndv, int *nrfs, HPL_T_FACT *rf, int *ntps, HPL_T_TOP *tp,
                  int *ndhs, int *dh, HPL_T_SWAP *fswap, int *tswap, int *l1notran,
                  int *unotran, int *equil, int *align, MPI_Comm comm)
{
   int rank;
   MPI_Comm_rank( comm, &rank );
   if( rank == 0 ) fprintf( stderr, "xhpl: illegal input in hpccinf.txt\n" );
   MPI_Abort( comm, 1 );
   return 1;
}

int main(int argc, char **argv)
{
   HPL_RuntimeData rdata;
   int failure = 0;
   MPI_Init( &argc, &argv );
   HPL_main( argc, argv, &rdata, &failure );
   MPI_Finalize();
   return failure;
}
