#include "core/torch_runtime.h"

#include <torch/torch.h>

#include <malloc.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace pwab {

void torch_init_threads(int n_threads) {
  if (n_threads <= 0) {
    // OMP_NUM_THREADS, when the user set it, is the count they want (several trainings side by side)
    const char* env = std::getenv("OMP_NUM_THREADS");
    n_threads = env ? std::atoi(env) : 0;
  }
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(n_threads);
}

void torch_tune_allocator() {
  // libtorch's CPU allocator is plain malloc/free. glibc hands freed memory at the top of the heap back to the
  // kernel once it exceeds the trim threshold, and serves large blocks with fresh mmaps; a training step frees and
  // reallocates the same large activation buffers every micro-batch, so each step page-faulted and zeroed them
  // again (a third of a tiny model's SFT time went to the kernel). Keep freed memory for reuse instead.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest allowed value
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

std::string torch_description() {
  std::string config = at::show_config();
  std::string blas = "unknown BLAS";
  auto pos = config.find("BLAS_INFO=");
  if (pos != std::string::npos) blas = config.substr(pos + 10, config.find_first_of(",\n", pos) - pos - 10);
  return std::string(TORCH_VERSION) + " (intra-op threads " + std::to_string(at::get_num_threads()) + ", BLAS " +
         blas + ", CUDA " + (torch::cuda::is_available() ? "available" : "not available") + ")";
}

double torch_matmul_gflops(int n, int n_reps) {
  torch::NoGradGuard no_grad;
  auto a = torch::randn({n, n});
  auto b = torch::randn({n, n});
  auto c = torch::mm(a, b);  // warm-up
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n_reps; ++i) c = torch::mm(a, b);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return 2.0 * n * n * static_cast<double>(n) * n_reps / seconds / 1e9;
}

}  // namespace pwab
