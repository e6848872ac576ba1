#include "core/fault_injection.h"

#include <algorithm>
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

std::chrono::milliseconds InjectedTaskDelay(std::string_view task_id) {
  const char* env = std::getenv("WEIR_SLOW_TASKS");
  if (env == nullptr) return std::chrono::milliseconds(0);
  std::string_view spec(env);
  size_t colon = spec.rfind(':');
  if (colon == std::string_view::npos) return std::chrono::milliseconds(0);
  const long ms = std::strtol(std::string(spec.substr(colon + 1)).c_str(), nullptr, 10);
  std::string_view ids = spec.substr(0, colon);
  while (!ids.empty()) {
    size_t comma = ids.find(',');
    if (ids.substr(0, comma) == task_id) return std::chrono::milliseconds(std::max(0L, ms));
    ids = comma == std::string_view::npos ? std::string_view() : ids.substr(comma + 1);
  }
  return std::chrono::milliseconds(0);
}

}  // namespace weir
