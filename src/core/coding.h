// Byte coding shared by the log and the state store: little-endian fixed ints, LEB128 varints,
// zigzag, and big-endian order-preserving ints for sortable keys.
// All readers take a std::string_view by reference and advance it; they return false (and leave
// the view unspecified) when the bytes run out or are malformed, never read past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace weir::coding {

inline void PutFixed32(std::string& out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);  // x86-64 and aarch64 Linux are little-endian
  out.append(b, 4);
}
inline void PutFixed64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline bool GetFixed64(std::string_view& in, uint64_t& v) {
  if (in.size() < 8) return false;
  v = DecodeFixed64(in.data());
  in.remove_prefix(8);
  return true;
}

// Writes `v` as a varint at `dst` (room for 10 bytes) and returns the end of what it wrote.
inline char* EncodeVarint64(char* dst, uint64_t v) {
  while (v >= 0x80) {
    *dst++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *dst++ = static_cast<char>(v);
  return dst;
}
inline void PutVarint64(std::string& out, uint64_t v) {
  char b[10];
  out.append(b, static_cast<size_t>(EncodeVarint64(b, v) - b));
}
inline bool GetVarint64(std::string_view& in, uint64_t& v) {
  uint64_t result = 0;
  for (int shift = 0, i = 0; shift <= 63 && i < static_cast<int>(in.size()); shift += 7, ++i) {
    uint64_t byte = static_cast<unsigned char>(in[i]);
    result |= (byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      in.remove_prefix(i + 1);
      v = result;
      return true;
    }
  }
  return false;
}
inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}
inline void PutLengthPrefixed(std::string& out, std::string_view s) {
  PutVarint64(out, s.size());
  out.append(s);
}
inline bool GetLengthPrefixed(std::string_view& in, std::string_view& s) {
  uint64_t n;
  if (!GetVarint64(in, n) || n > in.size()) return false;
  s = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

// Big-endian encodings whose byte order is the numeric order (signed ints flip the sign bit).
inline void PutBigEndian32(std::string& out, uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
               static_cast<char>(v)};
  out.append(b, 4);
}
inline void EncodeBigEndian64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (56 - 8 * i));
}
inline void PutBigEndian64(std::string& out, uint64_t v) {
  char b[8];
  EncodeBigEndian64(b, v);
  out.append(b, 8);
}
inline uint64_t DecodeBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline uint32_t DecodeBigEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline void PutOrderedInt64(std::string& out, int64_t v) {
  PutBigEndian64(out, static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
}
inline int64_t DecodeOrderedInt64(const char* p) {
  return static_cast<int64_t>(DecodeBigEndian64(p) ^ (uint64_t{1} << 63));
}

}  // namespace weir::coding
