// `pwab lm generate|score`: look inside any model pwab can load (a Hugging Face LLaMA directory, with or without a
// PEFT adapter): its continuations of prompts and the log-probability it gives a completion. The model runs in the
// libtorch plugin (models/torch_models.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"
#include "embed/minilm.h"
#include "models/torch_models.h"
#include "llm/chat.h"
#include "puma/model.h"
#include "serve/completions.h"

namespace pwab::cli {
namespace {

using nlohmann::json;

struct LmArgs {
  std::string model, adapter, prompt, prompts_file, completion, pairs_file;
  int max_new_tokens = 64, beams = 1, samples = 1, top_k = 50, batch = 4;
  std::optional<double> temperature;
  uint64_t seed = 0;
  bool stats = false;
};

// JSONL lines of objects, each with the given string fields.
std::vector<json> read_jsonl(const std::string& file, const std::vector<const char*>& fields) {
  std::vector<json> out;
  const std::string text = read_file(file);
  for_each_nonblank_line(text, [&](std::string_view line, std::size_t line_no) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw DataError(fmt::format("{}:{}: not a JSON object", file, line_no));
    for (const char* f : fields)
      if (!j.contains(f) || !j[f].is_string())
        throw DataError(fmt::format("{}:{}: no string field '{}'", file, line_no, f));
    out.push_back(std::move(j));
  });
  return out;
}

void run_generate(const LmArgs& a) {
  std::vector<std::string> prompts;
  if (!a.prompt.empty()) prompts.push_back(a.prompt);
  if (!a.prompts_file.empty())
    for (const json& j : read_jsonl(a.prompts_file, {"prompt"})) prompts.push_back(j["prompt"].get<std::string>());
  if (prompts.empty()) throw UsageError("give --prompt TEXT or --prompts FILE (JSONL with \"prompt\")");
  if (a.beams < 1 || a.samples < 1 || a.max_new_tokens < 1)
    throw UsageError("--beams, --samples and --max-new-tokens take integers ≥ 1");
  if (a.samples > 1 && a.beams > 1) throw UsageError("--samples N draws N independent samples; use it without --beams");
  puma::GenerateConfig g;
  g.max_new_tokens = a.max_new_tokens;
  g.sample = a.temperature.value_or(0.0) > 0;
  g.temperature = g.sample ? *a.temperature : 1.0;
  if (a.samples > 1 && !g.sample) throw UsageError("--samples needs --temperature > 0");
  g.top_k = a.top_k;
  g.num_beams = a.beams;
  g.seed = a.seed;
  g.batch_size = a.batch;
  std::vector<std::string> asked;  // each prompt `samples` times: independent draws
  for (const std::string& p : prompts)
    for (int i = 0; i < a.samples; ++i) asked.push_back(p);
  models::LmGenerateStats stats;
  auto out = models::torch_models().lm_generate(a.model, a.adapter, asked, g, &stats);
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    std::vector<std::string> texts;
    for (int i = 0; i < a.samples; ++i)
      for (const std::string& t : out[p * static_cast<std::size_t>(a.samples) + static_cast<std::size_t>(i)])
        texts.push_back(t);
    if (prompts.size() == 1 && texts.size() == 1 && a.prompts_file.empty()) {
      std::cout << texts[0] << "\n";
    } else {
      std::cout << json{{"prompt", prompts[p]}, {"completions", texts}}.dump() << "\n";
    }
  }
  if (a.stats) {
    // On stderr, so that stdout stays the continuations; generation seconds apart from loading the model.
    const double per_s = stats.generate_seconds > 0 ? static_cast<double>(stats.generated_tokens) / stats.generate_seconds : 0;
    std::cerr << json{{"prompts", asked.size()},
                      {"batch", a.batch},
                      {"prompt_tokens", stats.prompt_tokens},
                      {"generated_tokens", stats.generated_tokens},
                      {"load_seconds", stats.load_seconds},
                      {"generate_seconds", stats.generate_seconds},
                      {"generated_tokens_per_s", per_s}}
                     .dump()
              << std::endl;
  }
}

void run_score(const LmArgs& a) {
  std::vector<puma::TrainPair> pairs;
  if (!a.prompt.empty() || !a.completion.empty()) {
    if (a.prompt.empty() || a.completion.empty()) throw UsageError("--prompt and --completion go together");
    pairs.push_back({a.prompt, a.completion});
  }
  if (!a.pairs_file.empty())
    for (const json& j : read_jsonl(a.pairs_file, {"prompt", "completion"}))
      pairs.push_back({j["prompt"].get<std::string>(), j["completion"].get<std::string>()});
  if (pairs.empty()) throw UsageError("give --prompt TEXT --completion TEXT or --pairs FILE (JSONL)");
  auto scores = models::torch_models().lm_score(a.model, a.adapter, pairs);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto [logprob, tokens] = scores[i];
    std::cout << json{{"logprob", logprob},
                      {"tokens", tokens},
                      {"mean_logprob", logprob / static_cast<double>(std::max<int64_t>(1, tokens))},
                      {"perplexity", std::exp(-logprob / static_cast<double>(std::max<int64_t>(1, tokens)))}}
                     .dump()
              << "\n";
  }
}

// Texts from --prompt/--text (one) and a JSONL file of objects with `field`.
std::vector<std::string> gather_texts(const std::string& one, const std::string& file, const char* field) {
  std::vector<std::string> texts;
  if (!one.empty()) texts.push_back(one);
  if (!file.empty())
    for (const json& j : read_jsonl(file, {field})) texts.push_back(j[field].get<std::string>());
  return texts;
}

// `pwab lm logits`: the raw next-token logits, so that another implementation (transformers, docs/llama.md) can be
// compared with pwab's forward pass number by number. Floats go out through double, so they print exactly.
void run_logits(const LmArgs& a) {
  std::vector<std::string> texts = gather_texts(a.prompt, a.prompts_file, "prompt");
  if (texts.empty()) throw UsageError("give --prompt TEXT or --prompts FILE (JSONL with \"prompt\")");
  int64_t vocab = 0;
  auto out = models::torch_models().lm_logits(a.model, a.adapter, texts, &vocab);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto& [ids, logits] = out[i];
    json rows = json::array();
    for (std::size_t r = 0; r < ids.size(); ++r)
      rows.push_back(std::vector<float>(logits.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(vocab)),
                                        logits.begin() + static_cast<std::ptrdiff_t>((r + 1) * static_cast<std::size_t>(vocab))));
    std::cout << json{{"ids", ids}, {"vocab", vocab}, {"logits", std::move(rows)}}.dump() << "\n";
  }
}

struct TokenizeArgs {
  std::string model, text, texts_file;
  bool bare = false;
};

// `pwab lm tokenize`: the ids pwab's tokenizer gives (docs/tokenizer.md), for comparison with Hugging Face's.
void run_tokenize(const TokenizeArgs& a) {
  std::vector<std::string> texts = gather_texts(a.text, a.texts_file, "text");
  if (texts.empty()) throw UsageError("give --text TEXT or --texts FILE (JSONL with \"text\")");
  auto ids = models::torch_models().lm_tokenize(a.model, texts, !a.bare);
  for (const auto& row : ids) std::cout << json{{"ids", row}}.dump() << "\n";
}

struct EmbedArgs {
  std::string model, text, texts_file;
};

// `pwab lm embed`: the sentence embeddings that score reviews under `--embedder minilm:DIR` (docs/embeddings.md).
void run_embed(const EmbedArgs& a) {
  std::vector<std::string> texts = gather_texts(a.text, a.texts_file, "text");
  if (texts.empty()) throw UsageError("give --text TEXT or --texts FILE (JSONL with \"text\")");
  auto embedder = models::torch_models().load_minilm(a.model, embed::MiniLMOptions{});
  auto vectors = embedder->embed(texts);
  for (const auto& v : vectors) std::cout << json{{"embedder", embedder->name()}, {"embedding", v}}.dump() << "\n";
}

struct ServeLmArgs {
  LmArgs model;
  std::string name, host = "127.0.0.1", token;
  int port = 8000;
  int chat_max_tokens = 512;
};

std::atomic<bool> g_stop_lm{false};
extern "C" void on_lm_stop_signal(int) { g_stop_lm = true; }

// `pwab lm serve`: the model behind /v1/completions and /v1/chat/completions (serve/completions.h) until Ctrl-C or
// SIGTERM.
void run_serve(const ServeLmArgs& a) {
  const std::string name =
      !a.name.empty() ? a.name : std::filesystem::path(a.model.model).lexically_normal().filename().string();
  models::LocalChatModel local = models::torch_models().open_local_chat_model(a.model.model, a.model.adapter, name);
  serve::CompletionsOptions o;
  o.host = a.host;
  o.port = a.port;
  if (a.chat_max_tokens < 1 || a.chat_max_tokens > o.max_tokens_limit)
    throw UsageError(fmt::format("--chat-max-tokens takes 1 to {}", o.max_tokens_limit));
  o.chat_max_tokens = a.chat_max_tokens;
  o.access.token = !a.token.empty() ? a.token : (std::getenv("PWAB_SERVE_TOKEN") ? std::getenv("PWAB_SERVE_TOKEN") : "");
  serve::CompletionsServer server(*local.model, name, o);
  g_stop_lm = false;
  auto previous_int = std::signal(SIGINT, on_lm_stop_signal);
  auto previous_term = std::signal(SIGTERM, on_lm_stop_signal);
  server.start();
  std::cout << server.url() << std::endl;  // alone on the first line, as `pwab serve` prints it
  std::cerr << fmt::format("pwab: serving {} as '{}' at {}/v1 (completions, chat/completions); Ctrl-C stops\n",
                           local.description, name, server.url());
  while (!g_stop_lm) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
}

void add_model_options(CLI::App& cmd, LmArgs& a) {
  add_shared_option(cmd, "--model", a.model, "llama")->required();
  cmd.add_option("--adapter", a.adapter, "PEFT LoRA adapter directory loaded on top of --model");
}

}  // namespace

void add_lm_commands(CLI::App& app) {
  auto* lm = app.add_subcommand("lm", "Inspect or serve a model: generate, score, logits, tokenize, embed (MiniLM), serve "
                                      "/v1/completions");
  lm->require_subcommand(1);
  auto ga = std::make_shared<LmArgs>();
  auto* gen = lm->add_subcommand("generate", "Continuations of prompts (greedy by default), one per line or JSONL");
  add_model_options(*gen, *ga);
  add_shared_option(*gen, "--prompt", ga->prompt);
  add_shared_option(*gen, "--prompts", ga->prompts_file);
  add_shared_option(*gen, "--max-new-tokens", ga->max_new_tokens, "generate")->capture_default_str();
  add_shared_option(*gen, "--temperature", ga->temperature, "sampling");
  add_shared_option(*gen, "--top-k", ga->top_k, "sampling")->capture_default_str();
  gen->add_option("--beams", ga->beams, "Beam search with B beams: B candidates, best first (with --temperature: "
                                        "beam-sample, as PUMA's DPO sampling)")->capture_default_str();
  add_shared_option(*gen, "--samples", ga->samples, "generate")->capture_default_str();
  add_shared_option(*gen, "--seed", ga->seed, "sampling")->capture_default_str();
  gen->add_option("--batch", ga->batch, "Prompts per forward batch")->capture_default_str();
  gen->add_flag("--stats", ga->stats, "Print on stderr one JSON line: token counts, seconds loading the model and "
                                      "generating, generated tokens/s");
  gen->callback([ga] { run_generate(*ga); });

  auto sa = std::make_shared<LmArgs>();
  auto* score = lm->add_subcommand("score", "The log-probability of a completion after a prompt (EOS included): "
                                            "JSON {logprob, tokens, mean_logprob, perplexity} per pair");
  add_model_options(*score, *sa);
  add_shared_option(*score, "--prompt", sa->prompt);
  score->add_option("--completion", sa->completion, "The completion whose probability is wanted");
  score->add_option("--pairs", sa->pairs_file, "JSONL file of {\"prompt\", \"completion\"}: one line each");
  score->callback([sa] { run_score(*sa); });

  auto la = std::make_shared<LmArgs>();
  auto* lg = lm->add_subcommand("logits", "The next-token logits at every position of a prompt (BOS added): JSON "
                                          "{ids, vocab, logits: [[float × vocab] × ids]} per prompt");
  add_model_options(*lg, *la);
  add_shared_option(*lg, "--prompt", la->prompt);
  add_shared_option(*lg, "--prompts", la->prompts_file);
  lg->callback([la] { run_logits(*la); });

  auto ta = std::make_shared<TokenizeArgs>();
  auto* tk = lm->add_subcommand("tokenize", "Token ids of texts under a model directory's tokenizer (tokenizer.model "
                                            "or tokenizer.json): JSON {ids} per text");
  add_shared_option(*tk, "--model", ta->model, "tokenizer")->required();
  add_shared_option(*tk, "--text", ta->text);
  add_shared_option(*tk, "--texts", ta->texts_file);
  tk->add_flag("--bare", ta->bare, "No BOS/EOS (default: the directory's add_bos_token/add_eos_token)");
  tk->callback([ta] { run_tokenize(*ta); });

  auto ea = std::make_shared<EmbedArgs>();
  auto* em = lm->add_subcommand("embed", "Sentence embeddings of texts with a MiniLM/BERT directory (what "
                                         "--embedder minilm:DIR scores reviews with): JSON {embedder, embedding}");
  add_shared_option(*em, "--model", ea->model, "bert")
      ->required();
  add_shared_option(*em, "--text", ea->text);
  add_shared_option(*em, "--texts", ea->texts_file);
  em->callback([ea] { run_embed(*ea); });

  auto va = std::make_shared<ServeLmArgs>();
  auto* srv = lm->add_subcommand("serve", "Serve the model over OpenAI's /v1/completions and /v1/chat/completions "
                                          "(ChatML with Hermes <tool_call> tool calls; logprobs and vLLM's "
                                          "return_token_ids), for the puma agent of another process, the openai "
                                          "client, Inspect AI or an RL engine checking its token ids");
  add_model_options(*srv, va->model);
  srv->add_option("--name", va->name, "The model id clients ask for (default: the model directory's name)");
  add_shared_option(*srv, "--host", va->host)->capture_default_str();
  add_shared_option(*srv, "--port", va->port)
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  srv->add_option("--chat-max-tokens", va->chat_max_tokens,
                  "max_tokens of a chat request that gives none")->capture_default_str();
  add_shared_option(*srv, "--token", va->token);
  srv->callback([va] { run_serve(*va); });
}

}  // namespace pwab::cli
