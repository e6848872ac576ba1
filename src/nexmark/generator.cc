#include "nexmark/generator.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "core/prefetch.h"
#include "nexmark/java_random.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WEIR_NEXMARK_AVX2 1
#else
#define WEIR_NEXMARK_AVX2 0
#endif

namespace weir::nexmark {
namespace {

constexpr int kLettersPerDraw = 6;  // nextExactString: log_26(2^31) letters per nextInt()
constexpr int kLetterBlockDraws = internal::kLetterBlockDraws;
static_assert(kLetterBlockDraws == JavaRandom::kJumpBlock);

// PersonGenerator: few states and cities so that queries joining on them find results.
constexpr std::array<std::string_view, 6> kUsStates = {"AZ", "CA", "ID", "OR", "WA", "WY"};
constexpr std::array<std::string_view, 10> kUsCities = {
    "Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
    "Bend",    "Redmond",     "Seattle",       "Kent",  "Cheyenne"};
constexpr std::array<std::string_view, 11> kFirstNames = {
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"};
constexpr std::array<std::string_view, 9> kLastNames = {
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"};

constexpr int kMinStringLength = 3;    // StringsGenerator.MIN_STRING_LENGTH
constexpr int kMaxStringLength = 100;  // the longest nextString the generator asks for

template <size_t N>
std::string_view Pick(const std::array<std::string_view, N>& choices, JavaRandom& random) {
  return choices[static_cast<size_t>(random.NextInt(static_cast<int32_t>(N)))];
}

// LongGenerator.nextLong: uniform in [0, n), with the reference's skewed fallback for huge n.
[[gnu::always_inline]] inline int64_t NextLong(JavaRandom& random, int64_t n) {
  if (n < INT32_MAX) return random.NextInt(static_cast<int32_t>(n));
  return std::llabs(random.NextLong() % n);
}

// StringsGenerator.nextString, made in `letters`: 3..max_length-1 letters, each a `space` with
// probability 1/13. Only spaces are trimmed, as String.trim() does for this alphabet.
// REQUIRES: max_length <= kMaxStringLength.
using StringBuffer = char[kMaxStringLength];
std::string_view NextString(JavaRandom& random, int max_length, StringBuffer& letters,
                            char space = ' ') {
  const int len = kMinStringLength + random.NextInt(max_length - kMinStringLength);
  // Each letter is nextInt(13) == 0 ? space : 'a' + nextInt(26), one draw or two. Both states
  // are computed from the letter's first and the branch bets on a letter, so the next letter
  // does not wait for the remainder by 13: the chain is one multiply-add a letter. nextInt(n)
  // rejects a draw in the last partial range of 2^31 and draws again: then NextInt does it.
  constexpr uint32_t kAccept13 = 0x80000000u - 0x80000000u % 13;
  constexpr uint32_t kAccept26 = 0x80000000u - 0x80000000u % 26;
  constexpr JavaRandom::Jump kOne = JavaRandom::kJumps[0];
  constexpr JavaRandom::Jump kTwo = JavaRandom::kJumps[1];
  uint64_t s = random.state();
  for (int i = 0; i < len; ++i) {
    const uint64_t one = s * kOne.multiplier + kOne.addend;
    const uint64_t two = s * kTwo.multiplier + kTwo.addend;
    const uint32_t r13 = static_cast<uint32_t>(one >> 17) & 0x7FFFFFFF;  // Next(31)
    const uint32_t r26 = static_cast<uint32_t>(two >> 17) & 0x7FFFFFFF;
    if (r13 >= kAccept13 || r26 >= kAccept26) [[unlikely]] {
      random.set_state(s);
      letters[i] = random.NextInt(13) == 0 ? space : static_cast<char>('a' + random.NextInt(26));
      s = random.state();
    } else if (r13 % 13 == 0) [[unlikely]] {
      letters[i] = space;
      s = one;
    } else {
      letters[i] = static_cast<char>('a' + r26 % 26);
      s = two;
    }
  }
  random.set_state(s);
  int begin = 0;
  int end = len;
  if (space == ' ') {
    while (begin < end && letters[begin] == ' ') ++begin;
    while (end > begin && letters[end - 1] == ' ') --end;
  }
  return {letters + begin, static_cast<size_t>(end - begin)};
}

void AssignNextString(JavaRandom& random, int max_length, std::string& out) {
  StringBuffer letters;
  out = NextString(random, max_length, letters);
}

// kDigitTriples[v], v < 26^3: the three lowest base-26 digits of v, one a byte, lowest first.
constexpr uint32_t kTriple = 26 * 26 * 26;
constexpr std::array<uint32_t, kTriple> kDigitTriples = [] {
  std::array<uint32_t, kTriple> triples{};
  for (uint32_t v = 0; v < kTriple; ++v) {
    triples[v] = (v % 26) | ((v / 26 % 26) << 8) | ((v / 676) << 16);
  }
  return triples;
}();

// The six letters of one draw, portably: two lookups of three digits and one add or subtract of
// all six at once (no byte carries or borrows: digits are < 26), the first in the low byte.
uint64_t SixLetters(int32_t rnd) {
  const uint32_t negative = static_cast<uint32_t>(rnd >> 31);  // all ones or zero
  const uint32_t magnitude = (static_cast<uint32_t>(rnd) ^ negative) - negative;
  const uint32_t high = magnitude / kTriple;
  const uint64_t digits =
      kDigitTriples[magnitude - high * kTriple] | (uint64_t{kDigitTriples[high % kTriple]} << 24);
  const uint64_t sign = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(negative)));
  return 0x616161616161ULL + ((digits ^ sign) - sign);
}

void PortableLetters(const int32_t* draws, char* out) {
  for (int k = 0; k < kLetterBlockDraws; ++k, out += kLettersPerDraw) {
    const uint64_t six = SixLetters(draws[k]);
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out, &six, kLettersPerDraw);
    } else {
      for (int i = 0; i < kLettersPerDraw; ++i) out[i] = static_cast<char>(six >> (8 * i));
    }
  }
}

#if WEIR_NEXMARK_AVX2
// Letters from digits picked out of a and b, 'a' plus or minus each as its draw's sign picked
// out of `sign` says.
__attribute__((target("avx2"), always_inline)) inline __m256i Avx2SignedLetters(
    __m256i a, __m256i b, __m256i sign, __m256i a_mask, __m256i b_mask, __m256i sign_mask) {
  const __m256i digits =
      _mm256_or_si256(_mm256_shuffle_epi8(a, a_mask), _mm256_shuffle_epi8(b, b_mask));
  const __m256i s = _mm256_shuffle_epi8(sign, sign_mask);
  return _mm256_add_epi8(_mm256_set1_epi8('a'), _mm256_sub_epi8(_mm256_xor_si256(digits, s), s));
}

// (x * magic) >> shift for each unsigned 32-bit lane of x, from the 32x32->64-bit products of
// the even lanes and of the odd ones. REQUIRES: the quotient fits 32 bits, 32 <= shift < 64.
template <int kShift>
__attribute__((target("avx2"), always_inline)) inline __m256i Avx2Divide(__m256i x, __m256i magic) {
  const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(x, magic), kShift);
  // The odd lanes' quotients land in the high halves of the 64-bit lanes.
  const __m256i odd =
      _mm256_srli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), magic), kShift - 32);
  return _mm256_blend_epi32(even, odd, 0xAA);
}

// PortableLetters with AVX2: the letters of 8 draws, in 32-bit lanes, 16 three-digit groups at
// once in 16-bit lanes. Each 128-bit half holds 4 draws and makes their 24 letters.
__attribute__((target("avx2"), always_inline)) inline void Avx2Letters(__m256i r, char* out) {
  const __m256i sign = _mm256_srai_epi32(r, 31);
  const __m256i magnitude = _mm256_abs_epi32(r);  // INT_MIN gives 2^31, right as unsigned
  // Three digits, and three more: magnitude / 26^3 and magnitude / 26^6, both from magnitude
  // (m < 2^31 + 1: (m * 0x7751AEAB) >> 45 = m / 26^3, (m * 0x379D0A73) >> 58 = m / 26^6).
  const __m256i high = Avx2Divide<45>(magnitude, _mm256_set1_epi64x(0x7751AEAB));
  const __m256i wraps = Avx2Divide<58>(magnitude, _mm256_set1_epi64x(0x379D0A73));
  const __m256i triple = _mm256_set1_epi32(static_cast<int32_t>(kTriple));
  const __m256i low_digits = _mm256_sub_epi32(magnitude, _mm256_mullo_epi32(high, triple));
  const __m256i high_digits = _mm256_sub_epi32(high, _mm256_mullo_epi32(wraps, triple));
  // 16-bit lanes, per half [low 0..3, high 0..3]; v / 26 = (v * 20165) >> 19 for v < 26^3.
  const __m256i v = _mm256_packus_epi32(low_digits, high_digits);
  const __m256i by26 = _mm256_set1_epi16(20165);
  const __m256i base = _mm256_set1_epi16(26);
  const __m256i q1 = _mm256_srli_epi16(_mm256_mulhi_epu16(v, by26), 3);
  const __m256i d0 = _mm256_sub_epi16(v, _mm256_mullo_epi16(q1, base));
  const __m256i d2 = _mm256_srli_epi16(_mm256_mulhi_epu16(q1, by26), 3);
  const __m256i d1 = _mm256_sub_epi16(q1, _mm256_mullo_epi16(d2, base));
  // Per half: a = 16-bit lanes d0 | d1 << 8 (draw j's low group at bytes 2j, 2j + 1, its high
  // group at 8 + 2j), b = bytes d2 (low group of draw j at byte j, high group at 4 + j).
  const __m256i a = _mm256_or_si256(d0, _mm256_slli_epi16(d1, 8));
  const __m256i b = _mm256_packus_epi16(d2, d2);
  // Letters 0..15 of a half from a and b, then letters 16..23; the sign of draw j spread over
  // its six letters.
  const __m256i a_first = _mm256_setr_epi8(0, 1, -1, 8, 9, -1, 2, 3, -1, 10, 11, -1, 4, 5, -1, 12,
                                           0, 1, -1, 8, 9, -1, 2, 3, -1, 10, 11, -1, 4, 5, -1, 12);
  const __m256i b_first =
      _mm256_setr_epi8(-1, -1, 0, -1, -1, 4, -1, -1, 1, -1, -1, 5, -1, -1, 2, -1, -1, -1, 0, -1, -1,
                       4, -1, -1, 1, -1, -1, 5, -1, -1, 2, -1);
  const __m256i a_rest =
      _mm256_setr_epi8(13, -1, 6, 7, -1, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, 13, -1, 6, 7,
                       -1, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b_rest =
      _mm256_setr_epi8(-1, 6, -1, -1, 3, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1, -1, 6, -1, -1,
                       3, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i sign_first = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8,  //
                                              0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8);
  const __m256i sign_rest =
      _mm256_setr_epi8(8, 8, 12, 12, 12, 12, 12, 12, -1, -1, -1, -1, -1, -1, -1, -1, 8, 8, 12, 12,
                       12, 12, 12, 12, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i first = Avx2SignedLetters(a, b, sign, a_first, b_first, sign_first);
  const __m256i rest = Avx2SignedLetters(a, b, sign, a_rest, b_rest, sign_rest);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(first));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 16), _mm256_castsi256_si128(rest));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 24), _mm256_extracti128_si256(first, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 40), _mm256_extracti128_si256(rest, 1));
}

__attribute__((target("avx2"))) void Avx2LettersOfDraws(const int32_t* draws, char* out) {
  Avx2Letters(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(draws)), out);
}

// The letters of the 8 * blocks draws after `state`, the draws computed in vector lanes too
// (from memory they would wait on the stores of scalar code). Draw k is bits 16..47 of
// s * a_k + c_k (the jump of k + 1 steps); with s = sh 2^32 + sl and a = ah 2^32 + al that is
// (sl * al + c_k) >> 16, a 64-bit product, plus (sh * al + sl * ah) << 16 in 32 bits.
__attribute__((target("avx2"))) void Avx2LettersOfState(uint64_t state, int blocks, char* out) {
  static constexpr auto kJumps = JavaRandom::kJumps;
  static_assert(kJumps.size() == kLetterBlockDraws);
  auto low = [](int k) { return static_cast<int64_t>(kJumps[k].multiplier & 0xFFFFFFFF); };
  auto high = [](int k) { return static_cast<int32_t>(kJumps[k].multiplier >> 32); };
  auto add = [](int k) { return static_cast<int64_t>(kJumps[k].addend); };
  // The even draws in the 64-bit lanes of one register, the odd ones in another.
  const __m256i low_even = _mm256_setr_epi64x(low(0), low(2), low(4), low(6));
  const __m256i low_odd = _mm256_setr_epi64x(low(1), low(3), low(5), low(7));
  const __m256i add_even = _mm256_setr_epi64x(add(0), add(2), add(4), add(6));
  const __m256i add_odd = _mm256_setr_epi64x(add(1), add(3), add(5), add(7));
  const __m256i low32 = _mm256_setr_epi32(
      static_cast<int32_t>(low(0)), static_cast<int32_t>(low(1)), static_cast<int32_t>(low(2)),
      static_cast<int32_t>(low(3)), static_cast<int32_t>(low(4)), static_cast<int32_t>(low(5)),
      static_cast<int32_t>(low(6)), static_cast<int32_t>(low(7)));
  const __m256i high32 =
      _mm256_setr_epi32(high(0), high(1), high(2), high(3), high(4), high(5), high(6), high(7));
  for (; blocks > 0; --blocks, out += kLetterBlockDraws * kLettersPerDraw) {
    const __m256i sl = _mm256_set1_epi32(static_cast<int32_t>(state));
    const __m256i sh = _mm256_set1_epi32(static_cast<int32_t>(state >> 32));
    const __m256i even = _mm256_add_epi64(_mm256_mul_epu32(sl, low_even), add_even);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epu32(sl, low_odd), add_odd);
    const __m256i low_part =
        _mm256_blend_epi32(_mm256_srli_epi64(even, 16), _mm256_slli_epi64(odd, 16), 0xAA);
    const __m256i cross =
        _mm256_add_epi32(_mm256_mullo_epi32(sh, low32), _mm256_mullo_epi32(sl, high32));
    Avx2Letters(_mm256_add_epi32(low_part, _mm256_slli_epi32(cross, 16)), out);
    state = state * kJumps[kLetterBlockDraws - 1].multiplier + kJumps[kLetterBlockDraws - 1].addend;
  }
}
#endif

// StringsGenerator.nextExactString into `out`. A negative nextInt() gives characters below 'a'
// ('<'..'`'), as Java's signed remainder does in the reference.
void NextExactString(JavaRandom& random, int length, bool simd, std::string& out) {
  constexpr int kBlockLetters = kLetterBlockDraws * kLettersPerDraw;
  const int draws = (length + kLettersPerDraw - 1) / kLettersPerDraw;
  const int blocks = (draws + kLetterBlockDraws - 1) / kLetterBlockDraws;
  // Made where they are kept: whole blocks, then cut to the length. An event's string is about
  // as long as the last one's, so the resize fills a few bytes if any.
  out.resize(static_cast<size_t>(blocks) * kBlockLetters);
  internal::LettersOfState(random.state(), blocks, out.data(), simd);
  random.Skip(draws);
  out.resize(static_cast<size_t>(length));
}

// Java's Math.round for the values used here.
// REQUIRES: 0 <= x < 2^62. Truncation is floor there, without a call to floor (SSE2 has none).
int64_t JavaRound(double x) { return static_cast<int64_t>(x + 0.5); }

// StringsGenerator.nextExtra into `out`: a string making current_size + length average
// `average`, uniform within +-20% of the remainder.
[[gnu::always_inline]] inline void NextExtra(JavaRandom& random, int64_t current_size,
                                             int32_t average, bool simd, std::string& out) {
  if (current_size > average) {
    out.clear();
    return;
  }
  const int64_t remaining = average - current_size;
  const int32_t delta = static_cast<int32_t>(JavaRound(static_cast<double>(remaining) * 0.2));
  const int64_t min_size = remaining - delta;
  const int64_t size = min_size + (delta == 0 ? 0 : random.NextInt(2 * delta));
  NextExactString(random, static_cast<int>(size), simd, out);
}

// PriceGenerator.nextPrice: cents, log-uniform between $1 and $1,000,000, that is
// Math.round(Math.pow(10.0, y) * 100.0) with y = u * 6. exp costs half of pow and e^(y ln 10)
// is within a relative 3e-15 of pow's 10^y (both are within an ulp; y ln 10 adds up to 2e-15):
// where that could round to another cent (within a relative 1e-14 of a half cent, about one
// price in 10^7) pow decides, as the reference does, so every price is pow's.
[[gnu::always_inline]] inline int64_t NextPrice(JavaRandom& random) {
  const double y = random.NextDouble() * 6.0;
  const double cents = std::exp(y * 2.302585092994045684) * 100.0;
  const double shifted = cents + 0.5;
  const int64_t whole = static_cast<int64_t>(shifted);
  const double fraction = shifted - static_cast<double>(whole);
  const double margin = cents * 1e-14 + 1e-12;
  if (fraction < margin || fraction > 1.0 - margin) [[unlikely]] {
    return JavaRound(std::pow(10.0, y) * 100.0);
  }
  return whole;
}

// Appends 0 <= v < 10000 as String.format("%04d").
void AppendFourDigits(std::string& out, int32_t v) {
  const char digits[4] = {static_cast<char>('0' + v / 1000), static_cast<char>('0' + v / 100 % 10),
                          static_cast<char>('0' + v / 10 % 10), static_cast<char>('0' + v % 10)};
  out.append(digits, sizeof(digits));
}

// nexmark-flink BidGenerator.getBaseUrl without its constant parts: three nextString(5) with
// '_' for spaces, each followed by '/'. The reference draws it from an unseeded Random; here it
// is drawn from `random` so the stream stays a function of the config.
uint8_t ChannelPath(JavaRandom& random, char (&path)[15]) {
  uint8_t size = 0;
  for (int i = 0; i < 3; ++i) {
    StringBuffer letters;
    const std::string_view segment = NextString(random, 5, letters, '_');  // 3 or 4 letters
    std::memcpy(path + size, segment.data(), segment.size());
    size += static_cast<uint8_t>(segment.size());
    path[size++] = '/';
  }
  return size;
}

// Writes the decimal digits of v into digits, returns how many.
template <size_t N>
uint8_t Decimal(int64_t v, char (&digits)[N]) {
  const std::string text = std::to_string(v);
  WEIR_CHECK(text.size() <= N, "too many digits");
  std::memcpy(digits, text.data(), text.size());
  return static_cast<uint8_t>(text.size());
}

// Integer.reverse: the bits of a 32-bit int in reverse order.
int32_t ReverseBits(int32_t v) {
  uint32_t x = static_cast<uint32_t>(v);
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return static_cast<int32_t>(r);
}

// SplitMix64 finalizer: spreads a user seed over all bits before it is XORed with event ids.
int64_t MixSeed(int64_t seed) {
  if (seed == 0) return 0;
  uint64_t z = static_cast<uint64_t>(seed) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return static_cast<int64_t>(z ^ (z >> 31));
}

// Writes members as compact JSON text after an opening "{\"type\":...".
struct JsonSink {
  std::string& out;
  void operator()(std::string_view name, int64_t v) const {
    Key(name);
    char digits[20];  // INT64_MIN has 20 characters
    out.append(digits, std::to_chars(std::begin(digits), std::end(digits), v).ptr);
  }
  void operator()(std::string_view name, std::string_view v) const {
    Key(name);
    AppendJsonString(out, v);
  }
  void Key(std::string_view name) const {
    out += ",\"";
    out += name;
    out += "\":";
  }
};

// Writes members into an object, over the members it had.
struct ObjectWriterSink {
  Value::ObjectWriter& members;
  void operator()(std::string_view name, int64_t v) const { members.Add(name) = v; }
  void operator()(std::string_view name, std::string_view v) const {
    members.Add(name).AssignString(v);
  }
};

}  // namespace

namespace internal {

bool CpuHasSimdLetters() {
#if WEIR_NEXMARK_AVX2
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

void LettersOfDraws(const int32_t* draws, char* out, bool simd) {
#if WEIR_NEXMARK_AVX2
  if (simd) return Avx2LettersOfDraws(draws, out);
#endif
  PortableLetters(draws, out);
}

void LettersOfState(uint64_t state, int blocks, char* out, bool simd) {
#if WEIR_NEXMARK_AVX2
  if (simd) return Avx2LettersOfState(state, blocks, out);
#endif
  JavaRandom random(0);
  random.set_state(state);
  for (; blocks > 0; --blocks, out += kLetterBlockDraws * kLettersPerDraw) {
    int32_t draws[kLetterBlockDraws];
    random.NextIntBlock(draws, kLetterBlockDraws);
    PortableLetters(draws, out);
  }
}

}  // namespace internal

Status NexmarkConfig::Validate() const {
  auto positive = [](int64_t v, const char* name) {
    return v > 0 ? Status::OK() : Status::InvalidArgument(std::string(name) + " must be > 0");
  };
  if (!(events_per_second > 0) || !std::isfinite(events_per_second)) {
    return Status::InvalidArgument("events_per_second must be a positive number");
  }
  WEIR_RETURN_IF_ERROR(positive(out_of_order_group_size, "out_of_order_group_size"));
  WEIR_RETURN_IF_ERROR(positive(hot_auction_ratio, "hot_auction_ratio"));
  WEIR_RETURN_IF_ERROR(positive(hot_sellers_ratio, "hot_sellers_ratio"));
  WEIR_RETURN_IF_ERROR(positive(hot_bidders_ratio, "hot_bidders_ratio"));
  WEIR_RETURN_IF_ERROR(positive(num_in_flight_auctions, "num_in_flight_auctions"));
  WEIR_RETURN_IF_ERROR(positive(num_active_people, "num_active_people"));
  WEIR_RETURN_IF_ERROR(positive(avg_person_byte_size, "avg_person_byte_size"));
  WEIR_RETURN_IF_ERROR(positive(avg_auction_byte_size, "avg_auction_byte_size"));
  WEIR_RETURN_IF_ERROR(positive(avg_bid_byte_size, "avg_bid_byte_size"));
  if (person_id_lead < 0 || auction_id_lead < 0) {
    return Status::InvalidArgument("person_id_lead and auction_id_lead must be >= 0");
  }
  return Status::OK();
}

NexmarkGenerator::NexmarkGenerator(NexmarkConfig config)
    : config_(config),
      inter_event_delay_us_(1'000'000.0 / config.events_per_second),
      seed_mix_(MixSeed(config.seed)),
      simd_letters_(internal::CpuHasSimdLetters()) {
  const Status valid = config_.Validate();
  WEIR_CHECK(valid.ok(), valid.ToString());
  // The reference fills a cache of channel urls lazily from unseeded randoms; precomputing them
  // from seeded ones gives the same distribution and keeps EventAt pure and lock-free.
  static_assert(sizeof(ChannelParts) == 32, "two channels a cache line");
  channels_.resize(std::size(kHotChannels) + kNumChannels);
  for (int32_t i = 0; i < static_cast<int32_t>(std::size(kHotChannels)); ++i) {
    JavaRandom random(seed_mix_ ^ (-1 - i));
    ChannelParts& parts = channels_[static_cast<size_t>(i)];
    parts.sizes = ChannelPath(random, parts.path);
  }
  for (int32_t channel = 0; channel < kNumChannels; ++channel) {
    JavaRandom random(seed_mix_ ^ channel);
    ChannelParts& parts = channels_[std::size(kHotChannels) + static_cast<size_t>(channel)];
    const uint8_t path_size = ChannelPath(random, parts.path);
    if (random.NextInt(10) > 0) {
      // Java's Math.abs(Integer.reverse(c)): INT_MIN stays INT_MIN (std::abs would overflow).
      const int32_t reversed = ReverseBits(channel);
      parts.id_size =
          Decimal(reversed == INT32_MIN ? int64_t{reversed} : std::abs(reversed), parts.id);
    }
    parts.sizes = static_cast<uint8_t>(path_size | Decimal(channel, parts.number) << 4);
  }
}

void NexmarkGenerator::AssignUrl(const ChannelParts& parts, std::string& url) {
  // Made with copies of constant sizes, each overwriting the spare bytes of the one before.
  static constexpr std::string_view kHost = "https://www.nexmark.com/";
  static constexpr std::string_view kQuery = "item.htm?query=1";
  static constexpr std::string_view kChannelId = "&channel_id=";
  char text[kHost.size() + 16 + kQuery.size() + kChannelId.size() + 16];
  char* end = text;
  std::memcpy(end, kHost.data(), kHost.size());
  end += kHost.size();
  std::memcpy(end, parts.path, 16);
  end += parts.path_size();
  std::memcpy(end, kQuery.data(), kQuery.size());
  end += kQuery.size();
  if (parts.id_size > 0) {
    std::memcpy(end, kChannelId.data(), kChannelId.size());
    end += kChannelId.size();
    std::memcpy(end, parts.id, 16);
    end += parts.id_size;
  }
  url.assign(text, static_cast<size_t>(end - text));
}

int64_t NexmarkGenerator::EventIdAt(int64_t n) const {
  const int64_t g = config_.out_of_order_group_size;
  if (g == 1) return n;  // in order, without two divisions
  return (n / g) * g + (n * 953) % g;
}

EventTime NexmarkGenerator::TimestampForNumber(int64_t n) const {
  return EventTime(config_.first_event_ms +
                   static_cast<int64_t>(static_cast<double>(n) * inter_event_delay_us_) / 1000);
}

Watermark NexmarkGenerator::GeneratorWatermark(int64_t n) const {
  const int64_t g = config_.out_of_order_group_size;
  return Watermark(TimestampForNumber((n / g) * g).value());
}

EventKind NexmarkGenerator::KindOfEventId(int64_t event_id) {
  const int64_t rem = event_id % kProportionDenominator;
  if (rem < kPersonProportion) return EventKind::kPerson;
  if (rem < kPersonProportion + kAuctionProportion) return EventKind::kAuction;
  return EventKind::kBid;
}

int64_t NexmarkGenerator::LastBase0PersonId(int64_t event_id) {
  const int64_t epoch = event_id / kProportionDenominator;
  int64_t offset = event_id % kProportionDenominator;
  if (offset >= kPersonProportion) offset = kPersonProportion - 1;
  return epoch * kPersonProportion + offset;
}

int64_t NexmarkGenerator::LastBase0AuctionId(int64_t event_id) {
  int64_t epoch = event_id / kProportionDenominator;
  int64_t offset = event_id % kProportionDenominator;
  if (offset < kPersonProportion) {
    // A person: the last auction is the last of the previous epoch.
    epoch--;
    offset = kAuctionProportion - 1;
  } else if (offset >= kPersonProportion + kAuctionProportion) {
    offset = kAuctionProportion - 1;
  } else {
    offset -= kPersonProportion;
  }
  return epoch * kAuctionProportion + offset;
}

int64_t NexmarkGenerator::NextBase0PersonId(int64_t event_id, JavaRandom& random) const {
  // One of the most recent num_active_people, or up to person_id_lead ids not yet generated.
  const int64_t num_people = LastBase0PersonId(event_id) + 1;
  const int64_t active = std::min<int64_t>(num_people, config_.num_active_people);
  const int64_t n = NextLong(random, active + config_.person_id_lead);
  return num_people - active + n;
}

int64_t NexmarkGenerator::NextBase0AuctionId(int64_t event_id, JavaRandom& random) const {
  // One of the auctions likely still in flight, or up to auction_id_lead ids ahead.
  const int64_t max_auction = LastBase0AuctionId(event_id);
  const int64_t min_auction = std::max<int64_t>(max_auction - config_.num_in_flight_auctions, 0);
  return min_auction + NextLong(random, max_auction - min_auction + 1 + config_.auction_id_lead);
}

void NexmarkGenerator::NextPerson(int64_t event_id, JavaRandom& random, Person& p) const {
  p.id = LastBase0PersonId(event_id) + kFirstPersonId;
  p.name = Pick(kFirstNames, random);
  p.name += ' ';
  p.name += Pick(kLastNames, random);
  // The domain is drawn before the name: the order of the stream as first published (and
  // pinned), where the two draws sat in one expression; Java draws the name first.
  StringBuffer domain_letters;
  StringBuffer name_letters;
  const std::string_view domain = NextString(random, 5, domain_letters);
  const std::string_view name = NextString(random, 7, name_letters);
  p.email_address = name;
  p.email_address += '@';
  p.email_address += domain;
  p.email_address += ".com";
  p.credit_card.clear();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) p.credit_card += ' ';
    AppendFourDigits(p.credit_card, random.NextInt(10000));
  }
  p.city = Pick(kUsCities, random);
  p.state = Pick(kUsStates, random);
  const int64_t current_size =
      8 + static_cast<int64_t>(p.name.size() + p.email_address.size() + p.credit_card.size() +
                               p.city.size() + p.state.size());
  NextExtra(random, current_size, config_.avg_person_byte_size, simd_letters_, p.extra);
}

void NexmarkGenerator::NextAuction(int64_t event_id, JavaRandom& random, int64_t timestamp,
                                   Auction& a) const {
  a.id = LastBase0AuctionId(event_id) + kFirstAuctionId;
  if (random.NextInt(config_.hot_sellers_ratio) > 0) {
    a.seller = (LastBase0PersonId(event_id) / kHotBatch) * kHotBatch;
  } else {
    a.seller = NextBase0PersonId(event_id, random);
  }
  a.seller += kFirstPersonId;
  a.category = kFirstCategoryId + random.NextInt(kNumCategories);
  a.initial_bid = NextPrice(random);
  // AuctionGenerator.nextAuctionLengthMs: uniform up to twice the time until
  // num_in_flight_auctions more auctions exist, so that many are open on average.
  const int64_t events_for_auctions =
      (static_cast<int64_t>(config_.num_in_flight_auctions) * kProportionDenominator) /
      kAuctionProportion;
  const int64_t future_auction = TimestampForNumber(event_id + events_for_auctions).value();
  const int64_t horizon_ms = future_auction - timestamp;
  a.expires_ms = timestamp + 1 + NextLong(random, std::max<int64_t>(horizon_ms * 2, 1));
  AssignNextString(random, 20, a.item_name);
  AssignNextString(random, 100, a.description);
  a.reserve = a.initial_bid + NextPrice(random);
  const int64_t current_size =
      8 + static_cast<int64_t>(a.item_name.size() + a.description.size()) + 8 * 5;
  NextExtra(random, current_size, config_.avg_auction_byte_size, simd_letters_, a.extra);
}

void NexmarkGenerator::NextBid(int64_t event_id, JavaRandom& random, Bid& b) const {
  if (random.NextInt(config_.hot_auction_ratio) > 0) {
    b.auction = (LastBase0AuctionId(event_id) / kHotBatch) * kHotBatch;
  } else {
    b.auction = NextBase0AuctionId(event_id, random);
  }
  b.auction += kFirstAuctionId;
  if (random.NextInt(config_.hot_bidders_ratio) > 0) {
    // The second person of the batch, so hot bidders and hot sellers differ.
    b.bidder = (LastBase0PersonId(event_id) / kHotBatch) * kHotBatch + 1;
  } else {
    b.bidder = NextBase0PersonId(event_id, random);
  }
  b.bidder += kFirstPersonId;
  b.price = NextPrice(random);
  const char* hot_name = nullptr;
  const ChannelParts* parts;
  if (random.NextInt(kHotChannelsRatio) > 0) {
    const auto i = static_cast<size_t>(random.NextInt(std::size(kHotChannels)));
    hot_name = kHotChannels[i];
    parts = &channels_[i];
  } else {
    parts = &channels_[std::size(kHotChannels) + static_cast<size_t>(random.NextInt(kNumChannels))];
  }
  // The channel's parts come from L2 cache (or further) while extra is made.
  PrefetchForRead(parts);
  NextExtra(random, 8 * 4, config_.avg_bid_byte_size, simd_letters_, b.extra);
  if (hot_name != nullptr) {
    b.channel = hot_name;
  } else {
    char name[12] = {'c', 'h', 'a', 'n', 'n', 'e', 'l', '-'};
    std::memcpy(name + 8, parts->number, sizeof(parts->number));
    b.channel.assign(name, 8 + parts->number_size());
  }
  AssignUrl(*parts, b.url);
}

void NexmarkGenerator::EventAt(int64_t n, Event& out) const {
  WEIR_CHECK(n >= 0, "event number must be >= 0");
  out.number = n;
  out.event_id = EventIdAt(n);
  out.timestamp = TimestampForNumber(out.event_id);
  JavaRandom random(out.event_id ^ seed_mix_);
  switch (KindOfEventId(out.event_id)) {
    case EventKind::kPerson:
      NextPerson(out.event_id, random, out.MakePerson());
      break;
    case EventKind::kAuction:
      NextAuction(out.event_id, random, out.timestamp.value(), out.MakeAuction());
      break;
    case EventKind::kBid:
      NextBid(out.event_id, random, out.MakeBid());
      break;
  }
}

Event NexmarkGenerator::EventAt(int64_t n) const {
  Event e;
  EventAt(n, e);
  return e;
}

int64_t Event::ModelBytes() const {
  switch (kind()) {
    case EventKind::kPerson: {
      const Person& p = person_;
      return 8 +
             static_cast<int64_t>(p.name.size() + p.email_address.size() + p.credit_card.size() +
                                  p.city.size() + p.state.size() + p.extra.size());
    }
    case EventKind::kAuction: {
      const Auction& a = auction_;
      return 8 + 8 * 5 +
             static_cast<int64_t>(a.item_name.size() + a.description.size() + a.extra.size());
    }
    case EventKind::kBid:
      return 8 * 4 + static_cast<int64_t>(bid_.extra.size());
  }
  return 0;
}

std::string_view Event::TypeName() const {
  switch (kind()) {
    case EventKind::kPerson:
      return "person";
    case EventKind::kAuction:
      return "auction";
    case EventKind::kBid:
      return "bid";
  }
  return {};
}

template <typename Sink>
void Event::VisitFields(const Sink& sink) const {
  const int64_t t = timestamp.value();
  switch (kind_) {
    case EventKind::kPerson: {
      const Person& p = person_;
      sink("id", p.id);
      sink("name", p.name);
      sink("emailAddress", p.email_address);
      sink("creditCard", p.credit_card);
      sink("city", p.city);
      sink("state", p.state);
      sink("dateTime", t);
      sink("extra", p.extra);
      break;
    }
    case EventKind::kAuction: {
      const Auction& a = auction_;
      sink("id", a.id);
      sink("itemName", a.item_name);
      sink("description", a.description);
      sink("initialBid", a.initial_bid);
      sink("reserve", a.reserve);
      sink("dateTime", t);
      sink("expires", a.expires_ms);
      sink("seller", a.seller);
      sink("category", a.category);
      sink("extra", a.extra);
      break;
    }
    case EventKind::kBid: {
      const Bid& b = bid_;
      sink("auction", b.auction);
      sink("bidder", b.bidder);
      sink("price", b.price);
      sink("channel", b.channel);
      sink("url", b.url);
      sink("dateTime", t);
      sink("extra", b.extra);
      break;
    }
  }
}

void Event::AppendJson(std::string& out) const {
  out += "{\"type\":\"";
  out += TypeName();
  out += '"';
  VisitFields(JsonSink{out});
  out += '}';
}

void Event::ForEachField(FieldSink& sink) const {
  struct Adapter {
    FieldSink& sink;
    void operator()(std::string_view name, int64_t v) const { sink.Int(name, v); }
    void operator()(std::string_view name, std::string_view v) const { sink.Text(name, v); }
  };
  VisitFields(Adapter{sink});
}

void Event::WriteValue(Value& into) const {
  Value::ObjectWriter members(into);
  members.Add("type").AssignString(TypeName());
  VisitFields(ObjectWriterSink{members});
}

Value Event::ToValue() const {
  Value::Object members;
  members.reserve(11);  // the most fields of a type (auction), "type" included
  Value value(std::move(members));
  WriteValue(value);
  return value;
}

}  // namespace weir::nexmark
