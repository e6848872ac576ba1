// Crash points for crash tests: WEIR_FAULT=<point>[:<n>] makes the process kill itself
// (SIGKILL, as a crash would) the n-th time (default 1st) it reaches MaybeInjectFault(<point>).
// Unset, a crash point costs one load and one compare.
//
// Slow tasks for scheduling tests: WEIR_SLOW_TASKS=<task id>[,<task id>...]:<ms> makes each task
// named there (ids as app/plan.h's TaskId: "<sub-topology>_<partition>") sleep <ms> before each
// batch, so the others run ahead of it. Unset or malformed: no delay.
#pragma once

#include <chrono>
#include <string_view>

namespace weir {

void MaybeInjectFault(const char* point);

// The delay WEIR_SLOW_TASKS gives `task_id` (read each call: a task asks once, when it is made).
std::chrono::milliseconds InjectedTaskDelay(std::string_view task_id);

}  // namespace weir
