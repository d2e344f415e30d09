// Tests for src/tok/: sentencepiece training, loading, encode/decode, truncation, tokenizer.json, errors; linked
// with libtorch to prove the vendored sentencepiece coexists with it in one process.
#include "tok/tokenizer.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#if defined(PWAB_WITH_TORCH)
#include "core/torch_runtime.h"
#endif
#include "data/synth.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::tok;
using pwab::test::TempDir;

namespace {

//! The dataset's own text, as the tiny preset trains on: product titles, features, descriptions, reviews.
std::vector<std::string> corpus() {
  static const std::vector<std::string> texts = [] {
    data::SynthOptions o;
    const data::Dataset ds = data::synthesize(o);
    std::vector<std::string> t;
    for (const auto& p : ds.products()) {
      t.push_back(p.title);
      for (const auto& f : p.features) t.push_back(f);
      for (const auto& d : p.description) t.push_back(d);
    }
    for (const auto& u : ds.users())
      for (const auto& b : u.behaviours) t.push_back(b.review.title + "\n" + b.review.text);
    // A little accented and CJK text, so those characters get pieces of their own.
    for (int i = 0; i < 400; ++i) t.push_back("Le café était très bon, naïve façade. 日本語のテキスト " + std::to_string(i));
    return t;
  }();
  return texts;
}

//! The first lines of the corpus: enough for the quick trainings of the unigram and error tests.
std::vector<std::string> small_corpus() {
  const auto& c = corpus();
  return std::vector<std::string>(c.begin(), c.begin() + std::min<std::size_t>(c.size(), 1500));
}

bool valid_utf8(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

//! Strings that exercise the tokenizer: unicode, whitespace runs, digits, newlines, characters never trained on.
std::vector<std::string> probe_strings() {
  std::vector<std::string> v = {
      "Hello world",
      "  leading spaces and trailing  ",
      "multiple   spaces\tand\ttabs\nand\nnewlines\r\n",
      "Price: $1,299.99 (save 15%) on 2024-03-05",
      "Le café était très bon — naïve façade.",
      "日本語のテキストと中文",
      "emoji 😀👍🏽 and symbols ™ ® © ∑ ∞",
      "Ωμέγα Ελληνικά και кириллица",
      "unseen 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters",
      "MEMORY 1:\nProduct:\n- Title: Wireless Earbuds\n- Features: Bluetooth 5.3\nReview:\n- Rating: 5.0",
      "x",
      " ",
      "\n",
      "a<b>c </s> <s> text with markup-like strings",
      "",
  };
  // Lines from the training corpus and random recombinations of their words.
  const auto& c = corpus();
  Rng rng(11);
  for (int i = 0; i < 300; ++i) v.push_back(c[rng.below(c.size())]);
  for (int i = 0; i < 200; ++i) {
    std::string s;
    const int n = 1 + static_cast<int>(rng.below(12));
    for (int k = 0; k < n; ++k) {
      const std::string& line = c[rng.below(c.size())];
      const std::size_t a = rng.below(line.size() + 1), len = rng.below(20);
      // Cut at character boundaries only.
      std::size_t b = std::min(line.size(), a + len), aa = a;
      while (aa < line.size() && (static_cast<unsigned char>(line[aa]) & 0xC0) == 0x80) ++aa;
      while (b < line.size() && (static_cast<unsigned char>(line[b]) & 0xC0) == 0x80) ++b;
      if (aa < b) s += line.substr(aa, b - aa);
      s += rng.below(5) == 0 ? "  " : rng.below(7) == 0 ? "\n" : " ";
    }
    v.push_back(s);
  }
  return v;
}

class TokTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    SpmTrainOptions o;
    o.vocab_size = 1200;
    model_file_ = train_sentencepiece(corpus(), dir_->path() / "tiny", o);
    tok_ = load_tokenizer(dir_->path() / "tiny").release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete dir_;
  }
  static TempDir* dir_;
  static fs::path model_file_;
  static Tokenizer* tok_;
};
TempDir* TokTest::dir_ = nullptr;
fs::path TokTest::model_file_;
Tokenizer* TokTest::tok_ = nullptr;

// ---- coexistence with libtorch ----------------------------------------------------------------------------------

TEST_F(TokTest, SharesTheProcessWithLibtorch) {
#if defined(PWAB_WITH_TORCH)
  // Debian's libsentencepiece.so crashes at load in a process that loads libtorch; this binary links both and
  // uses both. Reaching this line at all is most of the test.
  EXPECT_GT(torch_matmul_gflops(64, 1), 0.0);
  EXPECT_FALSE(tok_->encode("torch and sentencepiece together").empty());
#else
  GTEST_SKIP() << "built without libtorch (PWAB_WITH_TORCH=OFF)";
#endif
}

// ---- training --------------------------------------------------------------------------------------------------

TEST_F(TokTest, TrainingWritesALlamaLayoutModel) {
  EXPECT_EQ(model_file_, dir_->path() / "tiny" / "tokenizer.model");
  EXPECT_EQ(tok_->vocab_size(), 1200);
  EXPECT_EQ(tok_->unk_id(), 0);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_EQ(tok_->pad_id(), 2);  // no pad piece: pad = eos, as the original's LLaMA-2
  EXPECT_EQ(tok_->piece(0), "<unk>");
  EXPECT_EQ(tok_->piece(1), "<s>");
  EXPECT_EQ(tok_->piece(2), "</s>");
  for (int b = 0; b < 256; ++b) {  // byte pieces at 3..258, as in LLaMA
    EXPECT_EQ(tok_->byte_value(3 + b), b);
    EXPECT_EQ(tok_->piece_to_id(fmt::format("<0x{:02X}>", b)), 3 + b);
  }
  EXPECT_EQ(tok_->byte_value(300), -1);
  EXPECT_TRUE(tok_->is_special(0) && tok_->is_special(1) && tok_->is_special(2));
  EXPECT_FALSE(tok_->is_special(3) || tok_->is_special(300));
  EXPECT_EQ(tok_->backend(), "sentencepiece");
  EXPECT_EQ(tok_->fingerprint(), to_hex(hash_file(model_file_)));
  EXPECT_NE(tok_->description().find("sentencepiece bpe, 1200 pieces, byte fallback"), std::string::npos)
      << tok_->description();
  // Frequent words of the corpus became single pieces.
  EXPECT_GE(tok_->piece_to_id("\xE2\x96\x81the"), 259);
  EXPECT_EQ(tok_->piece_to_id("no such piece"), -1);
}

TEST_F(TokTest, TrainingIsDeterministic) {
  TempDir d;
  SpmTrainOptions o;
  o.vocab_size = 1200;
  const fs::path again = train_sentencepiece(corpus(), d / "again", o);
  EXPECT_EQ(test::read_text(again), test::read_text(model_file_));
  // Unigram too (single thread), and the file-based entry point gives the same model as in-memory texts.
  o.model_type = SpmModelType::kUnigram;
  o.vocab_size = 800;
  const std::string u1 = test::read_text(train_sentencepiece(small_corpus(), d / "u1", o));
  const std::string u2 = test::read_text(train_sentencepiece(small_corpus(), d / "u2", o));
  EXPECT_EQ(u1, u2);
  auto uni = load_tokenizer(d / "u1");
  EXPECT_NE(uni->description().find("sentencepiece unigram, 800 pieces"), std::string::npos);
  EXPECT_EQ(uni->decode(uni->encode("Le café était très bon")), "Le café était très bon");

  std::string all;
  for (const auto& t : corpus()) all += t + "\n";
  test::write_text(d / "corpus.txt", all);
  o.model_type = SpmModelType::kBpe;
  o.vocab_size = 1200;
  auto from_file = load_tokenizer(train_sentencepiece_file(d / "corpus.txt", d / "f", o));
  for (const auto& s : probe_strings()) ASSERT_EQ(from_file->encode(s), tok_->encode(s)) << s;
}

TEST_F(TokTest, TrainingRejectsBadOptions) {
  TempDir d;
  SpmTrainOptions o;
  o.vocab_size = 200;  // smaller than the 3 specials + 256 byte pieces + the corpus' characters
  EXPECT_THROW(train_sentencepiece(corpus(), d / "m", o), UsageError);
  o.vocab_size = 1000000;  // more pieces than the text can make
  EXPECT_THROW(train_sentencepiece({"just a few words"}, d / "m", o), UsageError);
  EXPECT_THROW(train_sentencepiece({"", "\n\n"}, d / "m", SpmTrainOptions{}), UsageError);
  EXPECT_THROW(train_sentencepiece_file(d / "missing.txt", d / "m"), DataError);
  EXPECT_FALSE(fs::exists(d / "m" / "tokenizer.model"));
  EXPECT_EQ(parse_spm_model_type("unigram"), SpmModelType::kUnigram);
  EXPECT_THROW(parse_spm_model_type("wordpiece"), UsageError);
}

// ---- encode / decode -------------------------------------------------------------------------------------------

TEST_F(TokTest, RoundTripsEveryString) {
  for (const auto& s : probe_strings()) {
    const auto ids = tok_->encode(s, false, false);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok_->vocab_size());
    EXPECT_EQ(tok_->decode(ids), s) << s;
  }
  // Identity normalization: no NFKC folding of compatibility characters, full-width forms kept.
  EXPECT_EQ(tok_->decode(tok_->encode("ﬁ ① Ｆｕｌｌ")), "ﬁ ① Ｆｕｌｌ");
}

TEST_F(TokTest, UnseenCharactersFallBackToBytes) {
  const std::string math = "𝔘";  // U+1D518, 4 bytes, never in the corpus
  ASSERT_EQ(tok_->piece_to_id(math), -1);
  const auto ids = tok_->encode(math, false, false);
  std::vector<int> bytes;
  for (int32_t id : ids)
    if (tok_->byte_value(id) >= 0) bytes.push_back(tok_->byte_value(id));
  EXPECT_EQ(bytes, (std::vector<int>{0xF0, 0x9D, 0x94, 0x98}));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok_->unk_id()), 0);
  EXPECT_EQ(tok_->decode(ids), math);
  // A character the corpus uses often has a piece of its own and takes no byte tokens.
  EXPECT_GE(tok_->piece_to_id("é"), 259);
  for (int32_t id : tok_->encode("café", false, false)) EXPECT_EQ(tok_->byte_value(id), -1);
}

TEST_F(TokTest, InvalidUtf8NeverThrows) {
  const std::string bad = std::string("ok \xFF\xFE then \xC3") + "(" + std::string("\xE2\x82") + " end";
  const auto ids = tok_->encode(bad);
  const std::string back = tok_->decode(ids);
  EXPECT_TRUE(valid_utf8(back));
  EXPECT_NE(back.find("ok "), std::string::npos);
  EXPECT_NE(back.find(" end"), std::string::npos);
  // Stray byte tokens decode to U+FFFD, one per byte that starts no character.
  EXPECT_EQ(tok_->decode(std::vector<int32_t>{3 + 0xE2, 3 + 0x82}), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_F(TokTest, BosEosAndSpecialTokens) {
  const auto plain = tok_->encode("Wireless earbuds", false, false);
  const auto both = tok_->encode("Wireless earbuds", true, true);
  ASSERT_EQ(both.size(), plain.size() + 2);
  EXPECT_EQ(both.front(), 1);
  EXPECT_EQ(both.back(), 2);
  EXPECT_EQ(std::vector<int32_t>(both.begin() + 1, both.end() - 1), plain);
  EXPECT_EQ(tok_->encode("Wireless earbuds"), tok_->encode("Wireless earbuds", true, false));  // LLaMA defaults
  EXPECT_EQ(tok_->decode(both), "Wireless earbuds");
  EXPECT_EQ(tok_->decode(both, false), "<s> Wireless earbuds</s>");
  std::vector<int32_t> with_unk = plain;
  with_unk.insert(with_unk.begin() + 1, 0);
  EXPECT_EQ(tok_->decode(with_unk).find("<unk>"), std::string::npos);
  EXPECT_NE(tok_->decode(with_unk, false).find("<unk>"), std::string::npos);
  // Special tokens written in the text are plain text to sentencepiece.
  const auto literal = tok_->encode("<s>", false, false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), 1), 0);
  EXPECT_THROW(tok_->decode(std::vector<int32_t>{5, 1200}), UsageError);
  EXPECT_THROW(tok_->decode(std::vector<int32_t>{-1}), UsageError);
  EXPECT_THROW(tok_->piece(-3), UsageError);
  EXPECT_TRUE(tok_->decode(std::vector<int32_t>{}).empty());
  EXPECT_EQ(tok_->encode("", true, true), (std::vector<int32_t>{1, 2}));
}

TEST_F(TokTest, ConfigFilesSetDefaultsAndPad) {
  TempDir d;
  fs::copy_file(model_file_, d / "tokenizer.model");
  test::write_text(d / "tokenizer_config.json",
                   R"({"add_bos_token": false, "add_eos_token": true, "pad_token": {"content": "<unk>", "lstrip": false},
                       "bos_token": "<s>", "eos_token": null})");
  auto t = load_tokenizer(d.path());
  EXPECT_FALSE(t->special().add_bos);
  EXPECT_TRUE(t->special().add_eos);
  EXPECT_EQ(t->pad_id(), 0);
  const auto ids = t->encode("hello");
  EXPECT_NE(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  // special_tokens_map.json fills what tokenizer_config.json leaves out; options override both.
  test::write_text(d / "tokenizer_config.json", R"({"add_bos_token": true})");
  test::write_text(d / "special_tokens_map.json", R"({"pad_token": "</s>", "unk_token": {"content": "<unk>"}})");
  EXPECT_EQ(load_tokenizer(d.path())->pad_id(), 2);
  LoadOptions lo;
  lo.pad_id = 0;
  lo.add_bos = false;
  auto o = load_tokenizer(d.path(), lo);
  EXPECT_EQ(o->pad_id(), 0);
  EXPECT_EQ(o->encode("hello"), o->encode("hello", false, false));
  lo.pad_id = 5000;
  EXPECT_THROW(load_tokenizer(d.path(), lo), UsageError);
  // Loading the file itself works too.
  EXPECT_EQ(load_tokenizer(d / "tokenizer.model")->vocab_size(), 1200);
}

// ---- truncation (docs/decisions.md §5.2 step 3) -----------------------------------------------------------------

TEST_F(TokTest, TruncationCountsBosAndKeepsAPrefix) {
  std::string memory;
  for (const auto& t : corpus()) {
    memory += t + "|";
    if (memory.size() > 20000) break;
  }
  const auto full = tok_->encode(memory, true, false);
  ASSERT_GT(full.size(), 768u);
  const std::string cut = truncate_to_tokens(*tok_, memory, 768);
  // 767 content tokens after BOS, decoded: exactly the decoded first 767 content tokens, a prefix of the text.
  EXPECT_EQ(cut, tok_->decode(std::vector<int32_t>(full.begin(), full.begin() + 768)));
  EXPECT_EQ(memory.substr(0, cut.size()), cut);
  EXPECT_LE(tok_->encode(cut, true, false).size(), 768u);
  // Without counting BOS, one more content token survives.
  const std::string cut_nobos = truncate_to_tokens(*tok_, memory, 768, false);
  EXPECT_GT(cut_nobos.size(), cut.size());
  EXPECT_EQ(memory.substr(0, cut_nobos.size()), cut_nobos);
  // Short text comes back unchanged; one token with BOS leaves nothing.
  EXPECT_EQ(truncate_to_tokens(*tok_, "short memory", 768), "short memory");
  EXPECT_EQ(truncate_to_tokens(*tok_, "short memory", 1), "");
  EXPECT_THROW(truncate_to_tokens(*tok_, "x", 0), UsageError);
}

TEST_F(TokTest, TruncationNeverSplitsACharacter) {
  // Characters spelled as byte tokens (4 bytes each): every cut point must give whole characters.
  const std::string text = "ab 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝔚𝔬𝔯𝔩𝔡";
  const auto ids = tok_->encode(text, true, false);
  std::size_t prev = 0;
  for (std::size_t max = 1; max <= ids.size() + 1; ++max) {
    const std::string cut = truncate_to_tokens(*tok_, text, max);
    EXPECT_TRUE(valid_utf8(cut)) << max;
    EXPECT_EQ(cut.find("\xEF\xBF\xBD"), std::string::npos) << max;
    EXPECT_EQ(text.substr(0, cut.size()), cut) << max;
    EXPECT_GE(cut.size(), prev);
    prev = cut.size();
  }
  EXPECT_EQ(prev, text.size());
}

// ---- threads ---------------------------------------------------------------------------------------------------

TEST_F(TokTest, EncodeAndDecodeFromManyThreads) {
  const auto strings = probe_strings();
  std::vector<std::vector<int32_t>> expected;
  for (const auto& s : strings) expected.push_back(tok_->encode(s));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (std::size_t i = t; i < strings.size(); i += 1) {
          if (tok_->encode(strings[i]) != expected[i]) ++mismatches;
          if (tok_->decode(expected[i]) != strings[i]) ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// ---- tokenizer.json ---------------------------------------------------------------------------------------------

TEST_F(TokTest, TokenizerJsonMatchesSentencepiece) {
  TempDir d;
  fs::copy_file(model_file_, d / "tokenizer.model");
  write_hf_tokenizer_json(model_file_, d / "tokenizer.json");
  LoadOptions lo;
  lo.format = TokenizerFormat::kHfJson;
  auto hf = load_tokenizer(d.path(), lo);
  EXPECT_EQ(hf->backend(), "tokenizer.json");
  EXPECT_EQ(hf->vocab_size(), tok_->vocab_size());
  EXPECT_EQ(hf->bos_id(), 1);
  EXPECT_EQ(hf->eos_id(), 2);
  EXPECT_EQ(hf->unk_id(), 0);
  EXPECT_EQ(hf->pad_id(), 2);
  int n = 0;
  for (const auto& s : probe_strings()) {
    if (s.find("<s>") != std::string::npos || s.find("</s>") != std::string::npos) continue;  // see below
    const auto ids = tok_->encode(s, true, false);
    ASSERT_EQ(hf->encode(s, true, false), ids) << "'" << s << "'";
    ASSERT_EQ(hf->decode(ids), tok_->decode(ids)) << s;
    ASSERT_EQ(hf->decode(ids, false), tok_->decode(ids, false)) << s;
    ++n;
  }
  EXPECT_GT(n, 500);
  for (int32_t id = 0; id < hf->vocab_size(); ++id) {
    ASSERT_EQ(hf->piece(id), tok_->piece(id));
    ASSERT_EQ(hf->byte_value(id), tok_->byte_value(id));
    ASSERT_EQ(hf->is_special(id), tok_->is_special(id));
  }
  // Hugging Face matches added tokens in the raw text (sentencepiece does not): "<s>" becomes BOS.
  const auto ids = hf->encode("a<s>b", false, false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1);
  EXPECT_EQ(hf->decode(ids), "a b");  // each section gets its own "▁" prefix, as in transformers' legacy LLaMA
  // The sentencepiece file wins in auto mode.
  EXPECT_EQ(load_tokenizer(d.path())->backend(), "sentencepiece");
}

TEST_F(TokTest, TokenizerJsonVariants) {
  TempDir d;
  write_hf_tokenizer_json(model_file_, d / "base.json");
  const std::string base = test::read_text(d / "base.json");
  auto variant = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    const auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    s.replace(pos, from.size(), to);
    test::write_text(d / "tokenizer.json", s);
    return load_tokenizer(d / "tokenizer.json");
  };
  // Newer transformers: no normalizer, a Metaspace pre-tokenizer (prepend "first", no split) and decoder.
  auto meta = variant(R"("normalizer": {)", R"("normalizer": null, "unused": {)");
  std::string s2 = test::read_text(d / "tokenizer.json");
  s2.replace(s2.find(R"("pre_tokenizer": null)"), 21,
             R"("pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false})");
  const auto dec = s2.find(R"("decoder": {)");
  s2.replace(dec, 12, R"("decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}, "unused2": {)");
  test::write_text(d / "tokenizer.json", s2);
  meta = load_tokenizer(d / "tokenizer.json");
  for (const std::string s : {"Hello world", "Le café était très bon", "a  b\nc"}) {
    EXPECT_EQ(meta->encode(s), tok_->encode(s)) << s;
    EXPECT_EQ(meta->decode(meta->encode(s)), s);
  }
  // Metaspace differs from sentencepiece on leading spaces: it does not add "▁" before text starting with one.
  EXPECT_EQ(meta->encode(" x", false, false), tok_->encode("x", false, false));
  // Merges as ["a", "b"] pairs (tokenizers >= 0.20).
  std::string pairs = base;
  const auto m = pairs.find(R"("merges": [)");
  ASSERT_NE(m, std::string::npos);
  std::string head = pairs.substr(0, m), tail = pairs.substr(m);
  std::string out;
  for (std::size_t i = 0; i < tail.size(); ++i) {
    // Each merge line is `      "a b"` (pieces never hold a plain space).
    if (tail[i] == '"' && i > 0 && tail[i - 1] == ' ' && tail.compare(i, 9, "\"merges\":") != 0) {
      const auto end = tail.find('"', i + 1);
      const std::string mm = tail.substr(i + 1, end - i - 1);
      const auto sp = mm.find(' ');
      out += "[\"" + mm.substr(0, sp) + "\", \"" + mm.substr(sp + 1) + "\"]";
      i = end;
    } else {
      out += tail[i];
    }
  }
  test::write_text(d / "tokenizer.json", head + out);
  auto arr = load_tokenizer(d / "tokenizer.json");
  for (const auto& s : probe_strings()) {
    if (s.find("<s>") != std::string::npos || s.find("</s>") != std::string::npos) continue;
    ASSERT_EQ(arr->encode(s), tok_->encode(s)) << s;
  }
}

TEST_F(TokTest, RealReviewTextWhenAvailable) {
  const fs::path reviews = test::shared("realdata/ucsd_multiagent_human_worker/reviews.jsonl");
  if (!fs::exists(reviews)) GTEST_SKIP() << "no " << reviews.string();
  // One line per review (the JSON lines themselves: real text with escapes, unicode, prices and punctuation).
  std::vector<std::string> lines;
  std::ifstream in(reviews);
  for (std::string line; std::getline(in, line) && lines.size() < 1500;) lines.push_back(line);
  TempDir d;
  SpmTrainOptions o;
  o.vocab_size = 2000;
  auto t = load_tokenizer(train_sentencepiece(lines, d / "real", o));
  write_hf_tokenizer_json(d / "real" / "tokenizer.model", d / "real" / "tokenizer.json");
  LoadOptions lo;
  lo.format = TokenizerFormat::kHfJson;
  auto hf = load_tokenizer(d / "real", lo);
  for (const auto& l : lines) {
    const auto ids = t->encode(l);
    ASSERT_EQ(t->decode(ids), l);
    if (l.find("<s>") == std::string::npos && l.find("</s>") == std::string::npos) {
      ASSERT_EQ(hf->encode(l), ids) << l;
    }
  }
}

// ---- errors ----------------------------------------------------------------------------------------------------

template <typename E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(TokTest, ClearErrorsForBadDirectoriesAndFiles) {
  TempDir d;
  EXPECT_NE(error_of<DataError>([&] { load_tokenizer(d / "missing"); }).find("no such model directory"),
            std::string::npos);
  EXPECT_NE(error_of<DataError>([&] { load_tokenizer(d.path()); }).find("no tokenizer.model or tokenizer.json"),
            std::string::npos);
  LoadOptions lo;
  lo.format = TokenizerFormat::kHfJson;
  fs::copy_file(model_file_, d / "tokenizer.model");
  EXPECT_NE(error_of<DataError>([&] { load_tokenizer(d.path(), lo); }).find("no tokenizer.json"), std::string::npos);

  // Corrupt tokenizer.model files: the error names the file.
  const std::string good = test::read_text(model_file_);
  const std::vector<std::string> corrupt = {
      "", "this is not a model\n", good.substr(0, good.size() / 2), good.substr(0, 7), std::string(4096, '\xFF'),
      std::string("\x0a\x05hello", 7)};
  for (const auto& bytes : corrupt) {
    test::write_text(d / "tokenizer.model", bytes);
    const std::string e = error_of<DataError>([&] { load_tokenizer(d.path()); });
    EXPECT_NE(e.find((d / "tokenizer.model").string()), std::string::npos) << e;
  }
  fs::remove(d / "tokenizer.model");
  fs::create_directory(d / "tokenizer.model");
  EXPECT_NE(error_of<DataError>([&] { load_tokenizer(d.path()); }).find("tokenizer.model"), std::string::npos);
  fs::remove(d / "tokenizer.model");

  // Config problems name the config file.
  fs::copy_file(model_file_, d / "tokenizer.model");
  test::write_text(d / "tokenizer_config.json", "{ not json");
  EXPECT_NE(error_of<DataError>([&] { load_tokenizer(d.path()); }).find("tokenizer_config.json"), std::string::npos);
  test::write_text(d / "tokenizer_config.json", R"({"pad_token": "<pad>"})");
  const std::string pad = error_of<DataError>([&] { load_tokenizer(d.path()); });
  EXPECT_NE(pad.find("tokenizer_config.json"), std::string::npos) << pad;
  EXPECT_NE(pad.find("<pad>"), std::string::npos) << pad;
  test::write_text(d / "tokenizer_config.json", R"({"add_bos_token": "yes"})");
  EXPECT_THROW(load_tokenizer(d.path()), DataError);
  fs::remove(d / "tokenizer_config.json");

  // tokenizer.json problems.
  fs::remove(d / "tokenizer.model");
  auto json_error = [&](const std::string& text) {
    test::write_text(d / "tokenizer.json", text);
    return error_of<DataError>([&] { load_tokenizer(d.path()); });
  };
  EXPECT_NE(json_error("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(json_error("[]").find("no \"model\""), std::string::npos);
  EXPECT_NE(json_error(R"({"model": {"type": "WordPiece", "vocab": {}}})").find("WordPiece"), std::string::npos);
  EXPECT_NE(json_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
                           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false}})")
                .find("byte-level BPE"),
            std::string::npos);
  EXPECT_NE(json_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})")
                .find("not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(json_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 2}, "merges": []}})").find("dense"),
            std::string::npos);
  EXPECT_NE(json_error(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})").find("tokenizer.json"),
            std::string::npos);
  // Converting a unigram model to tokenizer.json is refused.
  SpmTrainOptions o;
  o.model_type = SpmModelType::kUnigram;
  o.vocab_size = 600;
  const fs::path uni = train_sentencepiece(small_corpus(), d / "uni", o);
  EXPECT_THROW(write_hf_tokenizer_json(uni, d / "uni.json"), UsageError);
  EXPECT_EQ(parse_tokenizer_format("tokenizer.json"), TokenizerFormat::kHfJson);
  EXPECT_THROW(parse_tokenizer_format("gguf"), UsageError);
}

}  // namespace
