// Finding and loading libpwab_torch.so (torch_models.h).
#include "models/torch_models.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace pwab::models {
namespace {

constexpr const char* kPluginName = "libpwab_torch.so";
std::atomic<bool> g_loaded{false};

std::filesystem::path executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

//! Where the plugin may be, in the order tried.
std::vector<std::filesystem::path> candidates() {
  if (const char* forced = std::getenv("PWAB_TORCH_PLUGIN"); forced && *forced) return {forced};
  std::vector<std::filesystem::path> out;
  if (auto dir = executable_dir(); !dir.empty()) {
    out.push_back(dir / kPluginName);
    out.push_back(dir / ".." / "lib" / "pwab" / kPluginName);
  }
#ifdef PWAB_TORCH_PLUGIN_BUILD_PATH
  out.push_back(PWAB_TORCH_PLUGIN_BUILD_PATH);  // tests and tools run from the build tree
#endif
  return out;
}

const TorchModels* load() {
#ifndef PWAB_TORCH_PLUGIN_BUILD_PATH
  throw Error("this needs libtorch (SASRec training, MiniLM or PUMA models), but pwab was built without it "
              "(PWAB_WITH_TORCH=OFF)");
#else
  std::string tried;
  for (const auto& path : candidates()) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      tried += "\n  " + path.string() + ": not there";
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      tried += "\n  " + path.string() + ": " + (why ? why : "cannot be loaded");
      continue;
    }
    using Entry = const TorchModels* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kTorchModelsSymbol));
    if (!entry) {
      tried += "\n  " + path.string() + ": not a pwab libtorch plugin (it has no " + kTorchModelsSymbol + ")";
      continue;  // never unloaded (dlclose could run static destructors of a library half set up)
    }
    const TorchModels* api = entry();
    if (!api || api->abi != kTorchModelsAbi || api->size != sizeof(TorchModels)) {
      tried += "\n  " + path.string() + ": a libpwab_torch.so of another pwab build";
      continue;
    }
    g_loaded = true;
    return api;
  }
  throw Error("this needs libtorch (SASRec training, MiniLM or PUMA models), but its plugin " +
              std::string(kPluginName) + " could not be loaded (set PWAB_TORCH_PLUGIN to its path):" + tried);
#endif
}

}  // namespace

const TorchModels& torch_models() {
  // Loaded under a lock rather than as `static const auto* api = load()`: a failed load is not remembered, so
  // every later call says again why it failed.
  static std::mutex mu;
  static const TorchModels* api = nullptr;
  std::lock_guard lock(mu);
  if (!api) api = load();
  return *api;
}

bool torch_models_loaded() { return g_loaded; }

bool torch_models_built() {
#ifdef PWAB_TORCH_PLUGIN_BUILD_PATH
  return true;
#else
  return false;
#endif
}

}  // namespace pwab::models
