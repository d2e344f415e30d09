// src/llama/distributed.h: data-parallel training over torch.distributed's c10d (docs/puma.md, "Several processes").
//
// N processes (ranks) train one model: rank 0's parameters are broadcast to the others at the start, each rank
// computes the gradient of its slice of every batch, the gradients are summed across ranks (all-reduce) before
// every optimizer step, and every rank applies the same step, so the replicas never diverge. Rank 0 alone writes
// checkpoints and logs. The backend follows the device: Gloo for CPU training; NCCL for CUDA, when libtorch was
// built with it (Debian's is CPU-only: CUDA training across processes is then refused with a clear error).
//
// The ranks find each other as torchrun and Slurm tell them (dist_env_from_environment): RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, or SLURM_PROCID, SLURM_NTASKS and the first host of SLURM_JOB_NODELIST. Every
// collective has a timeout, and a failed one throws a pwab::Error that names the rank that stopped, so that a rank
// killed mid-run makes the others exit instead of hang.
#pragma once
#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pwab::llama {

//! Where this process stands in a job, as its launcher says.
struct DistEnv {
  int rank = 0;
  int world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher;  //!< "torchrun", "slurm", or "" (one process)
  //! Intra-op threads for each rank, so that the ranks on one host share its cores instead of each taking all of
  //! them: SLURM_CPUS_PER_TASK, else the host's cores over its ranks (LOCAL_WORLD_SIZE, Slurm's tasks per node, or
  //! the world when neither says). 0 for one process (its own default applies).
  int threads = 0;
  //! This rank's place among the ranks on its host: LOCAL_RANK (torchrun), SLURM_LOCALID (srun), else the rank
  //! modulo the ranks per host. A rank on "cuda" takes GPU local_rank (device_for_rank).
  int local_rank = 0;
};

//! torchrun's variables when RANK and WORLD_SIZE are set, else Slurm's when SLURM_NTASKS > 1 under srun (the
//! master: MASTER_ADDR, or the first host of SLURM_JOB_NODELIST; the port: MASTER_PORT, or one derived from
//! SLURM_JOB_ID), else one process. `lookup` reads a variable (std::getenv by default; tests pass their own).
//! Throws pwab::UsageError for values that do not make sense (a rank outside [0, world), a port out of range).
DistEnv dist_env_from_environment(const std::function<const char*(const char*)>& lookup = {});

//! The device a rank trains on: a bare "cuda" becomes "cuda:<local_rank>" when there are several ranks, so that
//! the ranks on one host each take a GPU of their own (NCCL refuses two ranks on one device); any other device,
//! or one process, is returned as given.
std::string device_for_rank(const std::string& device, const DistEnv& env);

//! The first host name of a Slurm node list: "vm" → "vm", "node[03-07,09]" → "node03", "a,b" → "a".
std::string first_slurm_host(const std::string& nodelist);

//! What the collectives have cost so far (for the benchmarks and the training report).
struct CommStats {
  int64_t all_reduces = 0;
  int64_t bytes_all_reduced = 0;  //!< payload of this rank's all-reduces
  double seconds = 0;             //!< wall time inside collectives (waiting for slower ranks included)
};

//! Whether this build's libtorch has NCCL (a CUDA PyTorch 2.x: cmake/Libtorch.cmake), so that ranks on CUDA
//! devices can form a group.
bool nccl_built();

//! This process's membership of a job. Every rank constructs one with the same world and master; the
//! constructor returns once all have joined (or throws after `timeout`).
class ProcessGroup {
 public:
  //! `device`: where the tensors of the collectives live ("cpu" → Gloo; "cuda..." → NCCL, or a UsageError when
  //! this build has no NCCL or the process sees no CUDA device).
  ProcessGroup(const DistEnv& env, std::chrono::milliseconds timeout, const std::string& device = "cpu");
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return env_.rank; }
  int world() const { return env_.world; }
  const std::string& backend() const { return backend_; }
  const CommStats& stats() const { return stats_; }

  //! Sets every rank's `tensors` to rank `root`'s (in place).
  void broadcast(std::vector<torch::Tensor>& tensors, int root = 0);
  //! Replaces each tensor by its sum over the ranks (in place), as one flattened buffer per dtype.
  void all_reduce_sum(std::vector<torch::Tensor>& tensors);
  //! The sums of a few numbers over the ranks.
  std::vector<double> all_reduce_sum(const std::vector<double>& values);
  void barrier();

  //! Rank 0 tells the others something outside the collectives (which training phase comes next): a key-value
  //! pair in the rendezvous store. wait_for() blocks until the key is set and returns its value; with no time
  //! limit (rank 0 may spend hours on steps the others sit out), but it throws when rank 0 is gone.
  void announce(const std::string& key, const std::string& value);
  std::string wait_for(const std::string& key);

 private:
  [[noreturn]] void fail(const std::string& what, const std::exception& e);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DistEnv env_;
  std::string backend_;
  CommStats stats_;
};

}  // namespace pwab::llama
