#include "core/diagnostics.h"

#include <gtest/gtest.h>

namespace pwab {

TEST(Diagnostics, FormatsFileRecordPathAndMessage) {
  Diagnostic d{Severity::kError, "user_history_part_1.json", "user \"A1\"", "$[\"A1\"][3].review.timestamp",
               "expected an integer, got a string \"x\"", "schema"};
  EXPECT_EQ(d.to_string(),
            "error: user_history_part_1.json: user \"A1\" ($[\"A1\"][3].review.timestamp): expected an integer, got a "
            "string \"x\"");
  Diagnostic w{Severity::kWarning, "", "", "", "something", "x"};
  EXPECT_EQ(w.to_string(), "warning: something");
}

TEST(Diagnostics, CountsEverythingKeepsAFew) {
  Diagnostics diag(2);
  for (int i = 0; i < 5; ++i) diag.error("schema", "f", "r" + std::to_string(i), "", "bad");
  diag.warning("order", "f", "", "", "late");
  EXPECT_EQ(diag.n_errors(), 5u);
  EXPECT_EQ(diag.n_warnings(), 1u);
  EXPECT_EQ(diag.kept().size(), 3u);
  auto counts = diag.counts(Severity::kError);
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].second, 5u);
  EXPECT_NE(diag.first_error().find("r0"), std::string::npos);
}

TEST(Diagnostics, MergeCarriesDroppedCounts) {
  Diagnostics a(1), b(1);
  for (int i = 0; i < 4; ++i) b.error("schema", "f", "", "", "bad");
  a.merge(std::move(b));
  EXPECT_EQ(a.n_errors(), 4u);
  EXPECT_EQ(a.kept().size(), 1u);
}

}  // namespace pwab
