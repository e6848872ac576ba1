// CRC-32C implementations behind log::Crc32c (record_format.h), exposed so tests can check the
// hardware path against the portable one. Not part of the module's contract.
#pragma once

#include <cstdint>
#include <string_view>

namespace weir::log::internal {

// True when the CPU has the SSE4.2 crc32 instruction (checked once).
bool HardwareCrc32cAvailable();
// Both follow Crc32c's convention: `crc` is the running CRC of the bytes before `data`
// (0 to start), so Crc32c(Crc32c(0, a), b) == Crc32c(0, a + b).
uint32_t Crc32cPortable(uint32_t crc, std::string_view data);
// REQUIRES: HardwareCrc32cAvailable().
uint32_t Crc32cHardware(uint32_t crc, std::string_view data);

}  // namespace weir::log::internal
