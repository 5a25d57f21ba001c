"""The distributed sparse triangular solve (`linalg-io sptrsv`).

matrices     the test matrices, checked at the edge
analysis     levels, partition, the communication plan, each rank's local system
levelset     level-set solve over point-to-point messages
syncfree     synchronization-free solve over one-sided communication
local        a rank's local solve on the CPU
case         the runner's case (`linalg-io model sptrsv`: linalg_io.model_command)
"""
