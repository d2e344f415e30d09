#include "core/py_format.h"

#include <gtest/gtest.h>

namespace pwab::py {

TEST(PyFormat, FloatReprMatchesPython) {
  // Expected strings are what CPython 3.11 prints for repr(x).
  EXPECT_EQ(float_repr(5.0), "5.0");
  EXPECT_EQ(float_repr(4.5), "4.5");
  EXPECT_EQ(float_repr(12.99), "12.99");
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(0.00001), "1e-05");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(float_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(float_repr(2.5e-7), "2.5e-07");
  EXPECT_EQ(float_repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(float_repr(100.0), "100.0");
}

TEST(PyFormat, ScalarStrKeepsTheJsonType) {
  EXPECT_EQ(Scalar::none().str(), "None");
  EXPECT_EQ(Scalar::of_int(5).str(), "5");
  EXPECT_EQ(Scalar::of_float(5).str(), "5.0");
  EXPECT_EQ(Scalar::of_str("$12.99").str(), "$12.99");
  EXPECT_EQ(*Scalar::of_str("$12.99").number(), 12.99);
  EXPECT_FALSE(Scalar::of_str("None").number().has_value());
  EXPECT_FALSE(Scalar::none().number().has_value());
}

TEST(PyFormat, StrReprChoosesQuotesAndEscapes) {
  EXPECT_EQ(str_repr("abc"), "'abc'");
  EXPECT_EQ(str_repr("it's"), "\"it's\"");
  EXPECT_EQ(str_repr("say \"hi\" it's"), "'say \"hi\" it\\'s'");
  EXPECT_EQ(str_repr("a\nb\tc\\"), "'a\\nb\\tc\\\\'");
  EXPECT_EQ(str_repr("Café ™"), "'Café ™'");
  EXPECT_EQ(str_repr(std::string("\x01", 1)), "'\\x01'");
}

TEST(PyFormat, JsonStringAsciiEscapesNonAscii) {
  EXPECT_EQ(json_string_ascii("Café"), "\"Caf\\u00e9\"");
  EXPECT_EQ(json_string_ascii("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(json_string_ascii("\xF0\x9F\x98\x80"), "\"\\ud83d\\ude00\"");  // U+1F600 as a surrogate pair
}

}  // namespace pwab::py

namespace pwab::py {

TEST(PyFormat, ListRepr) {
  EXPECT_EQ(list_repr({}), "[]");
  EXPECT_EQ(list_repr({"a", "it's", "x\ny"}), R"(['a', "it's", 'x\ny'])");
}

TEST(PyFormat, JsonDumpsLikePython) {
  // json.dumps({"Brand": "Café", "Size": 12, "W": 1.0, "L": [1, "x"], "N": None, "B": True})
  EXPECT_EQ(json_dumps(R"({"Brand":"Café","Size":12,"W":1.0,"L":[1,"x"],"N":null,"B":true})"),
            R"({"Brand": "Caf\u00e9", "Size": 12, "W": 1.0, "L": [1, "x"], "N": null, "B": true})");
  EXPECT_EQ(json_dumps("{}"), "{}");
  // A details value that is itself a string is dumped as a JSON string.
  EXPECT_EQ(json_dumps(R"("{\"Brand\": \"K\"}")"), R"("{\"Brand\": \"K\"}")");
  EXPECT_EQ(json_dumps("not json"), "\"not json\"");
}

}  // namespace pwab::py
