// The sentencepiece backend: tokenizer.model through the vendored sentencepiece (cmake/Dependencies.cmake).
#include <fmt/format.h>
#include <sentencepiece_model.pb.h>
#include <sentencepiece_processor.h>

#include "core/error.h"
#include "core/hash.h"
#include "tok/backends.h"

// sentencepiece's own log threshold (src/common.h of its source, not installed as a public header): loading a
// model with identity normalization logs an INFO line on stderr, which would end up in every `pwab run`.
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
}  // namespace sentencepiece::logging

namespace pwab::tok {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::filesystem::path& file, const std::string& bytes) {
    sentencepiece::logging::SetMinLogLevel(1);  // warnings and errors only
    const auto status = sp_.LoadFromSerializedProto(bytes);
    if (!status.ok())
      throw DataError(fmt::format("{}: not a valid sentencepiece model ({})", file.string(), status.ToString()));
    n_pieces_ = sp_.GetPieceSize();
    if (n_pieces_ <= 0) throw DataError(fmt::format("{}: sentencepiece model with no pieces", file.string()));
    auto& s = TokenizerAccess::special(*this);
    s.bos = sp_.bos_id();
    s.eos = sp_.eos_id();
    s.unk = sp_.unk_id();
    s.pad = sp_.pad_id();
    for (int32_t id = 0; id < n_pieces_; ++id) byte_fallback_ = byte_fallback_ || sp_.IsByte(id);
    const auto type = sp_.model_proto().trainer_spec().model_type();
    model_type_ = type == sentencepiece::TrainerSpec::BPE       ? "bpe"
                  : type == sentencepiece::TrainerSpec::UNIGRAM ? "unigram"
                  : type == sentencepiece::TrainerSpec::WORD    ? "word"
                                                                : "char";
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool add_eos) const override {
    std::vector<int> ids;
    const auto status = sp_.Encode(absl::string_view(text.data(), text.size()), &ids);
    // Encoding a loaded model does not fail on any input; a failure would be a bug in the model or library.
    if (!status.ok()) throw Error(fmt::format("sentencepiece encode failed: {}", status.ToString()));
    std::vector<int32_t> out;
    out.reserve(ids.size() + 2);
    if (add_bos && special_.bos >= 0) out.push_back(special_.bos);
    out.insert(out.end(), ids.begin(), ids.end());
    if (add_eos && special_.eos >= 0) out.push_back(special_.eos);
    return out;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    for (int32_t id : ids) check_id(id);
    std::string out;
    // Runs of ordinary ids go to sentencepiece, which joins pieces, turns "▁" into spaces, assembles byte tokens
    // into characters and drops the first leading space. Special ids are dropped or written as their piece text;
    // a run after a written special keeps its leading space (sentencepiece would strip it as if it began the text).
    std::vector<int> run;
    auto flush = [&] {
      if (run.empty()) return;
      std::string text;
      const auto status = sp_.Decode(run, &text);
      if (!status.ok()) throw Error(fmt::format("sentencepiece decode failed: {}", status.ToString()));
      if (!out.empty() && sp_.IdToPiece(run.front()).starts_with("\xE2\x96\x81")) out += ' ';
      out += text;
      run.clear();
    };
    for (int32_t id : ids) {
      if (!is_special(id)) {
        run.push_back(id);
      } else if (!skip_special) {
        flush();
        out += sp_.IdToPiece(id);
      }
    }
    flush();
    return out;
  }

  int32_t vocab_size() const override { return n_pieces_; }
  std::string piece(int32_t id) const override {
    check_id(id);
    return sp_.IdToPiece(id);
  }
  int32_t piece_to_id(std::string_view piece) const override {
    const int id = sp_.PieceToId(absl::string_view(piece.data(), piece.size()));
    // sentencepiece answers unk_id for unknown pieces; only the unknown piece itself maps there.
    if (id == sp_.unk_id() && sp_.IdToPiece(id) != piece) return -1;
    return id;
  }
  bool is_special(int32_t id) const override { return sp_.IsControl(id) || sp_.IsUnknown(id); }
  int byte_value(int32_t id) const override {
    check_id(id);
    return sp_.IsByte(id) ? parse_byte_piece(sp_.IdToPiece(id)) : -1;
  }
  std::string_view backend() const override { return "sentencepiece"; }
  std::string description() const override {
    return fmt::format("sentencepiece {}, {} pieces{}, bos {} eos {} pad {}, {} {}", model_type_, n_pieces_,
                       byte_fallback_ ? ", byte fallback" : "", special_.bos, special_.eos, special_.pad,
                       source_.filename().string(), fingerprint_);
  }

 private:
  void check_id(int32_t id) const {
    if (id < 0 || id >= n_pieces_)
      throw UsageError(fmt::format("token id {} is outside the vocabulary [0, {})", id, n_pieces_));
  }

  sentencepiece::SentencePieceProcessor sp_;
  int32_t n_pieces_ = 0;
  bool byte_fallback_ = false;
  std::string model_type_;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& file) {
  const std::string bytes = read_file_bytes(file);
  if (bytes.empty()) throw DataError(fmt::format("{}: empty file, not a sentencepiece model", file.string()));
  auto tok = std::make_unique<SentencePieceTokenizer>(file, bytes);
  TokenizerAccess::set_source(*tok, file, to_hex(hash_bytes(bytes)));
  return tok;
}

}  // namespace pwab::tok
