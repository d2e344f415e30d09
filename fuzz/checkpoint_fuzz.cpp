// libFuzzer target: the SASRec checkpoint readers on any bytes. The first byte picks the reader: pwab's own
// checkpoint container, a torch.save zip, or the pickle of a state dict. Each must refuse with pwab::Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "rec/checkpoint_file.h"
#include "rec/state_dict_pickle.h"
#include "rec/zip_archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 3) {
      case 0:
        (void)pwab::rec::decode_checkpoint(bytes, "fuzz");
        break;
      case 1: {
        pwab::rec::ZipArchive zip(bytes, "fuzz");
        for (const auto& name : zip.names()) (void)zip.entry(name);
        break;
      }
      default:
        (void)pwab::rec::parse_state_dict_pickle(bytes, "fuzz");
    }
  } catch (const pwab::Error&) {
  }
  return 0;
}
