// src/core/torch_runtime.h: process-wide libtorch settings behind a header that does not include torch.
#pragma once
#include <string>

namespace pwab {

//! Sets libtorch's intra-op threads (0 = $OMP_NUM_THREADS when set, else all hardware threads). Debian's libtorch 1.13 detects 1 core on some
//! VMs and would otherwise run single-threaded (docs/dependencies.md).
void torch_init_threads(int n_threads = 0);
//! Makes glibc keep freed memory for reuse (mmap threshold 32 MiB, trim threshold 1 GiB) instead of returning it to
//! the kernel after every training step; the plugin calls it when it loads (docs/performance.md, "PUMA training").
void torch_tune_allocator();
//! "1.13.0 (threads 2, BLAS OpenBLAS/...)": what the version command and run manifests record.
std::string torch_description();
//! Multiplies two n×n matrices n_reps times and returns GFLOP/s: a quick check that a fast BLAS is in use.
double torch_matmul_gflops(int n = 512, int n_reps = 4);

}  // namespace pwab
