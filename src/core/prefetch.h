// PrefetchForRead: a hint that the memory at `address` will be read soon (prefetcht0 on x86).
//
// Why not __builtin_prefetch alone: GCC (12, at least) treats the builtin as free of side
// effects, so a small function that only prefetches (NodeMap::PrefetchNode) is found "pure" by
// its interprocedural analysis, and a call to a pure function whose result is unused is deleted.
// Every node prefetch of the state cache was compiled away that way, unnoticed, because a hint
// that is gone changes no result. The empty volatile asm that takes the address is a side effect
// the compiler must keep, and with it the prefetch. Costs nothing at run time: no instruction.
// tests/codegen/prefetch_hints.sh (ctest Codegen.StatePrefetchHintsAreCompiled) checks that the
// state cache's compiled hints are there.
#pragma once

namespace weir {

inline void PrefetchForRead(const void* address) {
  __builtin_prefetch(address);
  asm volatile("" : : "r"(address));
}

}  // namespace weir
