// Data-parallel collectives (llama/distributed.h) with real Gloo process groups on loopback, one thread per rank:
// what the launchers' variables mean, sums and broadcasts across ranks, and a rank that stops or goes silent
// named in the error of the others instead of a hang.
#include "llama/distributed.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <map>
#include <thread>

#include "core/error.h"
#include "support/test_support.h"

namespace pwab::llama {
namespace {

using namespace std::chrono_literals;
using pwab::test::free_port;

DistEnv rank_env(int rank, int world, int port) {
  DistEnv env;
  env.rank = rank;
  env.world = world;
  env.master_port = port;
  env.launcher = "test";
  return env;
}

DistEnv env_of(const std::map<std::string, std::string>& vars) {
  return dist_env_from_environment([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(Distributed, LaunchersVariablesGiveRankWorldAndMaster) {
  DistEnv one = env_of({});
  EXPECT_EQ(one.world, 1);
  EXPECT_EQ(one.launcher, "");
  DistEnv torchrun = env_of({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29501"}});
  EXPECT_EQ(torchrun.rank, 1);
  EXPECT_EQ(torchrun.world, 4);
  EXPECT_EQ(torchrun.master_addr, "10.0.0.7");
  EXPECT_EQ(torchrun.master_port, 29501);
  EXPECT_EQ(torchrun.launcher, "torchrun");
  DistEnv slurm = env_of({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_STEP_ID", "0"},
                          {"SLURM_JOB_NODELIST", "gpu[07-08,11]"}, {"SLURM_JOB_ID", "123456"}});
  EXPECT_EQ(slurm.rank, 3);
  EXPECT_EQ(slurm.world, 8);
  EXPECT_EQ(slurm.master_addr, "gpu07");
  EXPECT_EQ(slurm.master_port, 20000 + 123456 % 20000);
  EXPECT_EQ(slurm.launcher, "slurm");
  // A batch script is one process even with --ntasks 2 (no step id): it is not a rank of an srun step.
  EXPECT_EQ(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "vm"}}).world, 1);
  EXPECT_THROW(env_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), UsageError);
  EXPECT_THROW(env_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), UsageError);
  EXPECT_THROW(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}), UsageError);
  // Each rank on a host takes a GPU of its own for a bare "cuda": LOCAL_RANK, SLURM_LOCALID, else rank modulo host.
  EXPECT_EQ(torchrun.local_rank, 1);
  EXPECT_EQ(env_of({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}}).local_rank, 1);
  EXPECT_EQ(env_of({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}}).local_rank, 1);
  EXPECT_EQ(env_of({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_STEP_ID", "0"}, {"SLURM_LOCALID", "0"},
                    {"SLURM_JOB_NODELIST", "vm"}})
                .local_rank,
            0);
  EXPECT_THROW(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}}), UsageError);
  EXPECT_EQ(device_for_rank("cuda", torchrun), "cuda:1");
  EXPECT_EQ(device_for_rank("cuda:3", torchrun), "cuda:3");  // the user's own choice stays
  EXPECT_EQ(device_for_rank("cpu", torchrun), "cpu");
  EXPECT_EQ(device_for_rank("cuda", one), "cuda");
  EXPECT_EQ(first_slurm_host("vm"), "vm");
  EXPECT_EQ(first_slurm_host("node[03-07,09],login1"), "node03");
  EXPECT_EQ(first_slurm_host("a,b"), "a");
}

TEST(Distributed, TwoRanksSumAndBroadcastTensorsOfEveryDtype) {
  const int port = free_port();
  std::vector<std::vector<torch::Tensor>> sums(2), sent(2);
  std::vector<std::vector<double>> numbers(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      ProcessGroup g(rank_env(r, 2, port), 20s);
      EXPECT_EQ(g.backend(), "gloo");
      sums[r] = {torch::full({2, 3}, float(r + 1)), torch::arange(4, torch::kFloat64) * (r + 1)};
      g.all_reduce_sum(sums[r]);
      sent[r] = {torch::full({5}, float(10 * (r + 1)))};
      g.broadcast(sent[r], 0);
      numbers[r] = g.all_reduce_sum(std::vector<double>{0.5 * r, 1.0});
      EXPECT_GT(g.stats().bytes_all_reduced, 0);
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(torch::equal(sums[r][0], torch::full({2, 3}, 3.0f)));
    EXPECT_TRUE(torch::equal(sums[r][1], torch::arange(4, torch::kFloat64) * 3));
    EXPECT_TRUE(torch::equal(sent[r][0], torch::full({5}, 10.0f)));  // rank 0's
    EXPECT_EQ(numbers[r], (std::vector<double>{0.5, 2.0}));
  }
}

TEST(Distributed, ARankThatStopsOrGoesSilentIsNamedNotWaitedForever) {
  // Rank 1 leaves (its group is destroyed, as when its process dies): rank 0's next collective fails, naming it.
  {
    const int port = free_port();
    std::string error;
    std::thread one([&] {
      ProcessGroup g(rank_env(1, 2, port), 20s);
      std::vector<torch::Tensor> t{torch::ones({3})};
      g.all_reduce_sum(t);
    });
    ProcessGroup g(rank_env(0, 2, port), 20s);
    std::vector<torch::Tensor> t{torch::ones({3})};
    g.all_reduce_sum(t);
    one.join();  // rank 1 is gone
    const auto start = std::chrono::steady_clock::now();
    try {
      g.all_reduce_sum(t);
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("rank 0 of 2"), std::string::npos) << error;
    EXPECT_NE(error.find("rank 1 stopped or stopped answering"), std::string::npos) << error;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  }
  // Rank 1 is alive but never joins the collective: rank 0 gives up after the timeout, naming it.
  {
    const int port = free_port();
    std::string error;
    std::atomic<bool> done{false};
    std::thread one([&] {
      ProcessGroup g(rank_env(1, 2, port), 20s);
      while (!done) std::this_thread::sleep_for(10ms);
    });
    {
      ProcessGroup g(rank_env(0, 2, port), 1500ms);
      std::vector<torch::Tensor> t{torch::ones({3})};
      const auto start = std::chrono::steady_clock::now();
      try {
        g.all_reduce_sum(t);
      } catch (const Error& e) {
        error = e.what();
      }
      EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
      done = true;
      one.join();
    }
    EXPECT_NE(error.find("rank 1 stopped or stopped answering"), std::string::npos) << error;
  }
  // Rank 0 (which holds the rendezvous) is gone: a rank waiting for its announcement says so.
  {
    const int port = free_port();
    std::string error;
    std::unique_ptr<ProcessGroup> zero;
    std::thread first([&] { zero = std::make_unique<ProcessGroup>(rank_env(0, 2, port), 20s); });
    ProcessGroup g(rank_env(1, 2, port), 20s);
    first.join();
    zero.reset();
    try {
      g.wait_for("sft");
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("rank 0 (which holds the rendezvous"), std::string::npos) << error;
  }
}

TEST(Distributed, CudaWithoutNcclOrDeviceIsAClearError) {
  // Debian's libtorch has no NCCL; a CUDA PyTorch 2.x has it, and on a machine without a GPU the missing device is
  // said before any rendezvous (not a timeout waiting for ranks).
  if (nccl_built() && torch::cuda::is_available()) GTEST_SKIP() << "this machine can form a NCCL group";
  try {
    ProcessGroup g(rank_env(0, 2, free_port()), 1s, "cuda:0");
    FAIL() << "a CUDA group was made without NCCL or a CUDA device";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(nccl_built() ? "sees no CUDA device" : "NCCL"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pwab::llama
