#include "dataflow/builtin_kinds.h"

namespace weir::dataflow {

KindRegistry BuiltinKinds() {
  KindRegistry kinds;
  RegisterFileSource(kinds);
  RegisterTopicSource(kinds);
  RegisterGeneratorSource(kinds);
  RegisterFilter(kinds);
  RegisterSelect(kinds);
  RegisterGroupBy(kinds);
  RegisterAggregate(kinds);
  RegisterWindow(kinds);
  RegisterJoin(kinds);
  RegisterIntervalJoin(kinds);
  RegisterAsOfJoin(kinds);
  RegisterFileSink(kinds);
  RegisterTopicSink(kinds);
  RegisterStdoutSink(kinds);
  RegisterDiscardSink(kinds);
  return kinds;
}

}  // namespace weir::dataflow
