// Reading a torch.save zip without libtorch (src/rec/zip_archive.h, src/rec/weights.h): the Python-made
// fixture, zip64 end records, every storage dtype, strided views, and damaged archives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "rec/weights.h"
#include "rec/zip_archive.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::rec;

namespace {

std::string little_endian(uint64_t value, int width) {
  std::string out;
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}

struct ZipEntry {
  std::string name, data;
  uint16_t method = 0;  //!< 0 stored, 8 deflated (the data is then not read)
};

//! A zip laid out as torch.save writes one: local headers without sizes and with a padding extra field, sizes in
//! the central directory; with `zip64`, saturated end-record fields, zip64 extra fields and zip64 end records.
std::string make_zip(const std::vector<ZipEntry>& entries, bool zip64 = false) {
  const uint32_t saturated = 0xffffffff;
  const std::string padding = little_endian(0x4246, 2) + little_endian(3, 2) + "FFF";
  std::string out, directory;
  for (const auto& e : entries) {
    const uint64_t local = out.size();
    out += little_endian(0x04034b50, 4) + little_endian(20, 2) + little_endian(0, 2) + little_endian(e.method, 2) +
           little_endian(0, 4) + little_endian(0, 4) + little_endian(0, 4) + little_endian(0, 4) +
           little_endian(e.name.size(), 2) + little_endian(padding.size(), 2) + e.name + padding + e.data;
    const std::string extra = zip64 ? little_endian(1, 2) + little_endian(24, 2) + little_endian(e.data.size(), 8) +
                                          little_endian(e.data.size(), 8) + little_endian(local, 8)
                                    : "";
    auto field = [&](uint64_t value) { return little_endian(zip64 ? saturated : value, 4); };
    directory += little_endian(0x02014b50, 4) + little_endian(45, 2) + little_endian(45, 2) + little_endian(0, 2) +
                 little_endian(e.method, 2) + little_endian(0, 4) + little_endian(0, 4) + field(e.data.size()) +
                 field(e.data.size()) + little_endian(e.name.size(), 2) + little_endian(extra.size(), 2) +
                 little_endian(0, 2) + little_endian(0, 2) + little_endian(0, 2) + little_endian(0, 4) + field(local) +
                 e.name + extra;
  }
  const uint64_t directory_offset = out.size();
  out += directory;
  if (zip64) {
    const uint64_t record = out.size();
    out += little_endian(0x06064b50, 4) + little_endian(44, 8) + little_endian(45, 2) + little_endian(45, 2) +
           little_endian(0, 4) + little_endian(0, 4) + little_endian(entries.size(), 8) +
           little_endian(entries.size(), 8) + little_endian(directory.size(), 8) + little_endian(directory_offset, 8);
    out += little_endian(0x07064b50, 4) + little_endian(0, 4) + little_endian(record, 8) + little_endian(1, 4);
  }
  const uint64_t count = zip64 ? 0xffff : entries.size();
  out += little_endian(0x06054b50, 4) + little_endian(0, 2) + little_endian(0, 2) + little_endian(count, 2) +
         little_endian(count, 2) + little_endian(zip64 ? saturated : directory.size(), 4) +
         little_endian(zip64 ? saturated : directory_offset, 4) + little_endian(0, 2);
  return out;
}

//! One state_dict entry: a view of the storage record data/<key>.
struct PickledView {
  std::string name, storage_class, key;
  int64_t numel = 0, offset = 0;
  std::vector<int64_t> shape, stride;
};

//! The pickle torch.save writes for a state_dict (protocol 2, GLOBAL, BINPERSID storages, _rebuild_tensor_v2).
std::string state_dict_pickle(const std::vector<PickledView>& views) {
  auto text = [](std::string_view s) { return "X" + little_endian(s.size(), 4) + std::string(s); };
  auto integer = [](int64_t v) { return "J" + little_endian(static_cast<uint32_t>(v), 4); };
  auto tuple = [&](const std::vector<int64_t>& values) {
    std::string s = "(";
    for (int64_t v : values) s += integer(v);
    return s + "t";
  };
  const std::string ordered_dict = "ccollections\nOrderedDict\n)R";
  std::string p = std::string("\x80\x02") + ordered_dict + "(";
  for (const auto& v : views)
    p += text(v.name) + "ctorch._utils\n_rebuild_tensor_v2\n((" + text("storage") + "ctorch\n" + v.storage_class + "\n" +
         text(v.key) + text("cpu") + integer(v.numel) + "tQ" + integer(v.offset) + tuple(v.shape) + tuple(v.stride) +
         "\x89" + ordered_dict + "tR";
  return p + "u.";
}

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

//! Writes `bytes` to dir/name and reads it back as weights; returns the error text, or "" when it loads.
std::string weights_error(const test::TempDir& dir, const std::string& name, const std::string& bytes) {
  test::write_text(dir / name, bytes);
  try {
    read_torch_save_weights(dir / name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(RecCoreZip, ReadsStoredEntriesWithAndWithoutZip64) {
  const std::vector<ZipEntry> entries = {{"archive/data.pkl", "pickle bytes"}, {"archive/data/0", std::string(300, 'x')},
                                         {"archive/version", "3\n"}};
  for (bool zip64 : {false, true}) {
    SCOPED_TRACE(zip64 ? "zip64" : "plain");
    const std::string bytes = make_zip(entries, zip64);
    ZipArchive zip(bytes, "a.zip");
    EXPECT_EQ(zip.names(), (std::vector<std::string>{"archive/data.pkl", "archive/data/0", "archive/version"}));
    EXPECT_EQ(zip.entry("archive/data.pkl"), "pickle bytes");
    EXPECT_EQ(zip.entry("archive/data/0"), std::string(300, 'x'));
    EXPECT_EQ(zip.entry("archive/version"), "3\n");
    EXPECT_FALSE(zip.contains("archive/data/1"));
  }
}

TEST(RecCoreZip, DamagedArchivesNameTheFileAndEntry) {
  auto error_of = [](std::string_view bytes, const std::string& entry = "") -> std::string {
    try {
      ZipArchive zip(bytes, "model.pth");
      if (!entry.empty()) zip.entry(entry);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_TRUE(contains(error_of("hello, not a zip"), "model.pth: not a zip archive")) << error_of("hello, not a zip");
  EXPECT_TRUE(contains(error_of(""), "model.pth: not a zip archive"));

  const std::string good = make_zip({{"a/data.pkl", std::string(1000, 'p')}, {"a/data/0", "storage"}});
  std::string no_end = good.substr(0, good.size() - 10);
  EXPECT_TRUE(contains(error_of(no_end), "no end-of-central-directory record")) << error_of(no_end);

  // The end record kept but the first half of the archive gone: its directory offset points past the end.
  std::string tail = good.substr(good.size() / 2);
  EXPECT_TRUE(contains(error_of(tail), "model.pth: truncated or corrupt zip archive")) << error_of(tail);

  EXPECT_TRUE(contains(error_of(good, "a/data/7"), "model.pth: zip entry 'a/data/7' is missing"));

  const std::string deflated = make_zip({{"a/data.pkl", "x\x9c not really deflate", 8}});
  std::string compressed = error_of(deflated, "a/data.pkl");
  EXPECT_TRUE(contains(compressed, "model.pth: zip entry 'a/data.pkl' is compressed (method 8)")) << compressed;

  // An entry's data cut off: the directory (rewritten here) claims more bytes than the file holds.
  std::string cut = make_zip({{"a/data/0", std::string(64, 's')}});
  cut.replace(cut.find(std::string("\x40\x00\x00\x00\x40\x00\x00\x00", 8)), 8, little_endian(6400, 4) + little_endian(6400, 4));
  std::string beyond = error_of(cut, "a/data/0");
  EXPECT_TRUE(contains(beyond, "'a/data/0' lies beyond the end of the file")) << beyond;
}

TEST(RecCoreTorchSave, ReadsTheFixture) {
  WeightMap weights = read_torch_save_weights(test::fixture("rec/sasrec_tiny.pth"));
  EXPECT_EQ(weights.size(), 2u + 2 * 12 + 2);
  EXPECT_EQ(weights.at("item_emb.weight").shape, (std::vector<int64_t>{41, 50}));
  EXPECT_EQ(weights.at("item_emb.weight").values.size(), 41u * 50);
  EXPECT_EQ(weights.at("forward_layers.1.conv2.weight").shape, (std::vector<int64_t>{50, 50, 1}));
  auto [item_rows, shape] = infer_dimensions(weights, "fixture");
  EXPECT_EQ(item_rows, 41);
  EXPECT_EQ(shape.maxlen, 30);
  EXPECT_EQ(shape.hidden, 50);
  EXPECT_EQ(shape.blocks, 2);
  EXPECT_EQ(shape.heads, 2);
  EXPECT_NO_THROW(check_tensors(weights, item_rows, shape, "fixture"));
  // The padding row of the item table is zero, as the original initialisation leaves it.
  for (int j = 0; j < 50; ++j) EXPECT_EQ(weights.at("item_emb.weight").values[j], 0.0f);
}

TEST(RecCoreTorchSave, ConvertsEveryDtypeAndFollowsStrides) {
  test::TempDir dir;
  const std::vector<uint16_t> halves = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x7c00};  // 1, -2, .5, max, 2^-24, inf
  const std::vector<uint16_t> bfloats = {0x3fc0, 0xc040};                                 // 1.5, -3
  const std::vector<double> doubles = {0.25, -0.125, 1048576.5};
  const std::vector<int64_t> longs = {-7, 0, 1 << 20};
  const std::vector<float> floats = {0, 1, 2, 3, 4, 5, 6};
  const std::string pickle = state_dict_pickle({
      {"half", "HalfStorage", "0", 6, 0, {6}, {1}},
      {"bfloat", "BFloat16Storage", "1", 2, 0, {2}, {1}},
      {"double", "DoubleStorage", "2", 3, 0, {3}, {1}},
      {"long", "LongStorage", "3", 3, 0, {3}, {1}},
      {"transposed", "FloatStorage", "4", 7, 1, {3, 2}, {1, 3}},  // [[1, 4], [2, 5], [3, 6]]
      {"expanded", "FloatStorage", "4", 7, 2, {2, 2}, {0, 1}},    // [[2, 3], [2, 3]]: a shared storage, stride 0
  });
  const std::string zip = make_zip({{"m/data.pkl", pickle}, {"m/data/0", bytes_of(halves)}, {"m/data/1", bytes_of(bfloats)},
                                    {"m/data/2", bytes_of(doubles)}, {"m/data/3", bytes_of(longs)},
                                    {"m/data/4", bytes_of(floats)}, {"m/version", "3\n"}},
                                   true);
  test::write_text(dir / "dtypes.pth", zip);
  WeightMap w = read_torch_save_weights(dir / "dtypes.pth");
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(w.at("half").values, (std::vector<float>{1, -2, 0.5f, 65504, std::ldexp(1.0f, -24), inf}));
  EXPECT_EQ(w.at("bfloat").values, (std::vector<float>{1.5f, -3}));
  EXPECT_EQ(w.at("double").values, (std::vector<float>{0.25f, -0.125f, 1048576.5f}));
  EXPECT_EQ(w.at("long").values, (std::vector<float>{-7, 0, 1 << 20}));
  EXPECT_EQ(w.at("transposed").shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(w.at("transposed").values, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(w.at("expanded").values, (std::vector<float>{2, 3, 2, 3}));
}

TEST(RecCoreTorchSave, BadArchivesGiveClearErrors) {
  test::TempDir dir;
  const std::string floats = bytes_of(std::vector<float>(6, 1.0f));
  auto archive = [&](const PickledView& view) {
    return make_zip({{"m/data.pkl", state_dict_pickle({view})}, {"m/data/0", floats}});
  };
  std::string beyond = weights_error(dir, "beyond.pth", archive({"w", "FloatStorage", "0", 6, 1, {2, 3}, {3, 1}}));
  EXPECT_TRUE(contains(beyond, "beyond.pth: tensor 'w' reaches beyond its storage")) << beyond;
  std::string shorter = weights_error(dir, "short.pth", archive({"w", "DoubleStorage", "0", 6, 0, {6}, {1}}));
  EXPECT_TRUE(contains(shorter, "short.pth: storage of tensor 'w' is shorter than its declared size")) << shorter;
  std::string missing = weights_error(dir, "missing.pth", archive({"w", "FloatStorage", "9", 6, 0, {6}, {1}}));
  EXPECT_TRUE(contains(missing, "missing.pth: storage 'data/9' of tensor 'w' is missing")) << missing;
  std::string negative = weights_error(dir, "negative.pth", archive({"w", "FloatStorage", "0", 6, 5, {2}, {-1}}));
  EXPECT_TRUE(contains(negative, "negative.pth: tensor stride")) << negative;  // refused by the pickle reader
  // A stride so large that the view's last element lies far past the storage (no overflow on the way).
  std::string huge = weights_error(dir, "huge.pth", archive({"w", "FloatStorage", "0", 6, 0, {2, 2}, {1, 0x7fffffff}}));
  EXPECT_TRUE(contains(huge, "huge.pth: tensor 'w' reaches beyond its storage")) << huge;

  std::string no_pickle = weights_error(dir, "no_pickle.pth", make_zip({{"m/data/0", floats}}));
  EXPECT_TRUE(contains(no_pickle, "no_pickle.pth: the zip has no data.pkl")) << no_pickle;
  std::string not_zip = weights_error(dir, "text.pth", "just some text");
  EXPECT_TRUE(contains(not_zip, "text.pth: not a zip archive")) << not_zip;
  std::string deflated =
      weights_error(dir, "deflated.pth", make_zip({{"m/data.pkl", "compressed bytes", 8}, {"m/data/0", floats}}));
  EXPECT_TRUE(contains(deflated, "deflated.pth: zip entry 'm/data.pkl' is compressed")) << deflated;

  const std::string fixture = test::read_text(test::fixture("rec/sasrec_tiny.pth"));
  for (std::size_t keep : {fixture.size() / 2, fixture.size() - 30, std::size_t{100}}) {
    std::string truncated = weights_error(dir, "truncated.pth", fixture.substr(0, keep));
    EXPECT_TRUE(contains(truncated, "truncated.pth: ")) << keep << ": " << truncated;
  }
}
