// The local completions backend of `pwab run --agent puma --local-model` (model.h local_chat_model): raw-text
// requests answered by a PumaModel in this process, batched across the runner's concurrent episodes.
//
// Why batched: the runner plays `--concurrency` episodes on their own threads, and each step of each episode asks
// the model for one completion. One at a time, a small model spends its time on per-call overhead (a forward pass
// of one row is a few hundred tiny operator calls); the same forward pass over 32 rows costs little more. So the
// requests that wait while a batch runs form the next batch (continuous batching, no timer): the first thread to
// find the model idle runs every waiting request of the same settings together, and each caller gets its own
// completion back. Every request draws from its own seed (GenerateConfig::prompt_seeds), so a completion does not
// depend on which requests it was batched with; at temperature 0 it is the argmax continuation either way.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "puma/model.h"
#include "puma/search_vocabulary.h"

namespace pwab::puma {

namespace {

// Requests that can share one generate call: the same new-token budget and sampling settings.
using BatchKey = std::tuple<int, bool, double, int, int>;  // max new tokens, sample, temperature, top-k, top logprobs

struct Pending {
  const llm::ChatRequest* request = nullptr;
  BatchKey key;
  std::vector<int32_t> prompt_ids;
  llm::ChatResponse response;
  std::exception_ptr error;
  bool done = false;
};

class LocalChatModel final : public llm::ChatModel {
 public:
  LocalChatModel(std::shared_ptr<PumaModel> model, std::string name, int max_batch)
      : model_(std::move(model)), name_(std::move(name)), max_batch_(std::max(1, max_batch)) {}

  llm::ChatResponse chat(const llm::ChatRequest& request) override {
    if (!request.prompt)
      throw UsageError("the local PUMA model answers raw-text completions only (the puma agent's requests), not "
                       "chat messages");
    Pending p;
    p.request = &request;
    const double temperature = request.temperature.value_or(0.0);
    // Unset: GenerateConfig's top-k 50 (transformers' default, what this backend always sampled with); 0 = the
    // whole vocabulary. Greedy decoding is the argmax under any top-k, so it batches with every setting.
    const int top_k = temperature > 0 ? request.top_k.value_or(GenerateConfig{}.top_k) : 0;
    if (top_k < 0) throw UsageError("ChatRequest.top_k is " + std::to_string(top_k) + ": 0 (the whole vocabulary) or more");
    p.key = {request.max_tokens.value_or(256), temperature > 0, temperature > 0 ? temperature : 1.0, top_k,
             request.return_tokens ? request.top_logprobs : 0};
    p.prompt_ids = model_->encode_prompt(*request.prompt);  // outside the lock: callers tokenize in parallel
    std::unique_lock<std::mutex> lock(mu_);
    waiting_.push_back(&p);
    while (!p.done) {
      if (busy_) {
        idle_.wait(lock);
        continue;
      }
      // Lead: take every waiting request with the first one's settings, in arrival order.
      busy_ = true;
      std::vector<Pending*> batch;
      const BatchKey key = waiting_.front()->key;
      for (auto it = waiting_.begin(); it != waiting_.end() && static_cast<int>(batch.size()) < max_batch_;) {
        if ((*it)->key == key) {
          batch.push_back(*it);
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
      lock.unlock();
      run(batch);
      lock.lock();
      for (Pending* b : batch) b->done = true;
      busy_ = false;
      idle_.notify_all();
    }
    if (p.error) std::rethrow_exception(p.error);
    return std::move(p.response);
  }
  std::string describe() const override { return "local " + name_ + " (" + model_->describe() + ")"; }

 private:
  void run(const std::vector<Pending*>& batch) {
    const auto& [max_new_tokens, sample, temperature, top_k, top_logprobs] = batch.front()->key;
    GenerateConfig g;
    g.max_new_tokens = max_new_tokens;
    g.sample = sample;
    g.temperature = temperature;
    g.top_k = top_k;
    g.top_logprobs = top_logprobs;
    g.batch_size = static_cast<int>(batch.size());
    std::vector<std::vector<int32_t>> prompts;
    bool constrained = false;
    for (const Pending* p : batch) {
      prompts.push_back(p->prompt_ids);
      const llm::ChatRequest& r = *p->request;
      g.prompt_seeds.push_back(static_cast<uint64_t>(r.seed.value_or(0)) + static_cast<uint64_t>(r.sample));
      g.allowed_tokens.push_back(r.prompt_words_only ? search_vocabulary(model_->tokenizer(), *r.prompt)
                                                     : std::vector<int32_t>{});
      constrained = constrained || r.prompt_words_only;
    }
    if (!constrained) g.allowed_tokens.clear();
    std::vector<SampledCompletion> completions;
    try {
      completions = model_->complete_ids(prompts, g);
    } catch (...) {
      for (Pending* p : batch) p->error = std::current_exception();
      return;
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Pending& p = *batch[i];
      SampledCompletion& c = completions.at(i);
      llm::ChatResponse& r = p.response;
      r.model = p.request->model;
      r.attempts = 1;
      r.finish_reason = c.eos ? "stop" : "length";
      r.prompt_tokens = static_cast<int64_t>(p.prompt_ids.size());
      // the EOS is one of the traced ids, and not part of the text
      r.completion_tokens = static_cast<int64_t>(c.ids.size()) - (c.eos && !p.request->return_tokens ? 1 : 0);
      r.message = llm::Message::assistant(std::move(c.text));
      if (p.request->return_tokens) {
        // The ids the model read and drew, with the log-probability of each draw (the RL engine's view).
        llm::TokenTrace trace;
        trace.prompt_ids = std::move(p.prompt_ids);
        trace.completion_ids = std::move(c.ids);
        trace.logprobs = std::move(c.logprobs);
        trace.top_logprobs = std::move(c.top_logprobs);
        r.tokens = std::move(trace);
      }
    }
  }

  std::shared_ptr<PumaModel> model_;
  std::string name_;
  int max_batch_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::vector<Pending*> waiting_;
  bool busy_ = false;
};

}  // namespace

std::unique_ptr<llm::ChatModel> local_chat_model(std::shared_ptr<PumaModel> model, std::string name, int max_batch) {
  if (!model) throw UsageError("local_chat_model: no model");
  return std::make_unique<LocalChatModel>(std::move(model), std::move(name), max_batch);
}

}  // namespace pwab::puma
