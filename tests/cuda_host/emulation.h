/* Host emulation of the CUDA subset that linalg_io/kernels/cuda uses, so that the kernel
 * sources themselves run (slowly) on a machine without a GPU and tests can compare their
 * results with NumPy/SciPy.
 *
 * Every thread of a block is an OS thread; blocks run one after another (each block's
 * threads all finish before the next block starts), so __shared__ variables can be
 * function statics and a kernel that waits only on work taken earlier (the sync-free
 * SpTRSV takes columns in increasing order) cannot deadlock. __syncthreads is a barrier
 * of the block, __syncwarp one of the warp (blockDim.x a multiple of 32 where warps are
 * used), __shfl_sync goes through one slot per thread between two warp barriers, atomics
 * are std::atomic_ref and __threadfence a sequentially consistent fence.
 * Dynamic shared memory: the source's `extern __shared__` is rewritten to `extern` by the
 * test, so that it names the global array `shared_raw` the driver defines. */
#pragma once

#include <atomic>
#include <barrier>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

namespace emu {
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
inline dim3 grid_dim, block_dim;
inline thread_local dim3 thread_idx, block_idx;

/* Runs kernel() for every block of `grid`, block.x threads at a time. */
template <class Kernel>
void launch(dim3 grid, dim3 threads, Kernel kernel)
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

inline void __syncthreads() { emu::block->all.arrive_and_wait(); }

inline void __syncwarp(unsigned = 0xffffffffu)
{
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
