"""The compiled CPU kernels (cython/*.pyx, built by setup.py): dense_local (LAPACK/BLAS
calls with the GIL released), lu_kernels (the 2D LU's panel and row moves), tsgemm
(tall-and-skinny products), sptrsv (the local sparse triangular solve), conflux_pivots
(the 2.5D LU model's expected pivots, step after step), conflux_nodes (a process
column's crossings between nodes, member by member), runs (a model's runs of ranks
split by residue), lu2d_points (the 2D LU model's
critical path at a few process rows per step)."""
