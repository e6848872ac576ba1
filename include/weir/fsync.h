// When the log fsyncs what it has written: the durability a producer gets for its latency. One
// enum for the C++ API (ApplicationOptions::fsync, log::LogOptions::fsync), the YAML `fsync:` key
// and the CLI's --fsync flags, with one table of names.
// Threads: constants and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "weir/status.h"

namespace weir {

enum class FsyncPolicy : uint8_t {
  kGroup,   // default: one fdatasync per group commit covers every append since the last one
  kAlways,  // an append is written and fdatasynced before it returns
  kNever,   // written to the file by the group committer and visible; the OS decides when
};

// Every policy with its name, in the order the enum declares them.
inline constexpr std::array<std::pair<FsyncPolicy, std::string_view>, 3> kFsyncPolicies = {{
    {FsyncPolicy::kGroup, "group"},
    {FsyncPolicy::kAlways, "always"},
    {FsyncPolicy::kNever, "never"},
}};

// "group", "always" or "never".
std::string_view FsyncPolicyName(FsyncPolicy policy);
// The names for a message: "group, always or never".
std::string FsyncPolicyChoices();
// The policy a name stands for; kInvalidArgument "unknown fsync policy 'x' (expected group,
// always or never)" for any other text.
Result<FsyncPolicy> ParseFsyncPolicy(std::string_view name);

}  // namespace weir
