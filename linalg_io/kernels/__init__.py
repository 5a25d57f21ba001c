"""GPU local kernels (CuPy), behind the gate of `gpu.require_cupy`; the CPU kernels
are compiled Cython (`linalg_io._kernels`).

gpu         the gate of every GPU path: CuPy and a GPU, or a clear exit 3
tsm2_gpu    launcher and autotuner of the TSM2X kernels (cuda/tsm2.cu)
sptrsv_gpu  the sync-free SpTRSV kernel (cuda/), host-staged MPI around it
"""
