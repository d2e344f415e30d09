#include "core/json_writer.h"

#include <gtest/gtest.h>

namespace pwab {

TEST(JsonWriter, UsesPythonSeparatorsAndTypes) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("a").value(int64_t{1});
  w.key("b").value(5.0);
  w.key("c").begin_array().value("x").null().value(true).end_array();
  w.key("d").value(py::Scalar::of_str("$3"));
  w.key("e").raw("{\"k\": 1}");
  w.key("f").begin_object().end_object();
  w.end_object();
  EXPECT_EQ(out, R"({"a": 1, "b": 5.0, "c": ["x", null, true], "d": "$3", "e": {"k": 1}, "f": {}})");
}

TEST(JsonWriter, EscapesControlCharactersAndKeepsUtf8) {
  std::string out;
  append_json_string(out, "Café \"q\" \\ \n\t\x01");
  EXPECT_EQ(out, "\"Café \\\"q\\\" \\\\ \\n\\t\\u0001\"");
}

}  // namespace pwab
