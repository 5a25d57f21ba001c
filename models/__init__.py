"""Analytic models (`linalg_io.models`): pure functions of the problem, the grid and a
machine profile, importing only `linalg_io.layout` and each other (no MPI, no algorithm).

costs         `RankCosts`, every model's currency, its time and the record's block
profile       `MachineProfile` and `Placement`; rates: local work rates, BLAS pool
lu2d          the 2D LU; lu2d_runs: its counts summed over runs of equal ranks
conflux       the 2.5D LU; conflux_pivots, conflux_classes, conflux_nodes: its pivots,
              the classes of its ranks at each step, its groups' nodes and links
lu_bounds     proven lower bounds on the 2.5D LU's time; lu2d_bounds: on the 2D LU's
phase_time    predicted seconds per phase of both LUs
rank_classes  ranks in symmetric positions, evaluated once per class
step_sample   a sample of an LU's steps where walking every one costs too much
memory        the least memory per rank of each LU
tsgemm        TS-GEMM variants; sptrsv, sptrsv_dag: the sparse triangular solve, the
              critical path of its task graph
"""
