// The replay of a fuzz target without libFuzzer, as a ctest (weir_fuzz_target in
// cmake/WeirTargets.cmake): every seed of the corpus directory, then deterministic mutations of
// them (bit flips, inserted and deleted bytes, splices of seeds), the same on every machine. The
// target's own checks abort on a broken invariant; a crash or a sanitizer report fails the test.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
};

std::string Mutate(const std::vector<std::string>& seeds, SplitMix64& rng) {
  // Bytes that matter to the decoders fuzzed: frame headers, query strings, JSON, YAML.
  static constexpr uint8_t kInteresting[] = {0x00, 0x7e, 0x7f, 0x80, 0x81, 0x88, 0xff, '%',
                                             '&',  '=',  '?',  '\n', '{',  '"',  ':',  '[',
                                             ']',  '-',  '!',  '*',  '|',  '#',  ' '};
  std::string s = seeds[rng.Below(seeds.size())];
  const size_t steps = 1 + rng.Below(4);
  for (size_t step = 0; step < steps; ++step) {
    switch (rng.Below(7)) {
      case 0:  // flip a bit
        if (!s.empty()) s[rng.Below(s.size())] ^= static_cast<char>(1 << rng.Below(8));
        break;
      case 1:  // insert a byte
        s.insert(s.begin() + static_cast<ptrdiff_t>(rng.Below(s.size() + 1)),
                 static_cast<char>(rng.Next()));
        break;
      case 2:  // delete a range
        if (!s.empty()) {
          const size_t at = rng.Below(s.size());
          s.erase(at, 1 + rng.Below(std::min<size_t>(8, s.size() - at)));
        }
        break;
      case 3:  // an interesting byte
        if (!s.empty()) {
          s[rng.Below(s.size())] = static_cast<char>(kInteresting[rng.Below(sizeof(kInteresting))]);
        }
        break;
      case 4:  // truncate
        s.resize(rng.Below(s.size() + 1));
        break;
      case 5: {  // splice another seed in
        const std::string& other = seeds[rng.Below(seeds.size())];
        const size_t from = rng.Below(other.size() + 1);
        s.insert(rng.Below(s.size() + 1), other, from, rng.Below(other.size() - from + 1));
        break;
      }
      case 6: {  // duplicate a chunk
        if (s.empty()) break;
        const size_t from = rng.Below(s.size());
        const std::string chunk = s.substr(from, 1 + rng.Below(32));
        s.insert(rng.Below(s.size() + 1), chunk);
        break;
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS]\n", argv[0]);
    return 2;
  }
  const long mutations = argc > 2 ? std::atol(argv[2]) : 200000;
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());  // the same order, so the same mutations, everywhere
  std::vector<std::string> seeds;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "no seeds in %s\n", argv[1]);
    return 1;
  }
  auto run = [](const std::string& input) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  };
  for (const auto& seed : seeds) run(seed);
  SplitMix64 rng{0x5EED};
  for (long i = 0; i < mutations; ++i) run(Mutate(seeds, rng));
  std::printf("%zu seeds, %ld mutations: invariants hold\n", seeds.size(), mutations);
  return 0;
}
