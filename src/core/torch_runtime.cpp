#include "core/torch_runtime.h"

#include <torch/torch.h>

#include <chrono>
#include <thread>

namespace pwab {

void torch_init_threads(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(n_threads);
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
