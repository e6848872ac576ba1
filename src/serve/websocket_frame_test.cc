#include "serve/websocket_frame.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serve/masked_frame_for_test.h"

namespace weir::serve {
namespace {

using testing::AppendMaskedFrame;
using testing::MaskedFrame;

struct Parsed {
  std::vector<ClientMessage> messages;
  FrameParser::Result last;
};

// Drains the parser after feeding `bytes` in one piece.
Parsed Drain(FrameParser& parser) {
  Parsed p;
  ClientMessage m;
  while ((p.last = parser.Next(&m)) == FrameParser::Result::kMessage) p.messages.push_back(m);
  return p;
}

Parsed ParseAll(std::string_view bytes, size_t max = 1 << 20) {
  FrameParser parser(max);
  parser.Feed(bytes);
  return Drain(parser);
}

uint16_t ErrorCodeOf(std::string_view bytes, size_t max = 1 << 20) {
  FrameParser parser(max);
  parser.Feed(bytes);
  ClientMessage m;
  FrameParser::Result r;
  while ((r = parser.Next(&m)) == FrameParser::Result::kMessage) {
  }
  return r == FrameParser::Result::kError ? static_cast<uint16_t>(parser.error_code()) : 0;
}

std::string CloseFrame(uint16_t code, std::string_view reason = "") {
  std::string payload{static_cast<char>(code >> 8), static_cast<char>(code)};
  payload.append(reason);
  return MaskedFrame(Opcode::kClose, payload);
}

// Header size of an encoded server frame of `n` payload bytes.
size_t HeaderSize(size_t n) {
  std::string out;
  AppendFrame(out, Opcode::kBinary, std::string(n, 'x'));
  return out.size() - n;
}

TEST(FrameEncoder, HeaderIsTwoBytesUpTo125) {
  EXPECT_EQ(HeaderSize(0), 2u);
  EXPECT_EQ(HeaderSize(125), 2u);
  std::string out;
  AppendFrame(out, Opcode::kText, "hi");
  EXPECT_EQ(out, std::string("\x81\x02hi", 4));
}

TEST(FrameEncoder, HeaderIsFourBytesFrom126To65535) {
  EXPECT_EQ(HeaderSize(126), 4u);
  EXPECT_EQ(HeaderSize(65535), 4u);
  std::string out;
  AppendFrame(out, Opcode::kBinary, std::string(300, 'x'));
  EXPECT_EQ(out.substr(0, 4), std::string("\x82\x7e\x01\x2c", 4));
}

TEST(FrameEncoder, HeaderIsTenBytesFrom65536) {
  EXPECT_EQ(HeaderSize(65536), 10u);
  std::string out;
  AppendFrame(out, Opcode::kText, std::string(65536, 'x'));
  EXPECT_EQ(out.substr(0, 10), std::string("\x81\x7f\0\0\0\0\0\x01\0\0", 10));
}

TEST(FrameEncoder, AppendsAfterExistingBytes) {
  std::string out = "prefix";
  AppendFrame(out, Opcode::kPing, "p");
  EXPECT_EQ(out, std::string("prefix\x89\x01p", 9));
}

TEST(FrameEncoder, MessageFrameEqualsFrameOfFormattedPayload) {
  const std::vector<int64_t> offsets = {0, 7, 1234567890123, INT64_MAX};
  for (size_t size : {size_t{0}, size_t{100}, size_t{120}, size_t{121}, size_t{122}, size_t{65000},
                      size_t{65531}, size_t{65532}, size_t{70000}}) {
    for (int64_t offset : offsets) {
      const std::string message(size, 'm');
      std::string direct;
      AppendMessageFrame(direct, offset, message);
      std::string formatted;
      AppendFrame(formatted, Opcode::kText, "[" + std::to_string(offset) + "," + message + "]");
      EXPECT_EQ(direct, formatted) << "size " << size << " offset " << offset;
    }
  }
}

TEST(FrameEncoder, CloseFrameIsCodeThenReason) {
  std::string out;
  AppendCloseFrame(out, CloseCode::kNotFound, R"({"reason":"not_found","partitions":0})");
  EXPECT_EQ(out.substr(0, 4), std::string("\x88\x27\x11\x34", 4));
  EXPECT_EQ(out.substr(4), R"({"reason":"not_found","partitions":0})");
}

TEST(FrameEncoder, CloseReasonCutTo123BytesAtUtf8Boundary) {
  std::string fits(123, 'a');
  std::string out;
  AppendCloseFrame(out, CloseCode::kNormal, fits + "b");
  EXPECT_EQ(out.substr(4), fits);

  // 122 ASCII bytes then a 2-byte character: byte 123 would split it, so it is left out whole.
  const std::string split = std::string(122, 'a') + "\xc3\xa9" + "z";
  out.clear();
  AppendCloseFrame(out, CloseCode::kNormal, split);
  EXPECT_EQ(out.substr(4), std::string(122, 'a'));
  EXPECT_EQ(static_cast<uint8_t>(out[1]), 124);

  // A 4-byte character starting at byte 121.
  const std::string emoji = std::string(121, 'a') + "\xf0\x9f\x98\x80";
  out.clear();
  AppendCloseFrame(out, CloseCode::kNormal, emoji);
  EXPECT_EQ(out.substr(4), std::string(121, 'a'));
  EXPECT_TRUE(IsValidUtf8(out.substr(4)));
}

TEST(FrameParser, ParsesMaskedTextFrame) {
  Parsed p = ParseAll(MaskedFrame(Opcode::kText, "hello, world"));
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].opcode, Opcode::kText);
  EXPECT_EQ(p.messages[0].payload, "hello, world");
  EXPECT_EQ(p.last, FrameParser::Result::kNeedMore);
}

TEST(FrameParser, ParsesSixteenAndSixtyFourBitLengths) {
  const std::string medium(1000, 'q');
  const std::string large(70000, 'r');
  Parsed p =
      ParseAll(MaskedFrame(Opcode::kBinary, medium) + MaskedFrame(Opcode::kText, large), 100000);
  ASSERT_EQ(p.messages.size(), 2u);
  EXPECT_EQ(p.messages[0].payload, medium);
  EXPECT_EQ(p.messages[1].payload, large);
}

TEST(FrameParser, ReassemblesFragmentsWithControlFramesInterleaved) {
  std::string bytes = MaskedFrame(Opcode::kText, "one ", false);
  bytes += MaskedFrame(Opcode::kPing, "p1");
  bytes += MaskedFrame(Opcode::kContinuation, "two ", false);
  bytes += MaskedFrame(Opcode::kPong, "");
  bytes += MaskedFrame(Opcode::kContinuation, "three", true);
  bytes += MaskedFrame(Opcode::kBinary, "next");
  Parsed p = ParseAll(bytes);
  ASSERT_EQ(p.messages.size(), 4u);
  EXPECT_EQ(p.messages[0].opcode, Opcode::kPing);
  EXPECT_EQ(p.messages[0].payload, "p1");
  EXPECT_EQ(p.messages[1].opcode, Opcode::kPong);
  EXPECT_EQ(p.messages[2].opcode, Opcode::kText);
  EXPECT_EQ(p.messages[2].payload, "one two three");
  EXPECT_EQ(p.messages[3].opcode, Opcode::kBinary);
  EXPECT_EQ(p.messages[3].payload, "next");
}

TEST(FrameParser, ByteByByteFeedingYieldsTheSameMessages) {
  std::string bytes = MaskedFrame(Opcode::kText, std::string(300, 'a'), false);
  bytes += MaskedFrame(Opcode::kPing, "ping");
  bytes += MaskedFrame(Opcode::kContinuation, "\xc3\xa9 end");
  bytes += MaskedFrame(Opcode::kBinary, std::string(70000, 'b'));
  bytes += CloseFrame(1000, "bye");
  FrameParser parser(1 << 20);
  std::vector<ClientMessage> messages;
  for (char c : bytes) {
    parser.Feed(std::string_view(&c, 1));
    Parsed p = Drain(parser);
    ASSERT_EQ(p.last, FrameParser::Result::kNeedMore);
    for (auto& m : p.messages) messages.push_back(std::move(m));
  }
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0].opcode, Opcode::kPing);
  EXPECT_EQ(messages[1].payload, std::string(300, 'a') + "\xc3\xa9 end");
  EXPECT_EQ(messages[2].payload, std::string(70000, 'b'));
  EXPECT_EQ(messages[3].opcode, Opcode::kClose);
  EXPECT_EQ(messages[3].payload, std::string("\x03\xe8"
                                             "bye",
                                             5));
}

TEST(FrameParser, UnmaskedClientFrameIs1002) {
  std::string unmasked;
  AppendFrame(unmasked, Opcode::kText, "hi");
  EXPECT_EQ(ErrorCodeOf(unmasked), 1002);
}

TEST(FrameParser, ReservedBitsAre1002) {
  for (uint8_t rsv : {0x40, 0x20, 0x10}) {
    std::string bytes;
    AppendMaskedFrame(bytes, 0x1, "hi", 0x01020304, static_cast<uint8_t>(0x80 | rsv));
    EXPECT_EQ(ErrorCodeOf(bytes), 1002) << int(rsv);
  }
}

TEST(FrameParser, UnknownOpcodeIs1002) {
  for (uint8_t op : {0x3, 0x7, 0xB, 0xF}) {
    std::string bytes;
    AppendMaskedFrame(bytes, op, "x");
    EXPECT_EQ(ErrorCodeOf(bytes), 1002) << int(op);
  }
}

TEST(FrameParser, ControlFrameAbove125BytesIs1002) {
  EXPECT_EQ(ErrorCodeOf(MaskedFrame(Opcode::kPing, std::string(125, 'p'))), 0);
  EXPECT_EQ(ErrorCodeOf(MaskedFrame(Opcode::kPing, std::string(126, 'p'))), 1002);
}

TEST(FrameParser, FragmentedControlFrameIs1002) {
  EXPECT_EQ(ErrorCodeOf(MaskedFrame(Opcode::kPing, "p", /*fin=*/false)), 1002);
}

TEST(FrameParser, ContinuationWithoutStartIs1002) {
  EXPECT_EQ(ErrorCodeOf(MaskedFrame(Opcode::kContinuation, "x")), 1002);
}

TEST(FrameParser, NewDataFrameInsideFragmentedMessageIs1002) {
  const std::string bytes =
      MaskedFrame(Opcode::kText, "a", false) + MaskedFrame(Opcode::kText, "b");
  EXPECT_EQ(ErrorCodeOf(bytes), 1002);
}

TEST(FrameParser, MessageOfExactlyTheMaximumIsAccepted) {
  Parsed p = ParseAll(MaskedFrame(Opcode::kText, std::string(1000, 'x')), 1000);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.last, FrameParser::Result::kNeedMore);
}

TEST(FrameParser, OversizeFrameIs1009FromItsHeaderAlone) {
  const std::string frame = MaskedFrame(Opcode::kText, std::string(70000, 'x'));
  FrameParser parser(65536);
  parser.Feed(std::string_view(frame).substr(0, 10));  // header up to the 64-bit length
  ClientMessage m;
  EXPECT_EQ(parser.Next(&m), FrameParser::Result::kError);
  EXPECT_EQ(parser.error_code(), CloseCode::kTooBig);
}

TEST(FrameParser, OversizeSumOfFragmentsIs1009BeforeTheLastPayload) {
  std::string bytes = MaskedFrame(Opcode::kText, std::string(600, 'a'), false);
  bytes += MaskedFrame(Opcode::kContinuation, std::string(300, 'b'), false);
  const std::string last = MaskedFrame(Opcode::kContinuation, std::string(200, 'c'));
  bytes += last.substr(0, 4);  // header with its 16-bit length, nothing of the payload
  EXPECT_EQ(ErrorCodeOf(bytes, 1000), 1009);
}

TEST(FrameParser, InvalidUtf8TextIs1007) {
  EXPECT_EQ(ErrorCodeOf(MaskedFrame(Opcode::kText, "bad \xc3\x28")), 1007);
  const std::string fragmented =
      MaskedFrame(Opcode::kText, "ok", false) + MaskedFrame(Opcode::kContinuation, "\xff");
  EXPECT_EQ(ErrorCodeOf(fragmented), 1007);
}

TEST(FrameParser, Utf8CharacterSplitAcrossFragmentsIsValid) {
  Parsed p = ParseAll(MaskedFrame(Opcode::kText, "\xe2\x82", false) +
                      MaskedFrame(Opcode::kContinuation, "\xac"));
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].payload, "\xe2\x82\xac");
}

TEST(FrameParser, BinaryPayloadNeedNotBeUtf8) {
  Parsed p = ParseAll(MaskedFrame(Opcode::kBinary, "\xff\xfe"));
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].payload, "\xff\xfe");
}

TEST(FrameParser, ClosePayloadOfOneByteIs1002) {
  EXPECT_EQ(ErrorCodeOf(MaskedFrame(Opcode::kClose, "\x03")), 1002);
}

TEST(FrameParser, InvalidCloseCodesAre1002) {
  for (uint16_t code : {0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535}) {
    EXPECT_EQ(ErrorCodeOf(CloseFrame(code)), 1002) << code;
  }
}

TEST(FrameParser, ValidCloseCodesAndEmptyCloseAreMessages) {
  for (uint16_t code : {1000, 1001, 1002, 1003, 1007, 1011, 1014, 3000, 4409, 4999}) {
    Parsed p = ParseAll(CloseFrame(code, "reason"));
    ASSERT_EQ(p.messages.size(), 1u) << code;
    EXPECT_EQ(p.messages[0].opcode, Opcode::kClose);
  }
  Parsed empty = ParseAll(MaskedFrame(Opcode::kClose, ""));
  ASSERT_EQ(empty.messages.size(), 1u);
  EXPECT_EQ(empty.messages[0].payload, "");
}

TEST(FrameParser, CloseReasonNotUtf8Is1007) {
  EXPECT_EQ(ErrorCodeOf(CloseFrame(1000, "\xc0\xaf")), 1007);
}

TEST(FrameParser, LengthWithTopBitSetIs1002) {
  std::string bytes = "\x82\xff";
  bytes += std::string("\x80\0\0\0\0\0\0\x01", 8);
  bytes += "mask";
  EXPECT_EQ(ErrorCodeOf(bytes, SIZE_MAX), 1002);
}

TEST(FrameParser, ErrorIsFinal) {
  FrameParser parser(1000);
  parser.Feed(MaskedFrame(Opcode::kContinuation, "x"));
  ClientMessage m;
  EXPECT_EQ(parser.Next(&m), FrameParser::Result::kError);
  parser.Feed(MaskedFrame(Opcode::kText, "fine"));
  EXPECT_EQ(parser.Next(&m), FrameParser::Result::kError);
  EXPECT_EQ(parser.error_code(), CloseCode::kProtocolError);
  EXPECT_FALSE(parser.error_reason().empty());
}

TEST(Utf8, RejectsOverlongsSurrogatesAndCodePointsAboveTheMaximum) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));          // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // U+D800, a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation byte
}

}  // namespace
}  // namespace weir::serve
