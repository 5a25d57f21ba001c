"""The MPI layer under the algorithms: the counted communicator and the package's own
collectives, and the grids they run on. Nothing here starts or ends a job
(`linalg_io.launch`).

counting       `CountedComm`, `TrafficCounter`: every byte handed to MPI, by op and phase
collectives    bcast, reduce, allgatherv, gatherv/scatterv as own point-to-point schedules
grid           process grids (1D, Pr x Pc, Px x Py x c) and their sub-communicators
redistribute   executes a `linalg_io.layout.redist_plan.RedistPlan`
phase_clock    `PhaseClock`, seconds per phase; `Phases`, one switch for time and traffic
waiting        `WaitPolicy`: MPI's blocking waits or polite ones on a crowded node
wire           the wire counter: bytes the MPI library moved (Open MPI's monitoring)
summary        every rank's counts reduced into the record's `traffic` block
"""
