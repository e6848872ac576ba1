// Crash points for crash tests: WEIR_FAULT=<point>[:<n>] makes the process kill itself
// (SIGKILL, as a crash would) the n-th time (default 1st) it reaches MaybeInjectFault(<point>).
// Unset, a crash point costs one load and one compare.
#pragma once

namespace weir {

void MaybeInjectFault(const char* point);

}  // namespace weir
