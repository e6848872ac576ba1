// SHA-256 (FIPS 180-4), and the digest of a remote worker's implementation files.
//
// DigestFiles is what a remote process step's descriptor carries as its implementation digest
// (ProcessOptions::implementation_digest): a restart whose worker files changed is refused.
// Threads: a Sha256 is one hash being computed; the functions are pure (DigestFiles reads files).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "weir/status.h"

namespace weir {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  // The digest of everything given to Update. The hash is not to be updated after.
  std::array<uint8_t, 32> Finish();

 private:
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_{};
  size_t block_used_ = 0;
  uint64_t total_bytes_ = 0;
};

// Lower-case hex of SHA-256(bytes).
std::string Sha256Hex(std::string_view bytes);

// Lower-case hex SHA-256 over the files (paths relative to `base`) in the order given: for each,
// its name as given, a 0 byte, its size as 8 bytes big-endian, and its contents. So a rename,
// a reorder or a byte moved from one file to the next changes the digest. A file that cannot be
// read is an error naming it (kNotFound if missing).
Result<std::string> DigestFiles(const std::filesystem::path& base,
                                const std::vector<std::string>& files);

}  // namespace weir
