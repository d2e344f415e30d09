// Training a sentencepiece model (the tiny preset's vocabulary) and writing its tokenizer.json equivalent.
#include <fmt/format.h>
#include <sentencepiece_model.pb.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.h"
#include "core/sys.h"
#include "tok/backends.h"
#include "tok/tokenizer.h"

namespace fs = std::filesystem;

namespace pwab::tok {
namespace {

//! Feeds the lines of in-memory texts to the trainer (no temporary file).
class LineIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<std::string>& texts) : texts_(texts) { advance(); }
  bool done() const override { return text_ >= texts_.size(); }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }  // default: OK

 private:
  //! Moves to the next non-empty line (a trailing CR is dropped).
  void advance() {
    while (text_ < texts_.size()) {
      const std::string& t = texts_[text_];
      if (pos_ > t.size()) {
        ++text_, pos_ = 0;
        continue;
      }
      std::size_t end = t.find('\n', pos_);
      if (end == std::string::npos) end = t.size();
      line_.assign(t, pos_, end - pos_);
      pos_ = end + 1;
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      if (!line_.empty()) return;
    }
  }
  const std::vector<std::string>& texts_;
  std::size_t text_ = 0, pos_ = 0;
  std::string line_;
};

std::unordered_map<std::string, std::string> train_args(const SpmTrainOptions& o) {
  if (o.vocab_size < 4) throw UsageError(fmt::format("sentencepiece vocab_size {} is too small", o.vocab_size));
  if (o.num_threads < 1) throw UsageError("sentencepiece num_threads must be at least 1");
  if (!(o.character_coverage > 0 && o.character_coverage <= 1))
    throw UsageError(fmt::format("character_coverage {} must be in (0, 1]", o.character_coverage));
  return {
      {"model_type", std::string(to_string(o.model_type))},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"byte_fallback", o.byte_fallback ? "true" : "false"},
      {"character_coverage", fmt::format("{}", o.character_coverage)},
      {"split_digits", o.split_digits ? "true" : "false"},
      {"num_threads", std::to_string(o.num_threads)},
      {"input_sentence_size", std::to_string(o.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"max_sentence_length", "65536"},
      // LLaMA's layout and text handling: unk 0, bos 1, eos 2, no pad piece; no NFKC, whitespace kept as is,
      // a dummy "▁" before the text, pieces of only whitespace allowed.
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"allow_whitespace_only_pieces", "true"},
      // INFO is sentencepiece's progress chatter; warnings and errors still reach stderr.
      {"minloglevel", o.verbose ? "0" : "1"},
  };
}

fs::path train(const std::unordered_map<std::string, std::string>& args, sentencepiece::SentenceIterator* it,
               const fs::path& model_dir, const SpmTrainOptions& o) {
  sentencepiece::SetRandomGeneratorSeed(o.seed);
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, it, &proto);
  if (!status.ok()) throw UsageError(fmt::format("sentencepiece training failed: {}", status.ToString()));
  std::error_code ec;
  fs::create_directories(model_dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create directory ({})", model_dir.string(), ec.message()));
  const fs::path out = model_dir / "tokenizer.model";
  write_file_atomic(out, proto);
  return out;
}

}  // namespace

fs::path train_sentencepiece(const std::vector<std::string>& texts, const fs::path& model_dir,
                             const SpmTrainOptions& options) {
  auto args = train_args(options);
  LineIterator it(texts);
  if (it.done()) throw UsageError("sentencepiece training needs at least one non-empty line of text");
  return train(args, &it, model_dir, options);
}

fs::path train_sentencepiece_file(const fs::path& input_file, const fs::path& model_dir,
                                  const SpmTrainOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(input_file, ec))
    throw DataError(fmt::format("{}: no such training text file", input_file.string()));
  auto args = train_args(options);
  args["input"] = input_file.string();
  return train(args, nullptr, model_dir, options);
}

// ---- tokenizer.json ------------------------------------------------------------------------------------------

void write_hf_tokenizer_json(const fs::path& tokenizer_model, const fs::path& out_json) {
  const std::string bytes = read_file_bytes(tokenizer_model);
  sentencepiece::SentencePieceProcessor sp;
  if (const auto st = sp.LoadFromSerializedProto(bytes); !st.ok())
    throw DataError(fmt::format("{}: not a valid sentencepiece model ({})", tokenizer_model.string(), st.ToString()));
  const auto& proto = sp.model_proto();
  if (proto.trainer_spec().model_type() != sentencepiece::TrainerSpec::BPE)
    throw UsageError(fmt::format("{}: only a BPE sentencepiece model has a tokenizer.json BPE equivalent",
                                 tokenizer_model.string()));
  const auto& norm = proto.normalizer_spec();
  if (!norm.precompiled_charsmap().empty() || norm.remove_extra_whitespaces() || !norm.add_dummy_prefix() ||
      !norm.escape_whitespaces())
    throw UsageError(fmt::format("{}: the model normalizes text (rule '{}'); only identity-normalized models (as "
                                 "LLaMA's) convert to tokenizer.json exactly",
                                 tokenizer_model.string(), norm.name()));

  using nlohmann::ordered_json;
  const int n = sp.GetPieceSize();
  ordered_json vocab = ordered_json::object(), added = ordered_json::array();
  std::unordered_map<std::string, int> ids;
  for (int id = 0; id < n; ++id) {
    const std::string p = sp.IdToPiece(id);
    vocab[p] = id;
    ids.emplace(p, id);
    if (sp.IsControl(id) || sp.IsUnknown(id))
      added.push_back({{"id", id}, {"content", p}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}, {"special", true}});
  }
  // Merges, ordered as transformers' sentencepiece extractor orders them: pieces by score, highest first (ties in
  // id order); each piece's splits into two vocabulary pieces by (left id, right id). Only ordinary pieces take
  // part (control, unknown and byte pieces are never produced by merging).
  std::vector<int> order;
  for (int id = 0; id < n; ++id)
    if (!sp.IsControl(id) && !sp.IsUnknown(id) && !sp.IsByte(id) && !sp.IsUnused(id)) order.push_back(id);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sp.GetScore(a) > sp.GetScore(b); });
  ordered_json merges = ordered_json::array();
  for (int id : order) {
    const std::string p = sp.IdToPiece(id);
    std::vector<std::pair<int, int>> splits;
    for (std::size_t k = 1; k < p.size(); ++k) {
      if ((static_cast<unsigned char>(p[k]) & 0xC0) == 0x80) continue;  // split between characters only
      auto l = ids.find(p.substr(0, k)), r = ids.find(p.substr(k));
      if (l == ids.end() || r == ids.end()) continue;
      if (sp.IsByte(l->second) || sp.IsByte(r->second) || sp.IsControl(l->second) || sp.IsControl(r->second))
        continue;
      splits.emplace_back(l->second, r->second);
    }
    std::sort(splits.begin(), splits.end());
    for (const auto& [l, r] : splits) merges.push_back(sp.IdToPiece(l) + " " + sp.IdToPiece(r));
  }
  const std::string sm = "\xE2\x96\x81";
  const std::string bos = sp.bos_id() >= 0 ? sp.IdToPiece(sp.bos_id()) : "";
  ordered_json post = nullptr;
  if (!bos.empty()) {
    post = {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair",
             {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
              {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}},
              {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens", {{bos, {{"id", bos}, {"ids", {sp.bos_id()}}, {"tokens", {bos}}}}}}};
  }
  ordered_json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", sm}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", sm}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor", post},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", sm}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", sp.unk_id() >= 0 ? ordered_json(sp.IdToPiece(sp.unk_id())) : ordered_json(nullptr)},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", true},
        {"byte_fallback", proto.trainer_spec().byte_fallback()},
        {"vocab", vocab},
        {"merges", merges}}},
  };
  write_file_atomic(out_json, j.dump(2, ' ', false) + "\n");
}

}  // namespace pwab::tok
