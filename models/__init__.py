"""Analytic models (`linalg_io.models`): pure functions of the problem, the grid and a
machine profile, importing only `linalg_io.layout` and each other (no MPI, no algorithm).

costs         `RankCosts`, every model's currency, its time and the record's block
profile       `MachineProfile` and `Placement`; rates: local work rates, BLAS pool
lu2d          the 2D LU; conflux, conflux_pivots, conflux_classes: the 2.5D LU, its pivots
              and the classes of its ranks at each step
phase_time    predicted seconds per phase of both LUs
rank_classes  ranks in symmetric positions, evaluated once per class
step_sample   a sample of an LU's steps where walking every one costs too much
memory        the least memory per rank of each LU
tsgemm        TS-GEMM variants; sptrsv: the sparse triangular solve
"""
