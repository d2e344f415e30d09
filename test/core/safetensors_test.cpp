// The safetensors reader and writer: round trips, 16-bit float conversions, sharded indexes, and every kind of
// malformed file ending in a DataError that names the file and the problem.
#include "core/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "support/test_support.h"

namespace pwab::safetensors {
namespace {

namespace fs = std::filesystem;

std::string le64(uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  return s;
}

//! A file image from a literal header and data.
std::string image(const std::string& header, const std::string& data) { return le64(header.size()) + header + data; }

std::string bytes_of(std::initializer_list<float> values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), std::data(values), s.size());
  return s;
}

//! The DataError message reading `bytes` gives ("" if it reads fine).
std::string error_of(const std::string& bytes) {
  try {
    File::from_bytes(bytes, "bad.safetensors");
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

std::vector<TensorData> sample_tensors() {
  std::vector<float> a{1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, -7.0f};
  std::vector<TensorData> t;
  t.push_back(TensorData::from_floats("w.f32", {2, 3}, a));
  t.push_back(TensorData::from_floats("w.f16", {3, 2}, a, Dtype::kF16));
  t.push_back(TensorData::from_floats("w.bf16", {6}, a, Dtype::kBF16));
  TensorData ids{"ids.i64", Dtype::kI64, {1, 3}, std::string(24, '\0')};
  int64_t iv[3] = {0, -1, 1LL << 40};
  std::memcpy(ids.bytes.data(), iv, 24);
  t.push_back(ids);
  TensorData small{"ids.i32", Dtype::kI32, {2}, std::string(8, '\0')};
  int32_t sv[2] = {7, -9};
  std::memcpy(small.bytes.data(), sv, 8);
  t.push_back(small);
  t.push_back(TensorData{"empty", Dtype::kF32, {0, 4}, ""});
  return t;
}

}  // namespace

TEST(Safetensors, RoundTripsEveryDtypeThroughMemoryAndDisk) {
  auto img = encode(sample_tensors(), {{"format", "pt"}});
  uint64_t header_len = 0;
  std::memcpy(&header_len, img.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u) << "data must start 8-byte aligned";

  test::TempDir dir;
  write_file(dir / "m.safetensors", sample_tensors(), {{"format", "pt"}});
  std::vector<File> files;
  files.push_back(File::from_bytes(img));
  files.push_back(File::open(dir / "m.safetensors"));
  for (const File& f : files) {
    ASSERT_EQ(f.tensors().size(), 6u);
    EXPECT_EQ(f.metadata().at("format"), "pt");
    const auto& w = f.at("w.f32");
    EXPECT_EQ(w.dtype, Dtype::kF32);
    EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(w.describe(), "F32[2, 3]");
    EXPECT_EQ(w.to_floats(), (std::vector<float>{1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, -7.0f}));
    auto h = f.at("w.f16").to_floats();
    EXPECT_EQ(f.at("w.f16").dtype, Dtype::kF16);
    EXPECT_EQ(h[1], -2.5f);
    EXPECT_NEAR(h[4], 1e-3f, 1e-6f);
    auto b = f.at("w.bf16").to_floats();
    EXPECT_EQ(b[2], 3.25f);
    EXPECT_NEAR(b[4], 1e-3f, 1e-5f);
    EXPECT_EQ(f.at("ids.i64").to_floats(), (std::vector<float>{0.0f, -1.0f, 1099511627776.0f}));
    EXPECT_EQ(f.at("ids.i32").to_floats(), (std::vector<float>{7.0f, -9.0f}));
    EXPECT_EQ(f.at("empty").numel(), 0);
    EXPECT_EQ(f.find("nope"), nullptr);
  }
}

TEST(Safetensors, TensorsComeInOffsetOrderAndMissingOnesAreNamed) {
  auto f = File::from_bytes(encode(sample_tensors()), "x.safetensors");
  for (std::size_t i = 1; i < f.tensors().size(); ++i)
    EXPECT_LE(f.tensors()[i - 1].bytes.data() + f.tensors()[i - 1].bytes.size(), f.tensors()[i].bytes.data());
  try {
    f.at("missing.weight");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("x.safetensors"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("missing.weight"), std::string::npos);
  }
}

TEST(Safetensors, HalfConversionsAreExactAndRoundToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // halfway to the next power: rounds to infinity
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie: stays even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie: up to even
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie: stays even
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  // Every non-NaN 16-bit pattern survives the round trip through float.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    auto h = static_cast<uint16_t>(bits);
    float hf = half_to_float(h);
    if (!std::isnan(hf)) {
      ASSERT_EQ(float_to_half(hf), h) << bits;
    }
    float bf = bf16_to_float(h);
    if (!std::isnan(bf)) {
      ASSERT_EQ(float_to_bf16(bf), h) << bits;
    }
  }
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
}

TEST(Safetensors, DtypeNames) {
  Dtype d;
  for (auto name : {"BOOL", "U8", "I8", "I16", "I32", "I64", "F16", "BF16", "F32", "F64"}) {
    ASSERT_TRUE(parse_dtype(name, d)) << name;
    EXPECT_EQ(to_string(d), name);
  }
  EXPECT_FALSE(parse_dtype("F8_E4M3", d));
  EXPECT_EQ(dtype_size(Dtype::kBF16), 2u);
  EXPECT_EQ(dtype_size(Dtype::kI64), 8u);
}

TEST(Safetensors, MalformedFilesAreDataErrorsNamingTheProblem) {
  const std::string ok_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data8 = bytes_of({1.0f, 2.0f});
  ASSERT_EQ(error_of(image(ok_header, data8)), "");

  struct Case {
    const char* what;
    std::string bytes;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"empty file", "", "truncated"},
      {"short length", std::string("\x05\x00\x00", 3), "truncated"},
      {"header past the end", le64(1000) + "{}", "truncated header"},
      {"huge header length", le64(1ull << 40) + "{}", "exceeds the 100 MB limit"},
      {"not JSON", image("{\"a\": ", ""), "not valid JSON"},
      {"not an object", image("[1,2]", ""), "not a JSON object"},
      {"entry not an object", image(R"({"a":3})", ""), "entry is not an object"},
      {"unknown dtype", image(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "ab"),
       "unknown dtype 'F8_E4M3'"},
      {"missing dtype", image(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", data8), "\"dtype\""},
      {"missing shape", image(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", data8), "\"shape\""},
      {"negative dim", image(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8), "non-negative"},
      {"fractional dim", image(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", data8),
       "non-negative integers"},
      {"one offset", image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data8), "two integers"},
      {"offsets reversed", image(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", data8),
       "end before they begin"},
      {"offsets out of range", image(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data8),
       "out of range"},
      {"mis-sized", image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8), "does not match"},
      {"size overflow", image(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", data8),
       "does not match"},
      {"overlap",
       image(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           data8),
       "overlap"},
      {"gap", image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8), "gap of 4 bytes"},
      {"trailing bytes", image(ok_header, data8 + "xxxx"), "4 bytes after the last tensor"},
      {"truncated data", image(ok_header, data8.substr(0, 5)), "out of range"},
      {"metadata not an object", image(R"({"__metadata__":[1]})", ""), "__metadata__"},
      {"nested 100,000 deep", image(R"({"__metadata__":)" + std::string(100000, '[') + std::string(100000, ']') + "}", ""),
       "deeper than 256"},
  };
  for (const auto& c : cases) {
    std::string message = error_of(c.bytes);
    EXPECT_NE(message.find("bad.safetensors"), std::string::npos) << c.what << ": " << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << c.what << ": " << message;
  }
  // Non-string metadata values are skipped, not fatal.
  auto f = File::from_bytes(image(R"({"__metadata__":{"format":"pt","n":3}})", ""));
  EXPECT_EQ(f.metadata().size(), 1u);
  EXPECT_TRUE(f.tensors().empty());
}

TEST(Safetensors, EveryTruncationOfAValidFileIsADataError) {
  std::string full = encode(sample_tensors());
  for (std::size_t n = 0; n < full.size(); ++n) {
    std::string message = error_of(full.substr(0, n));
    EXPECT_NE(message, "") << "prefix of " << n << " bytes was accepted";
  }
}

TEST(Safetensors, OpenErrorsNameTheFile) {
  test::TempDir dir;
  EXPECT_THROW(File::open(dir / "absent.safetensors"), Error);
  EXPECT_THROW(File::open(dir.path()), Error);
  test::write_text(dir / "short.safetensors", "abc");
  try {
    File::open(dir / "short.safetensors");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "short.safetensors").string()), std::string::npos) << e.what();
  }
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
  std::vector<TensorData> dup = {TensorData::from_floats("a", {1}, std::vector<float>{1}),
                                 TensorData::from_floats("a", {1}, std::vector<float>{2})};
  EXPECT_THROW(encode(dup), Error);
  std::vector<TensorData> wrong = {TensorData{"a", Dtype::kF32, {3}, std::string(8, '\0')}};
  EXPECT_THROW(encode(wrong), Error);
}

TEST(Safetensors, ShardedIndexJoinsTheShards) {
  test::TempDir dir;
  auto all = sample_tensors();
  std::vector<TensorData> first(all.begin(), all.begin() + 3), second(all.begin() + 3, all.end());
  write_file(dir / "model-00001-of-00002.safetensors", first);
  write_file(dir / "model-00002-of-00002.safetensors", second);
  std::string map;
  for (std::size_t i = 0; i < all.size(); ++i)
    map += std::string(i ? "," : "") + "\"" + all[i].name + "\":\"model-0000" + (i < 3 ? "1" : "2") +
           "-of-00002.safetensors\"";
  test::write_text(dir / "model.safetensors.index.json", R"({"metadata":{"total_size":1},"weight_map":{)" + map + "}}");

  auto set = TensorSet::open(dir.path());
  EXPECT_EQ(set.files().size(), 2u);
  EXPECT_EQ(set.names().size(), all.size());
  EXPECT_EQ(set.at("w.f32").to_floats()[1], -2.5f);
  EXPECT_EQ(set.at("ids.i32").to_floats()[1], -9.0f);
  EXPECT_EQ(set.find("nope"), nullptr);
  EXPECT_THROW(set.at("nope"), DataError);
  // Opening the index file directly is the same.
  EXPECT_EQ(TensorSet::open(dir / "model.safetensors.index.json").names(), set.names());

  // A single model.safetensors wins over an index.
  write_file(dir / "model.safetensors", first);
  EXPECT_EQ(TensorSet::open(dir.path()).names().size(), 3u);
}

TEST(Safetensors, BadIndexesAreDataErrors) {
  test::TempDir dir;
  write_file(dir / "a.safetensors", {TensorData::from_floats("x", {1}, std::vector<float>{1})});
  write_file(dir / "b.safetensors", {TensorData::from_floats("x", {1}, std::vector<float>{2}),
                                     TensorData::from_floats("y", {1}, std::vector<float>{3})});
  auto index_error = [&](const std::string& text) {
    test::write_text(dir / "model.safetensors.index.json", text);
    try {
      TensorSet::open(dir.path());
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(index_error("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(index_error("{}").find("weight_map"), std::string::npos);
  EXPECT_NE(index_error(R"({"weight_map":{"z":"a.safetensors"}})").find("does not hold it"), std::string::npos);
  EXPECT_NE(index_error(R"({"weight_map":{"x":"../a.safetensors"}})").find("not a file name"), std::string::npos);
  EXPECT_NE(index_error(R"({"weight_map":{"x":"a.safetensors","y":"b.safetensors"}})").find("more than one shard"),
            std::string::npos);
  EXPECT_NE(index_error(R"({"weight_map":{"x":7}})").find("not a string"), std::string::npos);

  test::TempDir empty;
  try {
    TensorSet::open(empty.path());
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("no model.safetensors"), std::string::npos);
  }
}

}  // namespace pwab::safetensors
