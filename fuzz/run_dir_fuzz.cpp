// libFuzzer target: a run directory's files on any bytes. The first byte picks the file: manifest.json (read by
// read_manifest) or results.jsonl (read by read_records, whose unterminated last line is cut, not an error). Each
// must give its result or a DataError naming the file, never a crash. The files live in a directory of this
// process under /dev/shm when it exists, so each execution costs a write, not a disk flush.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "runner/results.h"

namespace {

// The directory, removed when the fuzzer exits.
struct RunDir {
  std::filesystem::path path;
  RunDir() {
    std::filesystem::path base =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    path = base / ("pwab-fuzz-run-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~RunDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

const std::filesystem::path& run_dir() {
  static const RunDir dir;
  return dir.path;
}

void write(const std::filesystem::path& file, const uint8_t* data, size_t size) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& dir = run_dir();
  try {
    if (data[0] % 2 == 0) {
      write(dir / pwab::runner::kManifestFile, data + 1, size - 1);
      (void)pwab::runner::read_manifest(dir);
    } else {
      write(dir / "results.jsonl", data + 1, size - 1);
      std::size_t truncated = 0;
      (void)pwab::runner::read_records(dir, &truncated);
    }
  } catch (const pwab::Error&) {
  }
  return 0;
}
