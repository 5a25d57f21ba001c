"""Starting and ending jobs: the launcher, the node, and errors agreed across ranks.

relaunch   `linalg-io CMD --np P`: find mpiexec, relaunch under it, follow the launcher
status     the file a rank marks "finished" or "stalled" in, for the launcher to read
output     the launcher's stderr relayed, less the box that repeats an exit code
node       which ranks share a node, its cores, load and memory (before and after MPI_Init)
agree      errors agreed across ranks: one line, one exit code, never a hang
watchdog   a rank without progress past its deadline ends the job in one line
"""
