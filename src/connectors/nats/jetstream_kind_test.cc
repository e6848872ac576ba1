#include "connectors/nats/jetstream_kind.h"

#include <gtest/gtest.h>

#include "dataflow/builtin_kinds.h"
#include "testing/kind_yaml.h"

namespace weir::nats {
namespace {

std::string ErrorOf(std::string_view yaml) {
  static const dataflow::KindRegistry kinds = [] {
    dataflow::KindRegistry k = dataflow::BuiltinKinds();
    RegisterJetStreamSource(k);
    return k;
  }();
  return testing::SourceYamlError(kinds, yaml);
}

TEST(JetStreamSourceYaml, OptionsAreChecked) {
  std::string e = ErrorOf("source: {jetstream: {stream: S}}");
  EXPECT_NE(e.find("source.jetstream: missing 'durable'"), std::string::npos) << e;
  e = ErrorOf("source: {jetstream: {stream: S, durable: d, max_deliver: 0}}");
  EXPECT_NE(e.find("source.jetstream.max_deliver: expected an integer from 1"), std::string::npos)
      << e;
  e = ErrorOf("source: {jetstream: {stream: S, durable: d}, rate: 5}");
  EXPECT_NE(e.find("source.rate: 'rate' does not apply to jetstream sources"), std::string::npos)
      << e;
  e = ErrorOf("source: {jetstream: {stream: S, durable: d, acks: none}}");
  EXPECT_NE(e.find("source.jetstream.acks: unknown key"), std::string::npos) << e;
  EXPECT_EQ(ErrorOf("source: {jetstream: {stream: S, durable: d}, key: id, bounded: true}"), "");
}

}  // namespace
}  // namespace weir::nats
