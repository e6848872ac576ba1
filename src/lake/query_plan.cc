#include "lake/query_plan.h"

#include <algorithm>
#include <cctype>

#include "lake/sql_text.h"

namespace weir::lake {

int Occurrences(std::string_view sql, std::string_view name) {
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  int count = 0;
  for (size_t at = 0; at + name.size() <= sql.size(); ++at) {
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(sql[at + i])) ==
             std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (!same) continue;
    const bool starts = at == 0 || !word_char(sql[at - 1]);
    const bool ends = at + name.size() == sql.size() || !word_char(sql[at + name.size()]);
    if (starts && ends) ++count;
  }
  return count;
}

Status CheckOneSelect(const Value& tree) {
  if (tree.is_object() && tree.GetBool("error").value_or(false)) {
    const std::string message(tree.GetString("error_message").value_or(""));
    if (message.find("Only SELECT statements") != std::string::npos) {
      return Status::InvalidArgument(
          "a lake query is one SELECT (or WITH ... SELECT) statement; this is a statement of "
          "another kind");
    }
    return Status::InvalidArgument("a lake query does not parse: " + message);
  }
  const Value* statements = tree.is_object() ? tree.Find("statements") : nullptr;
  const size_t count = statements && statements->is_array() ? statements->as_array().size() : 0;
  if (count != 1) {
    return Status::InvalidArgument(
        "a lake query is one SELECT (or WITH ... SELECT) statement; this is " +
        std::to_string(count) + " statements");
  }
  return Status::OK();
}

namespace {

// The SELECT_NODE of a tree of one statement, or null (a set operation, several statements).
const Value* OnlySelectNode(const Value& tree) {
  const Value* statements = tree.is_object() ? tree.Find("statements") : nullptr;
  if (!statements || !statements->is_array() || statements->as_array().size() != 1) {
    return nullptr;
  }
  const Value* node = statements->as_array()[0].Find("node");
  if (!node || node->GetString("type") != "SELECT_NODE") return nullptr;
  return node;
}

// Whether `node` (a piece of DuckDB's serialized parse tree) contains something that looks
// across rows or into another query.
bool LooksAcrossRows(const Value& node) {
  if (node.is_array()) {
    return std::any_of(node.as_array().begin(), node.as_array().end(), LooksAcrossRows);
  }
  if (!node.is_object()) return false;
  if (auto cls = node.GetString("class"); cls && (*cls == "WINDOW" || *cls == "SUBQUERY")) {
    return true;
  }
  for (const auto& [name, child] : node.as_object()) {
    if (LooksAcrossRows(child)) return true;
  }
  return false;
}

// The member at a dotted path ("cte_map.map"), or null.
const Value* At(const Value& v, std::string_view dotted) {
  const Value* at = &v;
  while (at && !dotted.empty()) {
    const size_t dot = std::min(dotted.find('.'), dotted.size());
    at = at->is_object() ? at->Find(dotted.substr(0, dot)) : nullptr;
    dotted.remove_prefix(std::min(dot + 1, dotted.size()));
  }
  return at;
}

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<OrderedScan> MatchOrderedScan(const Value& tree,
                                            const std::vector<CatalogView>& views) {
  const Value* node = OnlySelectNode(tree);
  if (!node) return std::nullopt;
  auto table = node->GetString("from_table.table_name");
  const Value* group = node->Find("group_expressions");
  const Value* ctes = At(*node, "cte_map.map");
  const Value* modifiers = node->Find("modifiers");
  const Value* select = node->Find("select_list");
  if (!table || node->GetString("from_table.type") != "BASE_TABLE" || !group ||
      !group->is_array() || !group->as_array().empty() || !ctes || !ctes->is_array() ||
      !ctes->as_array().empty() || !modifiers || !modifiers->is_array() || !select ||
      !select->is_array()) {
    return std::nullopt;
  }
  for (const char* absent : {"having", "qualify", "sample", "from_table.sample"}) {
    const Value* v = At(*node, absent);
    if (v && !v->is_null()) return std::nullopt;
  }
  if (LooksAcrossRows(*select) || LooksAcrossRows(*node->Find("where_clause"))) return std::nullopt;
  OrderedScan scan;
  for (const CatalogView& v : views) {
    if (SameName(v.spec.name, *table) && v.spec.order == ScanOrder::kConcatenated) scan.view = &v;
  }
  if (!scan.view) return std::nullopt;
  const std::string& sort_column = scan.view->spec.sort.front();
  bool ordered = false, limited = false;
  for (const Value& m : modifiers->as_array()) {
    auto type = m.GetString("type");
    if (type == "ORDER_MODIFIER") {
      const Value* orders = m.Find("orders");
      if (!orders || !orders->is_array() || orders->as_array().size() != 1) return std::nullopt;
      const Value& order = orders->as_array()[0];
      const Value* names = At(order, "expression.column_names");
      if (order.GetString("expression.class") != "COLUMN_REF" || !names || !names->is_array() ||
          names->as_array().empty() || !names->as_array().back().is_string() ||
          !SameName(names->as_array().back().as_string(), sort_column) ||
          order.GetString("null_order") != "ORDER_DEFAULT") {
        return std::nullopt;
      }
      scan.descending = order.GetString("type") == "DESCENDING";
      ordered = true;
    } else if (type == "LIMIT_MODIFIER") {
      const Value* offset = m.Find("offset");
      auto limit = m.GetInt("limit.value.value");
      if ((offset && !offset->is_null()) || m.GetString("limit.class") != "CONSTANT" || !limit ||
          *limit < 0) {
        return std::nullopt;
      }
      scan.limit = *limit;
      limited = true;
    } else {
      return std::nullopt;  // DISTINCT and the rest look across rows
    }
  }
  // An alias named like the sort column would be what ORDER BY sorts by.
  for (const Value& item : select->as_array()) {
    auto alias = item.GetString("alias");
    if (alias && SameName(*alias, sort_column)) return std::nullopt;
  }
  if (!ordered || !limited) return std::nullopt;
  return scan;
}

namespace {

// A constant the sort range is evaluated from, as SQL; nullopt for any other expression.
std::optional<std::string> ConstantSql(const Value& e) {
  const auto cls = e.GetString("class");
  if (cls == "CAST") {
    const auto type = e.GetString("cast_type.id");
    const Value* child = e.Find("child");
    const bool to_time = type == "TIMESTAMP" || type == "TIMESTAMP_MS" || type == "TIMESTAMP_S" ||
                         type == "TIMESTAMP_NS" || type == "DATE";
    if (!to_time || e.GetBool("try_cast") != false || !child ||
        child->GetString("value.type.id") != "VARCHAR") {
      return std::nullopt;
    }
    std::optional<std::string> text = ConstantSql(*child);
    if (!text) return std::nullopt;
    return "CAST(" + *text + " AS " + std::string(*type) + ")";
  }
  if (cls != "CONSTANT" || e.GetBool("value.is_null") != false) return std::nullopt;
  const auto type = e.GetString("value.type.id");
  const Value* v = At(e, "value.value");
  if (!type || !v) return std::nullopt;
  if (*type == "VARCHAR" && v->is_string()) return SqlString(v->as_string());
  if (*type == "DECIMAL" && v->is_int()) {
    const auto scale = e.GetInt("value.type.type_info.scale");
    if (!scale || *scale < 0 || *scale > 38) return std::nullopt;
    return "(" + std::to_string(v->as_int()) + " / 1e" + std::to_string(*scale) + ")";
  }
  const bool integer = *type == "TINYINT" || *type == "SMALLINT" || *type == "INTEGER" ||
                       *type == "BIGINT" || *type == "UTINYINT" || *type == "USMALLINT" ||
                       *type == "UINTEGER";
  if (integer && v->is_int()) return std::to_string(v->as_int());
  if ((*type == "DOUBLE" || *type == "FLOAT") && v->is_number()) return SqlDouble(v->as_double());
  return std::nullopt;
}

// Whether `e` is a reference to `column` of the query's one table (`table`: its name or alias).
bool IsColumn(const Value& e, std::string_view column, std::string_view table) {
  const Value* names = e.Find("column_names");
  if (e.GetString("class") != "COLUMN_REF" || !names || !names->is_array()) return false;
  const auto& parts = names->as_array();
  if (parts.empty() || parts.size() > 2 || !parts.back().is_string() ||
      !SameName(parts.back().as_string(), column)) {
    return false;
  }
  return parts.size() == 1 || (parts[0].is_string() && SameName(parts[0].as_string(), table));
}

// Adds the bounds `e` (a conjunct of the WHERE) puts on `column`; ignores any other conjunct.
void CollectBounds(const Value& e, std::string_view column, std::string_view table,
                   SortRangeQuery& range) {
  const auto cls = e.GetString("class");
  if (cls == "CONJUNCTION" && e.GetString("type") == "CONJUNCTION_AND") {
    if (const Value* children = e.Find("children"); children && children->is_array()) {
      for (const Value& child : children->as_array()) CollectBounds(child, column, table, range);
    }
    return;
  }
  if (cls == "BETWEEN") {
    const Value* input = e.Find("input");
    const Value* lower = e.Find("lower");
    const Value* upper = e.Find("upper");
    if (!input || !lower || !upper || !IsColumn(*input, column, table)) return;
    if (auto sql = ConstantSql(*lower)) range.lower.push_back(*sql);
    if (auto sql = ConstantSql(*upper)) range.upper.push_back(*sql);
    return;
  }
  if (cls != "COMPARISON") return;
  const Value* left = e.Find("left");
  const Value* right = e.Find("right");
  if (!left || !right) return;
  const std::string type(e.GetString("type").value_or(""));
  bool at_least = type == "COMPARE_GREATERTHAN" || type == "COMPARE_GREATERTHANOREQUALTO";
  bool at_most = type == "COMPARE_LESSTHAN" || type == "COMPARE_LESSTHANOREQUALTO";
  const bool equal = type == "COMPARE_EQUAL";
  if (!IsColumn(*left, column, table)) {
    if (!IsColumn(*right, column, table)) return;
    std::swap(left, right);  // constant OP column: column (mirrored OP) constant
    std::swap(at_least, at_most);
  }
  std::optional<std::string> sql = ConstantSql(*right);
  if (!sql) return;
  if (at_least || equal) range.lower.push_back(*sql);
  if (at_most || equal) range.upper.push_back(*sql);
}

}  // namespace

std::optional<SortRangeQuery> MatchSortRange(const Value& tree, std::string_view statement,
                                             const std::vector<CatalogView>& views) {
  const Value* node = OnlySelectNode(tree);
  if (!node || node->GetString("from_table.type") != "BASE_TABLE") return std::nullopt;
  const Value* ctes = At(*node, "cte_map.map");
  const Value* where = node->Find("where_clause");
  const auto table = node->GetString("from_table.table_name");
  if (!table || !ctes || !ctes->is_array() || !ctes->as_array().empty() || !where ||
      where->is_null() || !node->GetString("from_table.schema_name").value_or("").empty()) {
    return std::nullopt;
  }
  SortRangeQuery range;
  for (const CatalogView& v : views) {
    if (SameName(v.spec.name, *table) && !v.spec.sort.empty()) range.view = &v;
  }
  // Named once: the FROM is the only place the query reads the view (no subquery reads it too).
  if (!range.view || Occurrences(statement, range.view->spec.name) != 1) return std::nullopt;
  const std::string alias(node->GetString("from_table.alias").value_or(""));
  CollectBounds(*where, range.view->spec.sort.front(), alias.empty() ? *table : alias, range);
  if (range.lower.empty() && range.upper.empty()) return std::nullopt;
  return range;
}

Result<SortRange> EvaluateSortRange(sql::Database& db, const SortRangeQuery& query) {
  std::string select;
  for (const auto* list : {&query.lower, &query.upper}) {
    for (const std::string& constant : *list) {
      select += (select.empty() ? "SELECT " : ", ") + SortKeyNumber(constant);
    }
  }
  SortRange range;
  WEIR_RETURN_IF_ERROR(db.Query(select, [&](const sql::Row& row) {
    for (size_t i = 0; i < query.lower.size() + query.upper.size(); ++i) {
      if (row.IsNull(i)) continue;
      const double bound = row.Double(i);
      if (i < query.lower.size()) {
        range.lower = std::max(range.lower, bound);
      } else {
        range.upper = std::min(range.upper, bound);
      }
    }
  }));
  return range;
}

bool CertifiesRange(const PartitionRecord& p, std::string_view column) {
  return p.sort_min && p.sort_max &&
         (p.sort_order == column || p.sort_order.starts_with(std::string(column) + ","));
}

bool SortRange::MayHold(const PartitionRecord& p, std::string_view column) const {
  return !CertifiesRange(p, column) || (*p.sort_max >= lower && *p.sort_min <= upper);
}

}  // namespace weir::lake
