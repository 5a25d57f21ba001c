"""Run known communication patterns through CountedComm; rank 0 writes every rank's counts."""

import numpy as np
from _result import write_result
from mpi4py import MPI

from linalg_io.comm.counting import CountedComm

world = MPI.COMM_WORLD
comm = CountedComm(world)
P, r = comm.size, comm.rank
results = {}


def snapshot(name):
    comm.counter.settle_one_sided(world)
    mine = {"sent": comm.counter.bytes_sent, "recv": comm.counter.bytes_recv,
            "msgs": comm.counter.msgs_sent, "by_op": dict(comm.counter.sent_by_op),
            "recv_by_op": dict(comm.counter.recv_by_op),
            "by_phase": dict(comm.counter.sent_by_phase)}
    results[name] = world.gather(mine, root=0)
    comm.counter.reset()


# ring with rank-dependent sizes, inside a phase
with comm.phase("ring"):
    out = np.full(r + 1, float(r))
    into = np.empty((r - 1) % P + 1)
    request = comm.Isend(out, (r + 1) % P, 3)
    comm.Recv(into, (r - 1) % P, 3)
    request.Wait()
    assert np.all(into == (r - 1) % P)
snapshot("ring")

# Sendrecv ring (int32) and PROC_NULL
out = np.arange(5, dtype=np.int32)
into = np.empty(5, dtype=np.int32)
comm.Sendrecv(out, (r + 1) % P, 0, into, (r - 1) % P, 0)
comm.Send(out, MPI.PROC_NULL)
comm.Recv(into, MPI.PROC_NULL)
snapshot("sendrecv")

# Bcast from every root
for root in range(P):
    buf = np.full(100, float(root)) if r == root else np.empty(100)
    comm.Bcast(buf, root)
    assert np.all(buf == root)
snapshot("bcast")

# Ibcast from the last rank, 60 doubles, completed before the count is read
buf = np.full(60, 3.0) if r == P - 1 else np.empty(60)
comm.Ibcast(buf, P - 1).Wait()
assert np.all(buf == 3.0)
snapshot("ibcast")

# Reduce (root 0) and Allreduce, also IN_PLACE
send = np.ones(10)
total = np.empty(10)
comm.Reduce(send, total if r == 0 else None, MPI.SUM, 0)
both = np.ones(7)
comm.Allreduce(MPI.IN_PLACE, both, MPI.SUM)
assert np.all(both == P)
snapshot("reduce")

# Gatherv to the last rank and Scatterv from rank 0 with uneven counts c_i = i + 1
counts = np.arange(1, P + 1)
displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
mine = np.full(r + 1, float(r))
gathered = np.empty(counts.sum()) if r == P - 1 else None
comm.Gatherv(mine, [gathered, (counts, displs), MPI.DOUBLE] if r == P - 1 else None, P - 1)
if r == P - 1:
    assert np.all(gathered == np.repeat(np.arange(P), counts))
scattered = np.empty(r + 1)
comm.Scatterv([np.repeat(np.arange(P), counts).astype(float), (counts, displs), MPI.DOUBLE]
              if r == 0 else None, scattered, 0)
assert np.all(scattered == r)
snapshot("gatherv_scatterv")

# Allgatherv with uneven counts, plain Allgather of 3 doubles
allv = np.empty(counts.sum())
comm.Allgatherv(mine, [allv, (counts, displs), MPI.DOUBLE])
assert np.all(allv == np.repeat(np.arange(P), counts))
plain = np.empty(3 * P)
comm.Allgather(np.full(3, float(r)), plain)
snapshot("allgather")

# Alltoallv with s[i][j] = (i + 2 j) % 3 + 1 doubles from i to j
s = (np.arange(P)[:, None] + 2 * np.arange(P)[None, :]) % 3 + 1
sd = np.concatenate([[0], np.cumsum(s[r])[:-1]])
rc = s[:, r]
rd = np.concatenate([[0], np.cumsum(rc)[:-1]])
sendbuf = np.full(s[r].sum(), float(r))
recvbuf = np.empty(rc.sum())
comm.Alltoallv([sendbuf, (s[r], sd), MPI.DOUBLE], [recvbuf, (rc, rd), MPI.DOUBLE])
assert np.all(recvbuf == np.repeat(np.arange(P), rc))
snapshot("alltoallv")

# Reduce_scatter with counts c_i = i + 1
rs = np.empty(r + 1)
comm.Reduce_scatter(np.ones(counts.sum()), rs, counts, MPI.SUM)
assert np.all(rs == P)
snapshot("reduce_scatter")

# one-sided: Put 1 double to r+1, Accumulate 2 to r+2, Get 3 from r+3
memory = np.zeros(8)
win = comm.Win_create(memory)
win.Lock_all()
win.Put(np.full(1, float(r)), (r + 1) % P, [0, 1, MPI.DOUBLE])
win.Flush_all()
win.Unlock_all()
world.Barrier()
win.Lock_all()
win.Accumulate(np.ones(2), (r + 2) % P, [2, 2, MPI.DOUBLE], MPI.SUM)
fetched = np.empty(3)
win.Get(fetched, (r + 3) % P, [4, 3, MPI.DOUBLE])
win.Flush_all()
win.Unlock_all()
world.Barrier()
assert memory[0] == (r - 1) % P and memory[2] == memory[3] == 1.0
win.Free()
snapshot("one_sided")

# size-1 communicators move nothing
alone = comm.Split(r, 0)
alone.Bcast(np.ones(50), 0)
alone.Allreduce(MPI.IN_PLACE, np.ones(50))
snapshot("self_only")

if r == 0:
    write_result(results)
