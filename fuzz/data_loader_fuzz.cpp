// libFuzzer target for the dataset loader: any bytes, read as any of the five file kinds, must produce
// diagnostics, never a crash, hang or sanitizer report. The first byte picks the file kind.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/diagnostics.h"
#include "data/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr std::string_view kFiles[] = {"all_products_part_1.json", "user_history_part_1.json",
                                                "user_instructions.json", "user_profiles.json", "item_ids.json"};
  std::string_view file = kFiles[data[0] % 5];
  std::string_view json(reinterpret_cast<const char*>(data + 1), size - 1);
  pwab::Diagnostics diag;
  pwab::data::parse_dataset_file_for_test(file, json, diag);
  for (const auto& d : diag.kept()) (void)d.to_string();
  return 0;
}
