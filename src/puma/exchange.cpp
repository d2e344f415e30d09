// PUMA's training data in TRL, LLaMA-Factory and the original's formats (exchange.h).
#include "puma/exchange.h"
#include "core/json_depth.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"

namespace pwab::puma {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

std::vector<PreferenceExample> read_pairs(const fs::path& file, std::vector<std::string>* instructions,
                                          const std::map<std::string, std::string>& instruction_of_task) {
  std::vector<PreferenceExample> out;
  if (!fs::exists(file)) return out;
  const std::string text = read_file(file);
  for_each_nonblank_line(text, [&](std::string_view line, std::size_t line_no) {
    json j = parse_json_or_discarded(line);
    if (j.is_discarded() || !j.is_object() || !j.contains("prompt") || !j.contains("chosen") || !j.contains("rejected"))
      throw DataError(file.string() + ":" + std::to_string(line_no) + ": not a preference pair record");
    out.push_back({j["prompt"].get<std::string>(), j["chosen"].get<std::string>(), j["rejected"].get<std::string>()});
    auto it = instruction_of_task.find(j.value("task", ""));
    instructions->push_back(it == instruction_of_task.end() ? "" : it->second);
  });
  return out;
}

void write_jsonl(const fs::path& file, const std::vector<json>& records) {
  std::string text;
  for (const json& r : records) text += r.dump() + "\n";
  write_file_atomic(file, text);
}

void write_json_file(const fs::path& file, const json& j) { write_file_atomic(file, j.dump(2) + "\n"); }

std::vector<json> read_records(const fs::path& file, bool jsonl) {
  if (!fs::exists(file)) throw DataError(file.string() + " does not exist");
  const std::string text = read_file(file);
  std::vector<json> out;
  if (jsonl) {
    for_each_nonblank_line(text, [&](std::string_view line, std::size_t line_no) {
      json j = parse_json_or_discarded(line);
      if (j.is_discarded() || !j.is_object())
        throw DataError(file.string() + ":" + std::to_string(line_no) + ": not a JSON object");
      out.push_back(std::move(j));
    });
    return out;
  }
  json j = parse_json_or_discarded(text);
  if (j.is_discarded() || !j.is_array()) throw DataError(file.string() + ": expected a JSON array of records");
  for (json& r : j) {
    if (!r.is_object()) throw DataError(file.string() + ": record " + std::to_string(out.size()) + " is not an object");
    out.push_back(std::move(r));
  }
  return out;
}

std::string field(const json& record, const char* name, const fs::path& file, std::size_t index) {
  auto it = record.find(name);
  if (it == record.end() || !it->is_string())
    throw DataError(file.string() + ": record " + std::to_string(index) + " has no string '" + name + "'");
  return it->get<std::string>();
}

// {"train": [...], "test": [...]} of the original's files.
json original_split(const fs::path& file, const char* split) {
  if (!fs::exists(file)) throw DataError(file.string() + " does not exist");
  json j = parse_json_or_discarded(read_file(file));
  if (j.is_discarded() || !j.is_object()) throw DataError(file.string() + ": expected {\"train\": [...], \"test\": [...]}");
  auto it = j.find(split);
  if (it == j.end()) return json::array();
  if (!it->is_array()) throw DataError(file.string() + ": '" + split + "' is not a list");
  return *it;
}

json alpaca(const std::string& prompt) { return {{"instruction", prompt}, {"input", ""}}; }

}  // namespace

std::string_view to_string(ExportFormat format) {
  switch (format) {
    case ExportFormat::kTrl: return "trl";
    case ExportFormat::kLlamaFactory: return "llamafactory";
    case ExportFormat::kOriginal: return "original";
  }
  return "?";
}

ExportFormat parse_export_format(std::string_view text) {
  if (text == "trl") return ExportFormat::kTrl;
  if (text == "llamafactory") return ExportFormat::kLlamaFactory;
  if (text == "original") return ExportFormat::kOriginal;
  throw UsageError("--format must be trl, llamafactory or original, not '" + std::string(text) + "'");
}

TrainingData read_training_data(const fs::path& dir) {
  const fs::path data = dir / "data";
  if (!fs::exists(data / ".done"))
    throw DataError(dir.string() + " has no prepared data (data/.done): run `pwab puma prepare` first");
  TrainingData d;
  d.function_train = read_examples(data / "function_train.jsonl");
  d.function_test = read_examples(data / "function_test.jsonl");
  d.param_train = read_examples(data / "param_train.jsonl");
  d.param_test = read_examples(data / "param_test.jsonl");
  std::map<std::string, std::string> instruction_of_task;
  for (const auto* set : {&d.param_train, &d.param_test})
    for (const Example& e : *set) instruction_of_task[e.task] = e.instruction;
  if (fs::exists(dir / "dpo" / "score" / ".done")) {
    d.dpo_train = read_pairs(dir / "dpo" / "score" / "pairs.jsonl", &d.dpo_train_instructions, instruction_of_task);
    d.dpo_test = read_pairs(dir / "dpo" / "score" / "pairs_test.jsonl", &d.dpo_test_instructions, instruction_of_task);
  }
  return d;
}

std::vector<TrainPair> sft_rows(const std::vector<Example>& functions, const std::vector<Example>& params,
                                SftMode mode) {
  std::vector<TrainPair> out;
  if (mode != SftMode::kParam)
    for (const Example& e : functions) out.push_back({e.prompt, e.target});
  if (mode != SftMode::kFunction)
    for (const Example& e : params) out.push_back({e.prompt, e.target});
  return out;
}

std::vector<fs::path> export_training_data(const TrainingData& d, ExportFormat format, SftMode mode,
                                           const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<fs::path> written;
  auto sft = [&](bool train) {
    return train ? sft_rows(d.function_train, d.param_train, mode) : sft_rows(d.function_test, d.param_test, mode);
  };
  switch (format) {
    case ExportFormat::kTrl: {
      for (bool train : {true, false}) {
        std::vector<json> rows;
        for (const TrainPair& p : sft(train)) rows.push_back({{"prompt", p.prompt}, {"completion", p.target}});
        written.push_back(dir / (train ? "sft_train.jsonl" : "sft_test.jsonl"));
        write_jsonl(written.back(), rows);
        std::vector<json> prefs;
        for (const PreferenceExample& p : train ? d.dpo_train : d.dpo_test)
          prefs.push_back({{"prompt", p.prompt}, {"chosen", p.chosen}, {"rejected", p.rejected}});
        written.push_back(dir / (train ? "dpo_train.jsonl" : "dpo_test.jsonl"));
        write_jsonl(written.back(), prefs);
      }
      break;
    }
    case ExportFormat::kLlamaFactory: {
      json info = json::object();
      for (bool train : {true, false}) {
        const std::string suffix = train ? "" : "_test";
        json rows = json::array();
        for (const TrainPair& p : sft(train)) {
          json r = alpaca(p.prompt);
          r["output"] = p.target;
          rows.push_back(std::move(r));
        }
        written.push_back(dir / ("puma_sft" + suffix + ".json"));
        write_json_file(written.back(), rows);
        info["puma_sft" + suffix] = {{"file_name", "puma_sft" + suffix + ".json"},
                                     {"columns", {{"prompt", "instruction"}, {"query", "input"}, {"response", "output"}}}};
        json prefs = json::array();
        for (const PreferenceExample& p : train ? d.dpo_train : d.dpo_test) {
          json r = alpaca(p.prompt);
          r["chosen"] = p.chosen;
          r["rejected"] = p.rejected;
          prefs.push_back(std::move(r));
        }
        written.push_back(dir / ("puma_dpo" + suffix + ".json"));
        write_json_file(written.back(), prefs);
        info["puma_dpo" + suffix] = {
            {"file_name", "puma_dpo" + suffix + ".json"},
            {"ranking", true},
            {"columns", {{"prompt", "instruction"}, {"query", "input"}, {"chosen", "chosen"}, {"rejected", "rejected"}}}};
      }
      written.push_back(dir / "dataset_info.json");
      write_json_file(written.back(), info);
      break;
    }
    case ExportFormat::kOriginal: {
      auto examples = [](const std::vector<Example>& v, bool with_memory) {
        json out = json::array();
        for (const Example& e : v) {
          json r = {{"instruction", e.instruction}, {"prompt", e.prompt}, {"target", e.target}};
          if (with_memory) r["mem"] = e.memory;
          out.push_back(std::move(r));
        }
        return out;
      };
      written.push_back(dir / "function_data.json");
      write_json_file(written.back(), {{"train", examples(d.function_train, false)},
                                       {"test", examples(d.function_test, false)}});
      written.push_back(dir / "param_data.json");
      write_json_file(written.back(), {{"train", examples(d.param_train, true)}, {"test", examples(d.param_test, true)}});
      auto pairs = [](const std::vector<PreferenceExample>& v, const std::vector<std::string>& instructions) {
        json out = json::array();
        for (std::size_t i = 0; i < v.size(); ++i)
          out.push_back({{"instruction", i < instructions.size() ? instructions[i] : ""},
                         {"prompt", v[i].prompt},
                         {"chosen", v[i].chosen},
                         {"rejected", v[i].rejected}});
        return out;
      };
      written.push_back(dir / "dpo_data.json");
      write_json_file(written.back(), {{"train", pairs(d.dpo_train, d.dpo_train_instructions)},
                                       {"test", pairs(d.dpo_test, d.dpo_test_instructions)}});
      break;
    }
  }
  return written;
}

ExportedData read_export(const fs::path& dir, ExportFormat format, SftMode mode) {
  ExportedData out;
  auto pref_of = [](const json& r, const fs::path& file, std::size_t i, const char* prompt_field) {
    return PreferenceExample{field(r, prompt_field, file, i), field(r, "chosen", file, i), field(r, "rejected", file, i)};
  };
  switch (format) {
    case ExportFormat::kTrl:
      for (bool train : {true, false}) {
        const fs::path sft = dir / (train ? "sft_train.jsonl" : "sft_test.jsonl");
        auto records = read_records(sft, true);
        for (std::size_t i = 0; i < records.size(); ++i)
          (train ? out.sft_train : out.sft_test).push_back({field(records[i], "prompt", sft, i),
                                                            field(records[i], "completion", sft, i)});
        const fs::path dpo = dir / (train ? "dpo_train.jsonl" : "dpo_test.jsonl");
        records = read_records(dpo, true);
        for (std::size_t i = 0; i < records.size(); ++i)
          (train ? out.dpo_train : out.dpo_test).push_back(pref_of(records[i], dpo, i, "prompt"));
      }
      break;
    case ExportFormat::kLlamaFactory:
      for (bool train : {true, false}) {
        const std::string suffix = train ? "" : "_test";
        const fs::path sft = dir / ("puma_sft" + suffix + ".json");
        auto records = read_records(sft, false);
        for (std::size_t i = 0; i < records.size(); ++i) {
          // LLaMA-Factory joins instruction and input with a newline when the input is not empty
          std::string prompt = field(records[i], "instruction", sft, i);
          const std::string input = records[i].value("input", "");
          if (!input.empty()) prompt += "\n" + input;
          (train ? out.sft_train : out.sft_test).push_back({prompt, field(records[i], "output", sft, i)});
        }
        const fs::path dpo = dir / ("puma_dpo" + suffix + ".json");
        records = read_records(dpo, false);
        for (std::size_t i = 0; i < records.size(); ++i)
          (train ? out.dpo_train : out.dpo_test).push_back(pref_of(records[i], dpo, i, "instruction"));
      }
      break;
    case ExportFormat::kOriginal:
      for (bool train : {true, false}) {
        const char* split = train ? "train" : "test";
        std::vector<TrainPair>& sft = train ? out.sft_train : out.sft_test;
        const std::pair<const char*, bool> files[] = {{"function_data.json", mode != SftMode::kParam},
                                                      {"param_data.json", mode != SftMode::kFunction}};
        for (const auto& [name, wanted] : files) {
          if (!wanted) continue;
          const json records = original_split(dir / name, split);
          for (std::size_t i = 0; i < records.size(); ++i) {
            if (!records[i].is_object()) throw DataError((dir / name).string() + ": record is not an object");
            sft.push_back({field(records[i], "prompt", dir / name, i), field(records[i], "target", dir / name, i)});
          }
        }
        const json pairs = original_split(dir / "dpo_data.json", split);
        for (std::size_t i = 0; i < pairs.size(); ++i) {
          if (!pairs[i].is_object()) throw DataError((dir / "dpo_data.json").string() + ": record is not an object");
          (train ? out.dpo_train : out.dpo_test).push_back(pref_of(pairs[i], dir / "dpo_data.json", i, "prompt"));
        }
      }
      break;
  }
  return out;
}

}  // namespace pwab::puma
