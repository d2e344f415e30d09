// fuzz/serve_world.h: the environment the serve fuzz targets drive, built once per process: the mini synthetic
// dataset, a search that returns the first k products (no index on disk: BM25 is not what these targets test), no
// recommender (its calls are error observations), the hashing embedder for review similarity.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/synth.h"
#include "embed/embedder.h"
#include "env/environment.h"
#include "serve/episode_service.h"

namespace pwab::fuzz {

class FirstProducts final : public env::SearchBackend {
 public:
  explicit FirstProducts(const data::Dataset& ds) : ds_(ds) {}
  std::vector<std::string> search(std::string_view, int k) const override {
    std::vector<std::string> asins;
    for (const auto& p : ds_.products()) {
      if (static_cast<int>(asins.size()) >= k) break;
      asins.push_back(p.parent_asin);
    }
    return asins;
  }

 private:
  const data::Dataset& ds_;
};

struct ServeWorld {
  ServeWorld() : ds(data::synthesize({data::SynthScale::kMini, 3})), search(ds), env(ds, &search, nullptr, embedder) {}
  data::Dataset ds;
  FirstProducts search;
  embed::HashingEmbedder embedder;
  env::Environment env;
};

inline ServeWorld& serve_world() {
  static ServeWorld* world = new ServeWorld();  // never destroyed: outlives every input
  return *world;
}

//! A fresh episode service over the world for one input, holding at most a few episodes.
inline std::unique_ptr<serve::EpisodeService> fresh_service() {
  serve::ServiceOptions options;
  options.max_sessions = 4;
  return std::make_unique<serve::EpisodeService>(serve_world().env, options);
}

//! `bytes` cut at each newline.
inline std::vector<std::string_view> lines_of(std::string_view bytes) {
  std::vector<std::string_view> lines;
  while (!bytes.empty()) {
    std::size_t nl = bytes.find('\n');
    lines.push_back(bytes.substr(0, nl));
    if (nl == std::string_view::npos) break;
    bytes.remove_prefix(nl + 1);
  }
  return lines;
}

}  // namespace pwab::fuzz
