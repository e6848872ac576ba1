// WEIR_UNDER_SANITIZER: 1 when this build runs under AddressSanitizer or ThreadSanitizer (GCC's
// __SANITIZE_*__ or Clang's __has_feature), else 0. Memory Weir would otherwise recycle itself
// (the value pool, the state cache's node memory) then goes straight back to malloc, so the
// sanitizer sees every use after free; the heap counter, which interposes malloc, is off.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WEIR_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WEIR_UNDER_SANITIZER 1
#endif
#endif
#ifndef WEIR_UNDER_SANITIZER
#define WEIR_UNDER_SANITIZER 0
#endif
