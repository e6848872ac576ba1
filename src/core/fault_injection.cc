#include "core/fault_injection.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace weir {
namespace {

struct FaultSpec {
  std::string point;
  long hit = 1;
};

const FaultSpec* Spec() {
  static const FaultSpec* spec = []() -> const FaultSpec* {
    const char* env = std::getenv("WEIR_FAULT");
    if (env == nullptr || *env == '\0') return nullptr;
    auto* s = new FaultSpec;
    s->point = env;
    size_t colon = s->point.find(':');
    if (colon != std::string::npos) {
      s->hit = std::strtol(s->point.c_str() + colon + 1, nullptr, 10);
      s->point.resize(colon);
    }
    return s;
  }();
  return spec;
}

}  // namespace

void MaybeInjectFault(const char* point) {
  const FaultSpec* spec = Spec();
  if (spec == nullptr || spec->point != point) return;
  static std::atomic<long> hits{0};
  if (++hits == spec->hit) std::raise(SIGKILL);
}

}  // namespace weir
