#include "core/config_node.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "core/parse.h"

namespace weir {
namespace {

// yaml-cpp throws for malformed documents and for conversions of nodes that are not what was
// asked; each call into it here goes through Guard, which turns an exception into `fallback`.
template <typename F, typename T>
auto Guard(F&& f, T fallback) noexcept -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception&) {
    return fallback;
  }
}

// The offset of the first byte of `text` that is not part of well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos.
size_t FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t length;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF)) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace

Result<ConfigNode> ConfigNode::Parse(std::string_view text, std::string file_name) {
  auto file = std::make_shared<const std::string>(std::move(file_name));
  // YAML is Unicode text; names and values from it end up in JSON (the definition a checkpoint
  // records, records' fields), which must be UTF-8.
  if (size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const int64_t line = std::count(text.begin(), text.begin() + bad, '\n') + 1;
    const size_t column = bad - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    return Status::InvalidArgument(*file + ": not valid YAML: not UTF-8 text (line " +
                                   std::to_string(line) + ", column " + std::to_string(column) +
                                   ")");
  }
  try {
    auto root = std::make_shared<const YAML::Node>(YAML::Load(std::string(text)));
    return ConfigNode(std::move(root), "", std::move(file));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(*file + ": not valid YAML: " + e.msg + " (line " +
                                   std::to_string(e.mark.line + 1) + ", column " +
                                   std::to_string(e.mark.column + 1) + ")");
  } catch (const std::exception& e) {
    return Status::InvalidArgument(*file + ": not valid YAML: " + e.what());
  }
}

ConfigNode ConfigNode::Child(const YAML::Node& node, std::string path) const {
  return ConfigNode(std::make_shared<const YAML::Node>(node), std::move(path), file_);
}

std::string ConfigNode::JoinPath(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool ConfigNode::IsMap() const {
  return Guard([&] { return node_->IsMap(); }, false);
}
bool ConfigNode::IsSequence() const {
  return Guard([&] { return node_->IsSequence(); }, false);
}
bool ConfigNode::IsScalar() const {
  return Guard([&] { return node_->IsScalar(); }, false);
}
bool ConfigNode::IsNull() const {
  return Guard([&] { return !node_->IsDefined() || node_->IsNull(); }, true);
}

size_t ConfigNode::size() const {
  return Guard([&]() -> size_t { return IsMap() || IsSequence() ? node_->size() : 0; }, 0);
}

std::string ConfigNode::Scalar() const {
  return Guard([&]() -> std::string { return IsScalar() ? node_->Scalar() : std::string(); },
               std::string());
}

std::string ConfigNode::Describe() const {
  if (IsMap()) return "a map";
  if (IsSequence()) return "a list";
  if (IsScalar()) return "'" + Scalar() + "'";
  return "nothing";
}

Status ConfigNode::Error(std::string_view message) const {
  std::string where =
      *file_ + ": " + (path_.empty() ? "(top level)" : path_) + ": " + std::string(message);
  const YAML::Mark mark = Guard([&] { return node_->Mark(); }, YAML::Mark::null_mark());
  if (mark.line >= 0) {
    where += " (line " + std::to_string(mark.line + 1) + ", column " +
             std::to_string(mark.column + 1) + ")";
  }
  return Status::InvalidArgument(where);
}

Status ConfigNode::Expected(std::string_view what) const {
  return Error("expected " + std::string(what) + ", found " + Describe());
}

std::optional<ConfigNode> ConfigNode::Get(std::string_view key) const {
  if (!IsMap()) return std::nullopt;
  return Guard(
      [&]() -> std::optional<ConfigNode> {
        const YAML::Node& map = *node_;
        const YAML::Node child = map[std::string(key)];
        if (!child.IsDefined()) return std::nullopt;
        return Child(child, JoinPath(key));
      },
      std::optional<ConfigNode>());
}

Result<ConfigNode> ConfigNode::Require(std::string_view key, std::string_view what) const {
  if (auto child = Get(key)) return *child;
  return Error("missing '" + std::string(key) + "' (" + std::string(what) + ")");
}

std::vector<ConfigNode> ConfigNode::Items() const {
  std::vector<ConfigNode> items;
  if (!IsSequence()) return items;
  const size_t n = size();
  for (size_t i = 0; i < n; ++i) {
    std::optional<ConfigNode> item = Guard(
        [&]() -> std::optional<ConfigNode> {
          const YAML::Node& list = *node_;
          return Child(list[i], path_ + "[" + std::to_string(i) + "]");
        },
        std::optional<ConfigNode>());
    if (item) items.push_back(std::move(*item));
  }
  return items;
}

Result<std::vector<std::pair<std::string, ConfigNode>>> ConfigNode::Members() const {
  if (!IsMap()) return Expected("a map");
  std::vector<std::pair<std::string, ConfigNode>> members;
  try {
    for (const auto& kv : *node_) {
      if (!kv.first.IsScalar()) {
        return Child(kv.first, path_)
            .Error("expected a key name, found " + std::string(kv.first.IsMap() ? "a map"
                                                               : kv.first.IsSequence()
                                                                   ? "a list"
                                                                   : "nothing"));
      }
      std::string key = kv.first.Scalar();
      members.emplace_back(key, Child(kv.second, JoinPath(key)));
    }
  } catch (const std::exception& e) {
    return Error(std::string("unreadable map: ") + e.what());
  }
  return members;
}

Result<std::pair<std::string, ConfigNode>> ConfigNode::OnlyMember(std::string_view what) const {
  if (!IsMap() || size() != 1) return Expected(what);
  WEIR_ASSIGN_OR_RETURN(auto members, Members());
  return std::move(members.front());
}

Status ConfigNode::OnlyKeys(const std::vector<std::string_view>& allowed) const {
  WEIR_ASSIGN_OR_RETURN(auto members, Members());
  for (const auto& [key, value] : members) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::vector<std::string_view> sorted(allowed);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::string list;
    for (std::string_view a : sorted) list += (list.empty() ? "" : ", ") + std::string(a);
    return value.Error("unknown key '" + key + "' (expected one of: " + list + ")");
  }
  return Status::OK();
}

Result<std::string> ConfigNode::String() const {
  std::string s = Scalar();
  if (!IsScalar() || s.empty()) return Expected("a non-empty string");
  return s;
}

Result<int64_t> ConfigNode::Int(int64_t min, int64_t max) const {
  const std::string s = Scalar();
  auto v = ParseInt64(s, "value");
  if (!IsScalar() || !v.ok()) return Expected("an integer");
  if (*v < min || *v > max) {
    return Error("expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                 ", found " + s);
  }
  return *v;
}

Result<double> ConfigNode::Number(double min) const {
  const std::string s = Scalar();
  auto v = ParseDouble(s, "value");
  if (!IsScalar() || !v.ok()) return Expected("a number");
  if (!(*v >= min)) return Error("expected a number >= " + std::to_string(min) + ", found " + s);
  return *v;
}

Result<bool> ConfigNode::Bool() const {
  if (IsScalar()) {
    const std::string s = Scalar();
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
  }
  return Expected("true or false");
}

Result<std::chrono::milliseconds> ConfigNode::Millis() const {
  WEIR_ASSIGN_OR_RETURN(int64_t ms, Int(0, INT64_MAX / 4));
  return std::chrono::milliseconds(ms);
}

Result<std::chrono::milliseconds> ConfigNode::Duration() const {
  const std::string text = Scalar();
  const size_t digits = text.find_first_not_of("0123456789");
  if (digits == std::string::npos) return Millis();
  static constexpr std::pair<std::string_view, int64_t> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
  for (const auto& [unit, ms] : kUnits) {
    if (digits == 0 || std::string_view(text).substr(digits) != unit) continue;
    Result<int64_t> count = ParseInt64(std::string_view(text).substr(0, digits), "a duration");
    if (!count.ok() || *count > INT64_MAX / 4 / ms) break;
    return std::chrono::milliseconds(*count * ms);
  }
  return Expected("a duration (milliseconds, or a number with ms, s, m, h or d: 30s, 1h)");
}

Result<Value> ConfigNode::Literal() const {
  if (IsNull()) return Value();  // `null`, `~` or nothing: YAML's null
  if (!IsScalar()) return Expected("a value (string, number, true/false or null)");
  const std::string s = Scalar();
  const bool quoted = Guard([&] { return node_->Tag() == "!"; }, false);
  if (quoted) return Value(s);
  if (s == "true") return Value(true);
  if (s == "false") return Value(false);
  if (s == "null" || s == "~") return Value();
  if (auto i = ParseInt64(s, "value"); i.ok()) return Value(*i);
  if (auto d = ParseDouble(s, "value"); d.ok()) return Value(*d);
  return Value(s);
}

}  // namespace weir
