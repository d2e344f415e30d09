// Training data for other engines (exchange.h): every format written and read back equal to what the pipeline
// trains on, LLaMA-Factory's dataset_info.json naming the files, the original's split files, malformed files named
// with the record; and the pipeline report and presets (torch-free parts of the pipeline).
#include "puma/exchange.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sys.h"
#include "support/test_support.h"

namespace pwab::puma {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Example example(std::string task, std::string instruction, std::string prompt, std::string target,
                std::string memory = "") {
  Example e;
  e.task = std::move(task);
  e.instruction = std::move(instruction);
  e.prompt = std::move(prompt);
  e.target = std::move(target);
  e.memory = std::move(memory);
  return e;
}

// A pipeline directory as prepare and score leave it, with text that needs escaping (quotes, newlines, UTF-8).
fs::path pipeline_dir(const fs::path& root) {
  const fs::path dir = root / "run";
  std::vector<Example> ftrain = {example("train/0", "Find a \"red\" kettle", "### Instruction: Find a \"red\" kettle\n\n### Tool:\n",
                                         "search_product_by_query"),
                                 example("train/1", "Review my mug", "### Instruction: Review my mug\n\n### Tool:\n",
                                         "add_product_review")};
  std::vector<Example> ftest = {example("test/0", "Recommend něco", "### Instruction: Recommend něco\n\n### Tool:\n",
                                        "get_recommendations_by_history")};
  std::vector<Example> ptrain = {example("train/0", "Find a \"red\" kettle", "P0 ...\n### Tool Parameter:\n", "red kettle",
                                         "Title:Kettle|Title:Mug"),
                                 example("train/1", "Review my mug", "P1 ...\n### Tool Parameter:\n", "Great mug.\nWould buy.",
                                         "Rating:5.0")};
  std::vector<Example> ptest = {example("test/0", "Recommend něco", "P2 ...\n### Tool Parameter:\n", "B0A, B0B", "none")};
  write_examples(dir / "data" / "function_train.jsonl", ftrain);
  write_examples(dir / "data" / "function_test.jsonl", ftest);
  write_examples(dir / "data" / "param_train.jsonl", ptrain);
  write_examples(dir / "data" / "param_test.jsonl", ptest);
  write_file_atomic(dir / "data" / ".done", "{}");
  write_file_atomic(dir / "dpo" / "score" / "pairs.jsonl",
                    json{{"task", "train/0"}, {"prompt", "P0 ...\n### Tool Parameter:\n"}, {"chosen", "red kettle"},
                         {"rejected", "kettle \"x\""}}
                            .dump() +
                        "\n");
  write_file_atomic(dir / "dpo" / "score" / "pairs_test.jsonl",
                    json{{"task", "test/0"}, {"prompt", "P2 ...\n### Tool Parameter:\n"}, {"chosen", "B0A"},
                         {"rejected", "B0Z"}}
                            .dump() +
                        "\n");
  write_file_atomic(dir / "dpo" / "score" / ".done", "{}");
  return dir;
}

bool same(const std::vector<TrainPair>& a, const std::vector<TrainPair>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].prompt != b[i].prompt || a[i].target != b[i].target) return false;
  return true;
}

bool same(const std::vector<PreferenceExample>& a, const std::vector<PreferenceExample>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].prompt != b[i].prompt || a[i].chosen != b[i].chosen || a[i].rejected != b[i].rejected) return false;
  return true;
}

TEST(PumaExchange, EveryFormatRoundTrips) {
  pwab::test::TempDir root;
  TrainingData d = read_training_data(pipeline_dir(root.path()));
  ASSERT_EQ(d.dpo_train.size(), 1u);
  EXPECT_EQ(d.dpo_train_instructions, (std::vector<std::string>{"Find a \"red\" kettle"}));
  for (ExportFormat format : {ExportFormat::kTrl, ExportFormat::kLlamaFactory, ExportFormat::kOriginal}) {
    for (SftMode mode : {SftMode::kFunctionParam, SftMode::kParam, SftMode::kFunction}) {
      const fs::path to = root / std::string(to_string(format)) / std::string(to_string(mode));
      auto files = export_training_data(d, format, mode, to);
      for (const auto& f : files) EXPECT_TRUE(fs::exists(f)) << f;
      ExportedData back = read_export(to, format, mode);
      EXPECT_TRUE(same(back.sft_train, sft_rows(d.function_train, d.param_train, mode)))
          << to_string(format) << " " << to_string(mode);
      EXPECT_TRUE(same(back.sft_test, sft_rows(d.function_test, d.param_test, mode))) << to_string(format);
      EXPECT_TRUE(same(back.dpo_train, d.dpo_train)) << to_string(format);
      EXPECT_TRUE(same(back.dpo_test, d.dpo_test)) << to_string(format);
    }
  }
  EXPECT_EQ(sft_rows(d.function_train, d.param_train, SftMode::kFunctionParam).size(), 4u);

  // LLaMA-Factory: dataset_info.json names every file, the preference sets with ranking: true.
  json info = json::parse(read_file(root / "llamafactory" / "function_param" / "dataset_info.json"));
  EXPECT_EQ(info["puma_sft"]["file_name"], "puma_sft.json");
  EXPECT_EQ(info["puma_sft"]["columns"]["response"], "output");
  EXPECT_EQ(info["puma_dpo"]["ranking"], true);
  EXPECT_EQ(info["puma_dpo_test"]["columns"]["chosen"], "chosen");
  json alpaca = json::parse(read_file(root / "llamafactory" / "function_param" / "puma_sft.json"));
  EXPECT_EQ(alpaca[0]["input"], "");
  // The original: {"train": [...], "test": [...]} with its record fields, the memory on parameter records.
  json params = json::parse(read_file(root / "original" / "function_param" / "param_data.json"));
  EXPECT_EQ(params["train"][1]["mem"], "Rating:5.0");
  EXPECT_EQ(params["test"][0]["instruction"], "Recommend něco");
  json dpo = json::parse(read_file(root / "original" / "function_param" / "dpo_data.json"));
  EXPECT_EQ(dpo["train"][0]["instruction"], "Find a \"red\" kettle");
  // TRL: prompt-completion and preference records.
  const std::string trl = read_file(root / "trl" / "param" / "sft_train.jsonl");
  EXPECT_EQ(json::parse(trl.substr(0, trl.find('\n')))["completion"], "red kettle");
}

TEST(PumaExchange, MalformedFilesAreNamedWithTheRecord) {
  pwab::test::TempDir root;
  EXPECT_THROW(read_training_data(root.path()), DataError);  // nothing prepared
  TrainingData d = read_training_data(pipeline_dir(root.path()));
  const fs::path to = root / "trl";
  export_training_data(d, ExportFormat::kTrl, SftMode::kFunctionParam, to);
  write_file_atomic(to / "sft_train.jsonl", "{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": \"c\"}\n");
  try {
    read_export(to, ExportFormat::kTrl);
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("sft_train.jsonl"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("record 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("completion"), std::string::npos) << e.what();
  }
  const fs::path lf = root / "lf";
  export_training_data(d, ExportFormat::kLlamaFactory, SftMode::kFunctionParam, lf);
  write_file_atomic(lf / "puma_dpo.json", "{\"not\": \"a list\"}");
  EXPECT_THROW(read_export(lf, ExportFormat::kLlamaFactory), DataError);
  EXPECT_THROW(parse_export_format("csv"), UsageError);
  EXPECT_THROW(parse_sft_mode("tool"), UsageError);
  EXPECT_EQ(parse_sft_mode("function_param"), SftMode::kFunctionParam);
}

TEST(PumaPresets, NamedPresetsAndTheirRecipes) {
  EXPECT_EQ(PipelineOptions::preset_named("tiny").preset, "tiny");
  PipelineOptions paper = PipelineOptions::preset_named("paper");
  EXPECT_EQ(paper.sft.learning_rate, 3e-4);  // the original's script (the paper's text says 4e-3)
  EXPECT_EQ(paper.sft.accumulation_steps, 16);
  EXPECT_EQ(paper.dpo.max_prompt_length, 768);
  EXPECT_EQ(paper.dpo.max_length, 1024);
  EXPECT_EQ(paper.prepare.memory.max_tokens, 768);
  EXPECT_EQ(paper.prepare.memory.k, 100);
  EXPECT_TRUE(paper.sft.lora && paper.sft.lora_modules_to_save);
  PipelineOptions cpu = PipelineOptions::preset_named("cpu");
  EXPECT_TRUE(cpu.base_model.empty());
  EXPECT_FALSE(cpu.sft.lora);
  // the second stage learns on tasks SFT did not see, RL on a LoRA (docs/puma.md "Online RL")
  EXPECT_EQ(cpu.holdout, 2000);
  EXPECT_TRUE(cpu.rl.train.lora);
  EXPECT_EQ(cpu.rl.train.learning_rate, 2e-3);
  EXPECT_TRUE(cpu.rl_function);
  EXPECT_EQ(PipelineOptions::preset_named("tiny").holdout, 0);
  EXPECT_EQ(paper.holdout, 0);  // the paper samples DPO's candidates on the SFT tasks
  EXPECT_THROW(PipelineOptions::preset_named("huge"), UsageError);
}

TEST(PumaReport, GathersWhatTheStepsWrote) {
  pwab::test::TempDir root;
  const fs::path dir = root / "run";
  write_file_atomic(dir / "options.json", json{{"preset", "tiny"}, {"memory", {{"k", 20}, {"tokens", 192}}}}.dump());
  std::string curve;
  for (int step = 10; step <= 200; step += 10)
    curve += json{{"step", step}, {"kind", "train"}, {"loss", 3.0 - step / 100.0}, {"lr", 1e-3}, {"grad_norm", 0.5}}
                 .dump() +
             "\n";
  curve += json{{"step", 200}, {"kind", "eval"}, {"loss", 1.25}}.dump() + "\n";
  write_file_atomic(dir / "sft" / "work" / "curve.jsonl", curve);
  write_file_atomic(dir / "sft" / "train.json", json{{"steps", 200}, {"eval_loss", 1.25}, {"tokens_per_s", 900.0}}.dump());
  write_file_atomic(dir / "sft" / ".seconds", "12.5\n");
  write_file_atomic(dir / "dpo" / "score" / "report.json",
                    json{{"tasks", 10}, {"pairs", 6}, {"tie_tasks", 4}, {"tie_share", 0.4}, {"mean_spread", 0.3}}.dump());
  write_file_atomic(dir / "dpo" / "train.json", json{{"steps", 3}, {"pairs", 6}}.dump());
  write_file_atomic(dir / "dpo" / "work" / "curve.jsonl",
                    json{{"step", 3}, {"kind", "eval"}, {"loss", 0.6}, {"margin", 0.4}, {"accuracy", 0.75}, {"kl", 0.01}}
                            .dump() +
                        "\n");
  write_file_atomic(dir / "sft" / "eval" / "fast_test.json",
                    json{{"search", {{"total", 2}, {"function_acc", 1.0}, {"result_acc", 0.5}}},
                         {"overall", {{"total", 2}, {"function_acc", 1.0}, {"result_acc", 0.5}}}}
                        .dump());
  std::string md = write_pipeline_report(dir);
  EXPECT_NE(md.find("| after SFT | 1.000 | 0.500 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 200 | 1.0000 | 1.2500 |"), std::string::npos) << md;  // last train point with its eval
  EXPECT_NE(md.find("| train | 10 | 6 | 0.400 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | eval | 0.6000 | 0.4000 | 0.750 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| sft | 12.5 |"), std::string::npos) << md;
  json r = json::parse(read_file(dir / "report.json"));
  EXPECT_EQ(r["sft_curve"].size(), 21u);
  EXPECT_EQ(r["candidates"]["pairs"], 6);
  EXPECT_THROW(write_pipeline_report(root / "missing"), DataError);
}

}  // namespace
}  // namespace pwab::puma
