#include "core/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

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

// dump_compact writes what nlohmann's dump(-1, ' ', false, replace) writes, for every kind of value.
TEST(DumpCompact, EqualsNlohmannsCompactDump) {
  using nlohmann::json;
  const json cases[] = {
      nullptr, true, false, 0, -17, 12345678901234LL, 18446744073709551615ULL, 0.0, 1.0, -2.5, 0.1, 1e300, 1.5e-7,
      "", "plain", "quote \" backslash \\ slash / tab \t newline \n cr \r bell \x07 nul " + std::string(1, '\0'),
      "Grüße, 日本語, emoji \xF0\x9F\x98\x80", json::array(), json::object(),
      {{"b", 1}, {"a", {1, 2.5, "x", nullptr, json::object()}}, {"observation", "[{'title': \"x\"}]"}},
  };
  for (const json& v : cases) EXPECT_EQ(pwab::dump_compact(v), v.dump(-1, ' ', false, json::error_handler_t::replace)) << v.dump();
  // Whole floats keep their ".0", as nlohmann writes them; other floats read back to the same double.
  EXPECT_EQ(pwab::dump_compact(json(3.0)), "3.0");
  for (double d : {0.3, 1.0 / 3, 123456.789, -1e-300}) EXPECT_EQ(json::parse(pwab::dump_compact(json(d))).get<double>(), d);
  EXPECT_EQ(pwab::dump_compact(json(std::nan(""))), "null");
}

// Bytes that are not UTF-8 (an agent's bytes echoed in an observation) become U+FFFD, so the text stays valid
// UTF-8 (a WebSocket text frame must be); valid sequences are kept, overlong forms and surrogates are not.
TEST(DumpCompact, RepairsInvalidUtf8) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(pwab::dump_compact(nlohmann::json("a\xFF" "b")), "\"a" + r + "b\"");
  EXPECT_EQ(pwab::dump_compact(nlohmann::json("\xC0\xAF")), "\"" + r + r + "\"");          // overlong '/'
  EXPECT_EQ(pwab::dump_compact(nlohmann::json("\xED\xA0\x80")), "\"" + r + r + r + "\""); // a surrogate
  EXPECT_EQ(pwab::dump_compact(nlohmann::json("end \xE2\x82")), "\"end " + r + r + "\"");  // cut short
  EXPECT_EQ(pwab::dump_compact(nlohmann::json("\xE2\x82\xAC")), "\"\xE2\x82\xAC\"");         // €
  EXPECT_FALSE(nlohmann::json::parse(pwab::dump_compact(nlohmann::json("x\xF5\x80\x80\x80"))).is_discarded());
}
