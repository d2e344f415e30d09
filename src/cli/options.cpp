// src/cli/options.cpp: the table of shared flags (options.h).
#include "cli/options.h"

#include <stdexcept>

namespace pwab::cli {
namespace {

constexpr SharedFlag kFlags[] = {
    // The dataset and the services over it.
    {"--data", "", "Dataset directory"},
    {"--embedder", "",
     "Text embedder of review similarity and memory: fasttext (trained on DATA, cached), minilm:MODEL_DIR "
     "(all-MiniLM-L6-v2), hashing[:DIM], or openai:MODEL (pwab run only: on the agent's endpoint)"},
    {"--checkpoint", "",
     "SASRec checkpoint, pwab's or an original PersonalWAB .pth (default: DATA/.pwab-rec/sasrec.pwab)"},
    {"--index-dir", "", "Search index root (default: DATA/.pwab-index)"},
    {"--cache-dir", "", "Index root (default: DATA/.pwab-index)"},
    {"--top-k", "results", "Results per search or recommendation call"},
    {"--top-k", "sampling", "Sample from the k most likely tokens (0 = all)"},
    {"--k", "", "Results to print"},
    {"--k", "cutoff", "Cut-off of the hit rate and NDCG (HR@k, NDCG@k)"},
    {"--split", "", "Task split: test or train"},
    {"--users", "dataset", "Users in the dataset (build: sampled from the raw data; synth: default by scale)"},
    {"--users", "evaluated", "Users evaluated, a seeded sample (0: all)"},

    // Where a command writes.
    {"--out", "run", "Run directory (manifest.json, results.jsonl, summary.*)"},
    {"--out", "served", "Run directory: records of finished episodes in OUT/single and OUT/multi"},
    {"--out", "dataset", "Dataset directory to write (the original layout)"},
    {"--out", "pipeline", "PUMA pipeline directory (pwab puma train creates it; running again continues it)"},
    {"--out", "checkpoint", "Checkpoint file (default: DATA/.pwab-rec/sasrec.pwab)"},
    {"--out", "html", "The HTML file to write"},
    {"--out", "bundle", "The bundle folder to write (new or empty)"},
    {"--json", "print", "Print the result as JSON"},
    {"--json", "file", "Also write the rows and per-task scores as JSON here"},
    {"--format", "summary", "table, md, csv or json"},
    {"--format", "export", "trl | llamafactory | original"},
    {"--quiet", "", "No progress, status or summary lines on stderr (errors still show)"},
    {"--resume", "run", "Continue RUN_DIR: skip finished tasks, retry errored ones"},
    {"--resume", "checkpoint", "Continue from the checkpoint if it exists"},

    // Randomness and statistics.
    {"--seed", "run", "Seed of the run (user simulator, agents)"},
    {"--seed", "served", "Default seed of the scripted user (as `pwab run --seed`)"},
    {"--seed", "bytes", "Random seed (same inputs and seed, same bytes)"},
    {"--seed", "training", "Seed of initialisation, data order and sampling"},
    {"--seed", "sampling", "Sampling seed"},
    {"--seed", "bootstrap", "Bootstrap seed"},
    {"--seed", "candidates", "Seed of the candidate sets"},
    {"--bootstrap", "", "Bootstrap resamples of the intervals (0 = no intervals)"},
    {"--confidence", "", "Interval level"},
    {"--threads", "files", "Files parsed at once (0 = all cores)"},
    {"--threads", "torch", "libtorch threads (0 = all cores)"},
    {"--threads", "blocking",
     "Threads for requests that may wait (an LLM user simulator, a record to fsync); every other request runs on "
     "the I/O threads"},

    // Models.
    {"--model", "endpoint", "The agent's model, served by an OpenAI-compatible endpoint"},
    {"--model", "llama", "Hugging Face LLaMA directory (config.json, safetensors, tokenizer)"},
    {"--model", "tokenizer", "Directory (or file) with tokenizer.model or tokenizer.json"},
    {"--model", "bert", "Hugging Face BERT directory, e.g. all-MiniLM-L6-v2 (docs/embeddings.md)"},
    {"--model", "leaderboard", "The model behind the agent, as the leaderboard should name it"},
    {"--temperature", "agent", "The agent's sampling temperature (default 0.0, as the original)"},
    {"--temperature", "sampling", "Sample at this temperature (default: greedy)"},
    {"--samples", "generate", "Independent samples per prompt (with --temperature)"},
    {"--samples", "dpo", "DPO candidates per train task (default: the preset's)"},
    {"--max-new-tokens", "generate", "Tokens to generate at most"},
    {"--max-new-tokens", "puma", "Tokens generated per parameter (default: the preset's)"},
    {"--prompt", "", "The prompt text (raw: no chat template; BOS is added)"},
    {"--prompts", "", "JSONL file of {\"prompt\": ...}: one JSON line of output each"},
    {"--text", "", "The text"},
    {"--texts", "", "JSONL file of {\"text\": ...}: one JSON line each"},
    {"--sft-mode", "",
     "What SFT trains on: function | param | function_param (the original's --train_on; default function_param)"},
    {"--user-guard", "",
     "With the LLM user (--user-sim llm, or served user_sim llm episodes): ask again up to N times when the user's "
     "reply gives the target away (its ASIN, title words or true review), then say a neutral line; 0 = off "
     "(docs/simulator.md)"},

    // Servers.
    {"--host", "", "Address to listen on (loopback by default; any other address needs --token or PWAB_SERVE_TOKEN)"},
    {"--port", "", "Port (0 = any free port; the URL is printed on stdout)"},
    {"--token", "",
     "Bearer token every request must carry (default: the PWAB_SERVE_TOKEN environment variable, which `ps` does "
     "not show); required off loopback"},
};

}  // namespace

std::span<const SharedFlag> shared_flags() { return kFlags; }

std::string shared_help(std::string_view name, std::string_view meaning) {
  for (const SharedFlag& f : kFlags)
    if (f.name == name && f.meaning == meaning) return std::string(f.help);
  throw std::logic_error("cli/options.cpp has no shared flag " + std::string(name) +
                         (meaning.empty() ? std::string() : " (" + std::string(meaning) + ")"));
}

}  // namespace pwab::cli
