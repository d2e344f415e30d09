// The request-head scanner of GuardedServer (request_head.h) as a pure function: when a head is complete, the body
// length it announces, and the heads it refuses.
#include "serve/request_head.h"

#include <gtest/gtest.h>

#include "serve/episode_service.h"

namespace pwab::serve {
namespace {

int refusal_status(std::string_view bytes) {
  try {
    scan_request_head(bytes);
  } catch (const RequestError& e) {
    return e.status;
  }
  return 0;
}

TEST(RequestHead, CompleteOnlyAtTheBlankLine) {
  EXPECT_FALSE(scan_request_head(""));
  EXPECT_FALSE(scan_request_head("GET /health HTTP/1.1\r\nHost: x\r\n"));
  auto head = scan_request_head("GET /health HTTP/1.1\r\nHost: x\r\n\r\nNEXT");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->size, std::string_view("GET /health HTTP/1.1\r\nHost: x\r\n\r\n").size());
  EXPECT_EQ(head->content_length, 0u);
  EXPECT_FALSE(head->has_transfer_encoding);
  EXPECT_FALSE(head->expects_continue);
}

TEST(RequestHead, ReadsLengthEncodingAndExpectWhateverTheirCase) {
  auto head = scan_request_head("POST /v1/episodes HTTP/1.1\r\ncontent-LENGTH:  17 \r\nEXPECT: 100-Continue\r\n"
                                "Content-Length: 17\r\n\r\n");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->content_length, 17u);  // given twice, the same: accepted
  EXPECT_TRUE(head->expects_continue);
  auto chunked = scan_request_head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT_TRUE(chunked);
  EXPECT_TRUE(chunked->has_transfer_encoding);
}

TEST(RequestHead, RefusesBadLengthsAndHugeHeads) {
  EXPECT_EQ(refusal_status("POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n"), 400);
  EXPECT_EQ(refusal_status("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(refusal_status("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n"), 400);
  EXPECT_EQ(refusal_status("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 400);
  EXPECT_EQ(refusal_status("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"), 400);
  // Over the limit, refused before the blank line arrives (a client could otherwise send headers forever).
  EXPECT_EQ(refusal_status("GET / HTTP/1.1\r\nX: " + std::string(kMaxRequestHeadBytes, 'a')), 431);
}

TEST(RequestHead, ExpectLinesAreTakenOutAndNothingElse) {
  const std::string head = "POST /v1/episodes HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  EXPECT_EQ(head_without_expect(head), "POST /v1/episodes HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n");
  const std::string plain = "GET / HTTP/1.1\r\n\r\n";
  EXPECT_EQ(head_without_expect(plain), plain);
}

}  // namespace
}  // namespace pwab::serve
