#include "core/torch_runtime.h"

#include <gtest/gtest.h>

#include <thread>

namespace pwab {

TEST(TorchRuntime, ThreadsAndBlasAreWired) {
  torch_init_threads(0);
  std::string d = torch_description();
  EXPECT_EQ(d.rfind(PWAB_CONFIGURED_TORCH ".", 0), 0u) << d;  // Debian's 1.13, or the PyTorch 2.x of PWAB_TORCH_DIR
  EXPECT_NE(d.find("threads " + std::to_string(std::max(1u, std::thread::hardware_concurrency()))), std::string::npos) << d;
  // A finite, positive throughput means mm ran; the speed itself is a benchmark figure, not a test.
  double gflops = torch_matmul_gflops(64, 2);
  EXPECT_GT(gflops, 0.0);
}

}  // namespace pwab
