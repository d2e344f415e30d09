// libFuzzer target: the head of an HTTP request as the server's own reader scans it (src/serve/request_head.h),
// any bytes off the socket. A scan must give a head, "not complete yet", or a RequestError (400/431); a head found
// must lie within the bytes, and taking its Expect lines out must leave a head that scans to the same length.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/episode_service.h"
#include "serve/request_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using pwab::serve::RequestError;
  try {
    auto head = pwab::serve::scan_request_head(bytes);
    if (!head) return 0;
    if (head->size > bytes.size() || head->size > pwab::serve::kMaxRequestHeadBytes) std::abort();
    std::string stripped = pwab::serve::head_without_expect(bytes.substr(0, head->size));
    auto again = pwab::serve::scan_request_head(stripped);
    if (!again || again->expects_continue || again->content_length != head->content_length ||
        again->has_transfer_encoding != head->has_transfer_encoding)
      std::abort();
  } catch (const RequestError& e) {
    if (e.status != 400 && e.status != 431) std::abort();
  }
  return 0;
}
