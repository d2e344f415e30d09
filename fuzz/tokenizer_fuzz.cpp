// libFuzzer target: tokenizer files as a user's model directory holds them. The first byte picks the kind: even, a
// Hugging Face tokenizer.json (pwab's BPE reader); odd, a sentencepiece tokenizer.model (read through sentencepiece,
// then checked by pwab). Any bytes give a tokenizer or a pwab::Error; a tokenizer that loads must encode and
// decode a few texts without a crash, and give ids inside its vocabulary.
//
// Seeds: with PWAB_FUZZ_MAKE_SEEDS=DIR, the target trains a small BPE model with pwab's own trainer, writes it and
// its tokenizer.json into DIR behind their selector bytes, and exits (scripts/fuzz.sh does this first).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sys.h"
#include "tok/backends.h"
#include "tok/tokenizer.h"

namespace {

// The loaders read a path: the input goes to an in-memory file, named through /proc/self/fd.
struct MemoryFile {
  MemoryFile() : fd(::memfd_create("pwab-fuzz-tokenizer", 0)), path("/proc/self/fd/" + std::to_string(fd)) {}
  void set(const uint8_t* data, size_t size) {
    if (::ftruncate(fd, 0) != 0 || (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))) std::abort();
  }
  int fd;
  std::string path;
};

void write_seed(const std::filesystem::path& file, char selector, const std::filesystem::path& seed) {
  pwab::write_file_atomic(seed, std::string(1, selector) + pwab::tok::read_file_bytes(file));
}

void make_seeds(const std::filesystem::path& dir) {
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back("a usb cable " + std::to_string(i) + " charges the phone fast; the caf\xc3\xa9 sells green tea and "
                    "wireless earbuds with a long battery life, item " + std::to_string(i * 7));
  pwab::tok::SpmTrainOptions options;
  options.vocab_size = 300;
  const std::filesystem::path model = pwab::tok::train_sentencepiece(texts, dir / "model", options);
  pwab::tok::write_hf_tokenizer_json(model, dir / "model" / "tokenizer.json");
  write_seed(model, '\x01', dir / "seed-tokenizer-model");
  write_seed(dir / "model" / "tokenizer.json", '\x00', dir / "seed-tokenizer-json");
  std::filesystem::remove_all(dir / "model");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("PWAB_FUZZ_MAKE_SEEDS")) {
    make_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MemoryFile file;
  if (size == 0) return 0;
  const bool sentencepiece = data[0] & 1;
  file.set(data + 1, size - 1);
  std::unique_ptr<pwab::tok::Tokenizer> tok;
  try {
    tok = sentencepiece ? pwab::tok::load_sentencepiece(file.path) : pwab::tok::load_hf_tokenizer_json(file.path);
  } catch (const pwab::Error&) {
    return 0;
  }
  for (const char* text : {"", "Hello world", "  spaced\ttext\n", "caf\xc3\xa9 \xe2\x82\xac 12.5", "\xff\xfe bad utf-8"}) {
    std::vector<int32_t> ids = tok->encode(text, true, true);
    for (int32_t id : ids)
      if (id < 0 || id >= tok->vocab_size()) std::abort();
    (void)tok->decode(ids, true);
    (void)tok->decode(ids, false);
  }
  return 0;
}
