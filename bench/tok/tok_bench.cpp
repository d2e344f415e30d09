// Tokenizer benchmarks: encode throughput on a realistic PUMA memory text (100 history items rendered as the
// original's memory and joined by "|"), with the sentencepiece backend and the tokenizer.json BPE backend (each
// checks the other: their ids must agree), and the original's 768-token memory cap (docs/decisions.md §5.2 step 3).
#include <fmt/format.h>

#include <memory>

#include "bench.h"
#include "core/sys.h"
#include "data/synth.h"
#include "tok/tokenizer.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;

namespace {

constexpr int kVocab = 8000;
constexpr int kRepeats = 20;  // encodes of the memory text per run
constexpr int kCaps = 200;    // truncate_to_tokens calls per run

const data::Dataset& mini() {
  static const data::Dataset ds = data::synthesize(data::SynthOptions{});
  return ds;
}

//! The tiny preset's vocabulary: BPE with byte fallback trained on the mini dataset's text, cached.
fs::path model_dir(const Context& ctx) {
  return ctx.out_dir / "tok" / fmt::format("spm-bpe-{}-gen{}", kVocab, data::kSynthVersion);
}

void ensure_model(const Context& ctx) {
  const fs::path dir = model_dir(ctx);
  if (fs::exists(dir / "tokenizer.model") && fs::exists(dir / "tokenizer.json")) return;
  std::vector<std::string> texts;
  for (const auto& p : mini().products()) {
    texts.push_back(p.title);
    for (const auto& f : p.features) texts.push_back(f);
    for (const auto& d : p.description) texts.push_back(d);
  }
  for (const auto& u : mini().users())
    for (const auto& b : u.behaviours) texts.push_back(b.review.title + "\n" + b.review.text);
  tok::SpmTrainOptions o;
  o.vocab_size = kVocab;
  std::fprintf(stderr, "[bench] training a %d-piece sentencepiece BPE on the mini dataset's text\n", kVocab);
  tok::train_sentencepiece(texts, dir, o);
  tok::write_hf_tokenizer_json(dir / "tokenizer.model", dir / "tokenizer.json");
}

//! A memory text like PUMA's: the history items of the users with the longest histories, rendered with the
//! original's pretty_history layout and joined by "|", until 100 items.
std::string memory_text() {
  std::string m;
  int n = 0;
  for (const auto& u : mini().users()) {
    for (const auto& b : u.behaviours) {
      const auto& p = mini().product(b.product);
      std::string features;
      for (const auto& f : p.features) features += (features.empty() ? "" : " ") + f;
      m += fmt::format("{}\nMEMORY {}:\nProduct:\n- Title: {}\n- Features: {}\nReview:\n- Rating: {}\n- Text: {}\n",
                       n ? "|" : "", n + 1, p.title, features, b.review.rating.str(), b.review.text);
      if (++n == 100) return m;
    }
  }
  return m;
}

struct State {
  std::unique_ptr<tok::Tokenizer> spm, hf;
  std::string text;
  std::vector<int32_t> spm_ids, hf_ids;
  std::string cap;
};
State state;

void setup(const Context& ctx) {
  ensure_model(ctx);
  if (!state.spm) {
    state.spm = tok::load_tokenizer(model_dir(ctx));
    tok::LoadOptions o;
    o.format = tok::TokenizerFormat::kHfJson;
    state.hf = tok::load_tokenizer(model_dir(ctx), o);
    state.text = memory_text();
  }
}

Benchmark encode_benchmark(const std::string& name, bool json) {
  return {
      "tok/encode_" + name,
      fmt::format("encode a {}-item memory text {} times with the {} backend ({}-piece BPE, byte fallback), one "
                  "thread; extras: tokens/s, MB/s",
                  100, kRepeats, json ? "tokenizer.json" : "sentencepiece", kVocab),
      5,
      setup,
      [json](const Context&, std::vector<Extra>& extras) {
        const tok::Tokenizer& t = json ? *state.hf : *state.spm;
        auto& ids = json ? state.hf_ids : state.spm_ids;
        Stopwatch clock;
        for (int i = 0; i < kRepeats; ++i) ids = t.encode(state.text);
        const double s = clock.seconds();
        extras.push_back({"tokens/s", ids.size() * kRepeats / s, ""});
        extras.push_back({"MB/s", state.text.size() * kRepeats / s / 1e6, ""});
        extras.push_back({"text", static_cast<double>(state.text.size()), "bytes"});
        extras.push_back({"tokens", static_cast<double>(ids.size()), ""});
        return s;
      },
      [json](const Context&) -> std::string {
        const auto& ids = json ? state.hf_ids : state.spm_ids;
        if (state.spm->decode(ids) != state.text) return "decode(encode(text)) != text";
        if (state.spm->encode(state.text) != state.hf->encode(state.text))
          return "the sentencepiece and tokenizer.json backends disagree";
        return "";
      },
  };
}

const int kEncodeSpm = add(encode_benchmark("sentencepiece", false));
const int kEncodeJson = add(encode_benchmark("tokenizer_json", true));

const int kCap = add({
    "tok/memory_cap_768",
    fmt::format("truncate_to_tokens(memory, 768) {} times (encode with BOS, keep 768, decode; sentencepiece); "
                "extra: per call",
                kCaps),
    5,
    setup,
    [](const Context&, std::vector<Extra>& extras) {
      Stopwatch clock;
      for (int i = 0; i < kCaps; ++i) state.cap = tok::truncate_to_tokens(*state.spm, state.text, 768);
      const double s = clock.seconds();
      extras.push_back({"per call", s / kCaps * 1e3, "ms"});
      return s;
    },
    [](const Context&) -> std::string {
      if (state.text.compare(0, state.cap.size(), state.cap) != 0) return "the capped memory is not a prefix";
      const auto n = state.spm->encode(state.cap, true, false).size();
      return n <= 768 && n >= 760 ? "" : fmt::format("the capped memory re-encodes to {} tokens", n);
    },
});

}  // namespace
