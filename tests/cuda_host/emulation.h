/* Host emulation of the CUDA subset that linalg_io/kernels/cuda uses, so that the kernel
 * sources themselves run (slowly) on a machine without a GPU and tests can compare their
 * results with NumPy/SciPy.
 *
 * Blocks run one after another (each block's threads all finish before the next block
 * starts), so __shared__ variables can be function statics and a kernel that waits only on
 * work taken earlier (the sync-free SpTRSV takes columns in increasing order) cannot
 * deadlock. Two ways to run a block's threads:
 * - `launch`: every CUDA thread a fiber (ucontext) of one OS thread, switched only at a
 *   barrier, in thread order: a thread runs until it waits at __syncthreads (a barrier of
 *   the block) or __syncwarp (one of its warp) and the next one runs, so a read of shared
 *   data another thread writes in the same phase (a barrier missing) reads it before the
 *   write when the writer comes later in that order, or after the writer's next phase when
 *   the writer is the last to arrive (it runs on at once): a missing barrier shows every
 *   time, not by chance, and a barrier that not every thread reaches is reported (status -3)
 *   instead of hanging. No thread of a block runs alone, and no OS thread is made or woken:
 *   hundreds of threads per block cost microseconds, not the scheduler's milliseconds.
 * - `launch_threads`: every CUDA thread an OS thread, for kernels that spin on memory
 *   another thread of the block writes (the sync-free SpTRSV), which fibers that yield
 *   only at barriers would never let run.
 * Threads that return early no longer count at the barriers (as on Volta and later).
 * __shfl_sync goes through one slot per thread between two warp barriers (blockDim.x a
 * multiple of 32 where warps are used), atomics are std::atomic_ref and __threadfence a
 * sequentially consistent fence.
 * Dynamic shared memory: the source's `extern __shared__` is rewritten to `extern` by the
 * test, so that it names the global array `shared_raw` the driver defines. */
#pragma once

#include <ucontext.h>

#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

namespace emu {
/* A block's barrier among fibers: who waits, and how many must arrive to let them go. */
struct FiberBarrier {
    unsigned expected = 0, arrived = 0;
    std::vector<unsigned> waiting;
};

struct Fiber {
    ucontext_t context;
    std::unique_ptr<char[]> stack;
    bool done = false, blocked = false;
};

struct Fibers {
    static constexpr size_t STACK = 256 * 1024;
    ucontext_t scheduler;
    std::vector<Fiber> fibers;
    FiberBarrier all;
    std::vector<FiberBarrier> warps;
    const std::function<void()> *kernel = nullptr;
    unsigned current = 0;
};

struct Block {
    std::barrier<> all;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    std::vector<long long> slots;
    explicit Block(unsigned threads) : all(threads), slots(threads)
    {
        for (unsigned w = 0; threads % 32 == 0 && w < threads / 32; ++w)
            warps.push_back(std::make_unique<std::barrier<>>(32));
    }
};
inline Block *block;
inline Fibers *fibers;  // set while `launch` runs: the barriers are the fibers'
inline dim3 grid_dim, block_dim;
inline thread_local dim3 thread_idx, block_idx;

/* The running fiber waits at `barrier` (the last to arrive lets them all go and runs on). */
inline void arrive(FiberBarrier &barrier)
{
    Fibers &f = *fibers;
    if (++barrier.arrived == barrier.expected) {
        for (unsigned t : barrier.waiting) f.fibers[t].blocked = false;
        barrier.waiting.clear();
        barrier.arrived = 0;
        return;
    }
    barrier.waiting.push_back(f.current);
    f.fibers[f.current].blocked = true;
    swapcontext(&f.fibers[f.current].context, &f.scheduler);
}

/* A thread that returned: its barriers stop waiting for it. */
inline void leave(FiberBarrier &barrier)
{
    --barrier.expected;
    if (barrier.arrived > 0 && barrier.arrived == barrier.expected) {
        for (unsigned t : barrier.waiting) fibers->fibers[t].blocked = false;
        barrier.waiting.clear();
        barrier.arrived = 0;
    }
}

inline void fiber_main()
{
    Fibers &f = *fibers;
    (*f.kernel)();
    f.fibers[f.current].done = true;
    leave(f.all);
    if (!f.warps.empty()) leave(f.warps[f.current / 32]);
    // returning resumes uc_link: the scheduler
}

/* Runs kernel() for every block of `grid`, the block's block.x threads as fibers;
 * false if a block's threads all wait at barriers that some never reach. */
template <class Kernel>
bool launch(dim3 grid, dim3 threads, Kernel kernel)
{
    grid_dim = grid;
    block_dim = threads;
    const std::function<void()> body = kernel;
    Block state(1);
    state.slots.resize(threads.x);
    Fibers f;
    f.kernel = &body;
    f.fibers.resize(threads.x);
    for (Fiber &fiber : f.fibers) fiber.stack.reset(new char[Fibers::STACK]);
    block = &state;
    fibers = &f;
    bool ok = true;
    for (unsigned by = 0; ok && by < grid.y; ++by)
        for (unsigned bx = 0; ok && bx < grid.x; ++bx) {
            block_idx = dim3{bx, by, 0};
            f.all = FiberBarrier{threads.x, 0, {}};
            f.warps.assign(threads.x % 32 == 0 ? threads.x / 32 : 0, FiberBarrier{32, 0, {}});
            for (Fiber &fiber : f.fibers) {
                fiber.done = fiber.blocked = false;
                getcontext(&fiber.context);
                fiber.context.uc_stack.ss_sp = fiber.stack.get();
                fiber.context.uc_stack.ss_size = Fibers::STACK;
                fiber.context.uc_link = &f.scheduler;
                makecontext(&fiber.context, fiber_main, 0);
            }
            for (unsigned left = threads.x; ok && left > 0;) {
                bool ran = false;
                for (unsigned t = 0; t < threads.x; ++t) {
                    if (f.fibers[t].done || f.fibers[t].blocked) continue;
                    f.current = t;
                    thread_idx = dim3{t, 0, 0};
                    swapcontext(&f.scheduler, &f.fibers[t].context);
                    ran = true;
                    left -= f.fibers[t].done;
                }
                if (!ran && left > 0) {
                    std::fprintf(stderr, "emulated block (%u, %u): %u threads wait at barriers "
                                 "the others never reach\n", bx, by, left);
                    ok = false;
                }
            }
        }
    fibers = nullptr;
    block = nullptr;
    return ok;
}

/* Runs kernel() for every block of `grid`, block.x OS threads at a time. */
template <class Kernel>
void launch_threads(dim3 grid, dim3 threads, Kernel kernel)
{
    grid_dim = grid;
    block_dim = threads;
    Block state(threads.x);
    block = &state;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads.x; ++t)
        pool.emplace_back([&, t] {
            thread_idx = dim3{t, 0, 0};
            for (unsigned by = 0; by < grid.y; ++by)
                for (unsigned bx = 0; bx < grid.x; ++bx) {
                    block_idx = dim3{bx, by, 0};
                    kernel();
                    state.all.arrive_and_wait();
                }
        });
    for (auto &thread : pool) thread.join();
    block = nullptr;
}
}  // namespace emu

#define threadIdx emu::thread_idx
#define blockIdx emu::block_idx
#define gridDim emu::grid_dim
#define blockDim emu::block_dim
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

inline void __syncthreads()
{
    if (emu::fibers)
        emu::arrive(emu::fibers->all);
    else
        emu::block->all.arrive_and_wait();
}

inline void __syncwarp(unsigned = 0xffffffffu)
{
    if (emu::fibers)
        emu::arrive(emu::fibers->warps.at(threadIdx.x / 32));
    else
        emu::block->warps.at(threadIdx.x / 32)->arrive_and_wait();
}

template <class T>
T __shfl_sync(unsigned, T value, int lane)
{
    static_assert(sizeof(T) <= sizeof(long long));
    long long *slots = emu::block->slots.data();
    std::memcpy(&slots[threadIdx.x], &value, sizeof value);
    __syncwarp();
    T out;
    std::memcpy(&out, &slots[threadIdx.x / 32 * 32 + lane], sizeof out);
    __syncwarp();
    return out;
}

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T>
T atomicAdd(T *address, T value) { return std::atomic_ref<T>(*address).fetch_add(value); }

template <class T>
T atomicSub(T *address, T value) { return std::atomic_ref<T>(*address).fetch_sub(value); }
