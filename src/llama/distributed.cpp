// Data-parallel training's collectives over c10d (distributed.h): the rendezvous store, the Gloo (or NCCL) process
// group, and errors that say which rank stopped.
#include "llama/distributed.h"

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/torch.h>

#include <charconv>
#include <cstdlib>
#include <map>
#include <thread>

#include "core/error.h"

namespace pwab::llama {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kFailedPrefix = "pwab/failed/";  // a rank whose collective failed says so here

std::optional<int64_t> integer(const char* text) {
  if (!text || !*text) return std::nullopt;
  int64_t v = 0;
  const char* end = text + std::strlen(text);
  auto [p, ec] = std::from_chars(text, end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

int64_t required_integer(const std::function<const char*(const char*)>& lookup, const char* name) {
  auto v = integer(lookup(name));
  if (!v) throw UsageError(fmt::format("{} must be an integer, not '{}'", name, lookup(name) ? lookup(name) : ""));
  return *v;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// An exception's message without c10's backtrace, on one line, at most 300 characters.
std::string reason_of(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  if (auto nl = text.find('\n'); nl != std::string::npos) text = text.substr(0, nl);
  return text.size() > 300 ? text.substr(0, 300) + "..." : text;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // Up to the first comma outside brackets; a bracket range gives its first member.
  std::string first;
  int depth = 0;
  for (char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  const auto open = first.find('[');
  if (open == std::string::npos) return first;
  std::string inside = first.substr(open + 1, first.find(']') - open - 1);
  inside = inside.substr(0, inside.find_first_of(",-"));
  return first.substr(0, open) + inside;
}

DistEnv dist_env_from_environment(const std::function<const char*(const char*)>& lookup_in) {
  auto lookup = lookup_in ? lookup_in : [](const char* name) -> const char* { return std::getenv(name); };
  DistEnv env;
  auto set_master = [&](const std::string& default_addr, int default_port) {
    const char* addr = lookup("MASTER_ADDR");
    env.master_addr = addr && *addr ? addr : default_addr;
    env.master_port = lookup("MASTER_PORT") ? static_cast<int>(required_integer(lookup, "MASTER_PORT")) : default_port;
  };
  if (lookup("RANK") && lookup("WORLD_SIZE")) {  // torchrun, or any launcher that sets its variables
    env.launcher = "torchrun";
    env.rank = static_cast<int>(required_integer(lookup, "RANK"));
    env.world = static_cast<int>(required_integer(lookup, "WORLD_SIZE"));
    set_master("127.0.0.1", 29500);
  } else if (lookup("SLURM_PROCID") && lookup("SLURM_NTASKS") && integer(lookup("SLURM_NTASKS")).value_or(1) > 1 &&
             lookup("SLURM_STEP_ID")) {  // one task of an srun step; a batch script alone is one process
    env.launcher = "slurm";
    env.rank = static_cast<int>(required_integer(lookup, "SLURM_PROCID"));
    env.world = static_cast<int>(required_integer(lookup, "SLURM_NTASKS"));
    const char* nodes = lookup("SLURM_STEP_NODELIST") ? lookup("SLURM_STEP_NODELIST") : lookup("SLURM_JOB_NODELIST");
    // A port of the job's own, so that two jobs sharing a node do not meet.
    const int64_t job = integer(lookup("SLURM_JOB_ID")).value_or(0);
    set_master(nodes ? first_slurm_host(nodes) : "127.0.0.1", static_cast<int>(20000 + job % 20000));
  } else {
    return env;
  }
  if (env.world < 1 || env.rank < 0 || env.rank >= env.world)
    throw UsageError(fmt::format("the launcher says rank {} of {} processes: a rank must be in [0, {})", env.rank,
                                 env.world, env.world));
  if (env.master_port < 1 || env.master_port > 65535)
    throw UsageError(fmt::format("MASTER_PORT {} is not a port", env.master_port));
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int ranks_here = env.world;
  if (auto local = integer(lookup("LOCAL_WORLD_SIZE"))) {
    ranks_here = static_cast<int>(*local);
  } else if (env.launcher == "slurm") {
    const int64_t tasks = integer(lookup("SLURM_STEP_NUM_TASKS")).value_or(env.world);
    const int64_t nodes = std::max<int64_t>(1, integer(lookup("SLURM_STEP_NUM_NODES")).value_or(1));
    ranks_here = static_cast<int>((tasks + nodes - 1) / nodes);
  }
  env.threads = std::max(1, cores / std::max(1, ranks_here));
  const char* local = env.launcher == "slurm" ? "SLURM_LOCALID" : "LOCAL_RANK";
  env.local_rank = lookup(local) ? static_cast<int>(required_integer(lookup, local)) : env.rank % std::max(1, ranks_here);
  if (env.local_rank < 0 || env.local_rank >= env.world)
    throw UsageError(fmt::format("the launcher says local rank {} for {} processes", env.local_rank, env.world));
  if (auto cpus = integer(lookup("SLURM_CPUS_PER_TASK")); cpus && *cpus > 0) env.threads = static_cast<int>(*cpus);
  return env;
}

std::string device_for_rank(const std::string& device, const DistEnv& env) {
  if (env.world > 1 && device == "cuda") return fmt::format("cuda:{}", env.local_rank);
  return device;
}

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
  // PyTorch 2.x split the process group into a front and per-device backends; Gloo and NCCL are backends there,
  // with the same collectives as 1.13's process groups.
#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Backend> group;
#else
  c10::intrusive_ptr<c10d::ProcessGroup> group;
#endif
};

bool nccl_built() {
#ifdef USE_C10D_NCCL
  return true;
#else
  return false;
#endif
}

ProcessGroup::ProcessGroup(const DistEnv& env, std::chrono::milliseconds timeout, const std::string& device)
    : impl_(std::make_unique<Impl>()), env_(env) {
  const bool cuda = device.rfind("cuda", 0) == 0;
  if (cuda && !nccl_built())
    throw UsageError(fmt::format("training on {} in several processes needs NCCL, and this libtorch was built without "
                                 "it (Debian's is CPU-only): train on cpu, or build pwab against a CUDA libtorch",
                                 device));
  // Checked before the rendezvous: NCCL on a machine without a visible GPU fails only inside the first collective,
  // after every rank has joined.
  if (cuda && !torch::cuda::is_available())
    throw UsageError(fmt::format("training on {}: this process sees no CUDA device (CUDA_VISIBLE_DEVICES, driver)",
                                 device));
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(env.master_port);
    so.isServer = env.rank == 0;
    so.numWorkers = env.world;
    so.waitWorkers = true;
    so.timeout = timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    if (cuda) {
#ifdef USE_C10D_NCCL
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      impl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl_->store, env.rank, env.world, options);
      backend_ = "nccl";
#endif
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (is_loopback(env.master_addr))
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, env.rank, env.world, options);
      backend_ = "gloo";
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(fmt::format("rank {} of {} could not join the training group at {}:{} within {} s: {}", env.rank,
                            env.world, env.master_addr, env.master_port, timeout.count() / 1000.0, reason_of(e)));
  }
}

ProcessGroup::~ProcessGroup() = default;

void ProcessGroup::fail(const std::string& what, const std::exception& e) {
  // Say that this rank is alive and failed, then see which ranks do not say the same within a few seconds: those
  // stopped (killed, crashed) or stopped answering. Rank 0 holds the store; when it is unreachable, rank 0 is gone.
  const std::string cause = reason_of(e);
  std::vector<int> silent;
  try {
    impl_->store->set(kFailedPrefix + std::to_string(env_.rank), std::vector<uint8_t>{1});
    const auto until = Clock::now() + std::chrono::seconds(3);
    for (;;) {
      silent.clear();
      for (int r = 0; r < env_.world; ++r)
        if (r != env_.rank && !impl_->store->check({kFailedPrefix + std::to_string(r)})) silent.push_back(r);
      if (silent.empty() || Clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  } catch (const std::exception&) {
    silent = {0};
  }
  std::string who = silent.empty() ? "another rank failed too"
                    : silent.size() == 1
                        ? fmt::format("rank {} stopped or stopped answering", silent[0])
                        : fmt::format("ranks {} stopped or stopped answering", fmt::join(silent, ", "));
  if (silent == std::vector<int>{0} && env_.rank != 0)
    who = fmt::format("rank 0 (which holds the rendezvous at {}:{}) stopped or stopped answering", env_.master_addr,
                      env_.master_port);
  throw Error(fmt::format("data-parallel training, rank {} of {}: {} failed: {} ({})", env_.rank, env_.world, what,
                          who, cause));
}

namespace {

// The tensors of one dtype, flattened into one buffer (one collective instead of one per tensor).
std::map<torch::ScalarType, std::vector<std::size_t>> by_dtype(const std::vector<torch::Tensor>& tensors) {
  std::map<torch::ScalarType, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < tensors.size(); ++i) groups[tensors[i].scalar_type()].push_back(i);
  return groups;
}

torch::Tensor flatten(const std::vector<torch::Tensor>& tensors, const std::vector<std::size_t>& which) {
  std::vector<torch::Tensor> parts;
  for (std::size_t i : which) parts.push_back(tensors[i].detach().reshape({-1}));
  return torch::cat(parts);
}

void unflatten(const torch::Tensor& flat, std::vector<torch::Tensor>& tensors, const std::vector<std::size_t>& which) {
  torch::NoGradGuard no_grad;
  int64_t at = 0;
  for (std::size_t i : which) {
    const int64_t n = tensors[i].numel();
    tensors[i].copy_(flat.slice(0, at, at + n).view(tensors[i].sizes()));
    at += n;
  }
}

}  // namespace

void ProcessGroup::broadcast(std::vector<torch::Tensor>& tensors, int root) {
  const auto start = Clock::now();
  try {
    for (const auto& [dtype, which] : by_dtype(tensors)) {
      std::vector<torch::Tensor> flat{flatten(tensors, which)};
      c10d::BroadcastOptions options;
      options.rootRank = root;
      impl_->group->broadcast(flat, options)->wait();
      unflatten(flat[0], tensors, which);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("broadcasting the parameters", e);
  }
  stats_.seconds += seconds_since(start);
}

void ProcessGroup::all_reduce_sum(std::vector<torch::Tensor>& tensors) {
  const auto start = Clock::now();
  try {
    for (const auto& [dtype, which] : by_dtype(tensors)) {
      std::vector<torch::Tensor> flat{flatten(tensors, which)};
      impl_->group->allreduce(flat)->wait();
      unflatten(flat[0], tensors, which);
      stats_.bytes_all_reduced += flat[0].numel() * static_cast<int64_t>(flat[0].element_size());
    }
    ++stats_.all_reduces;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("summing the gradients", e);
  }
  stats_.seconds += seconds_since(start);
}

std::vector<double> ProcessGroup::all_reduce_sum(const std::vector<double>& values) {
  const auto start = Clock::now();
  std::vector<torch::Tensor> t{torch::tensor(values, torch::kFloat64)};
  try {
    impl_->group->allreduce(t)->wait();
  } catch (const std::exception& e) {
    fail("summing the batch statistics", e);
  }
  stats_.seconds += seconds_since(start);
  auto a = t[0].accessor<double, 1>();
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = a[static_cast<int64_t>(i)];
  return out;
}

void ProcessGroup::barrier() {
  try {
    impl_->group->barrier()->wait();
  } catch (const std::exception& e) {
    fail("waiting for every rank", e);
  }
}

void ProcessGroup::announce(const std::string& key, const std::string& value) {
  impl_->store->set("pwab/announce/" + key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string ProcessGroup::wait_for(const std::string& key) {
  const std::string full = "pwab/announce/" + key;
  try {
    while (!impl_->store->check({full})) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto bytes = impl_->store->get(full);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    throw Error(fmt::format("data-parallel training, rank {} of {}: rank 0 (which holds the rendezvous at {}:{}) "
                            "stopped or stopped answering while this rank waited for '{}' ({})",
                            env_.rank, env_.world, env_.master_addr, env_.master_port, key, reason_of(e)));
  }
}

}  // namespace pwab::llama
