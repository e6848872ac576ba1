#include "core/names.h"

#include <string>

namespace weir {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

Status CheckName(std::string_view name, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("invalid " + std::string(what) + " '" + std::string(name) +
                                   "': " + std::string(why));
  };
  if (name.empty() || name.size() > kMaxNameLength) {
    return bad("must be 1 to " + std::to_string(kMaxNameLength) + " characters");
  }
  if (name == "." || name == "..") return bad("'.' and '..' are reserved");
  for (char c : name) {
    if (!IsNameChar(c)) return bad("only letters, digits, '.', '_' and '-' are allowed");
  }
  return Status::OK();
}

}  // namespace weir
