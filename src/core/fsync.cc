#include "weir/fsync.h"

namespace weir {

std::string_view FsyncPolicyName(FsyncPolicy policy) {
  for (const auto& [p, name] : kFsyncPolicies) {
    if (p == policy) return name;
  }
  WEIR_CHECK(false, "FsyncPolicy " + std::to_string(static_cast<int>(policy)) + " has no name");
  return {};
}

std::string FsyncPolicyChoices() {
  std::string out;
  for (size_t i = 0; i < kFsyncPolicies.size(); ++i) {
    if (i > 0) out += i + 1 == kFsyncPolicies.size() ? " or " : ", ";
    out += kFsyncPolicies[i].second;
  }
  return out;
}

Result<FsyncPolicy> ParseFsyncPolicy(std::string_view name) {
  for (const auto& [policy, n] : kFsyncPolicies) {
    if (n == name) return policy;
  }
  return Status::InvalidArgument("unknown fsync policy '" + std::string(name) + "' (expected " +
                                 FsyncPolicyChoices() + ")");
}

}  // namespace weir
