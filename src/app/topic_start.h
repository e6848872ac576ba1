// Where a reader of a topic partition starts (weir::TopicStart): the one resolution shared by
// weir::TopicConsumer and `weir consume --from`.
#pragma once

#include <string_view>

#include "log/log.h"
#include "weir/stream.h"

namespace weir::app {

// The first offset to read of `partition`: its first retained record, its end now, or
// `offset`. kOutOfRange, naming `where` ("clicks/3"), for an offset retention removed or past the
// end: a reader never skips silently.
Result<Offset> StartOffset(const log::Partition& partition, TopicStart start, int64_t offset,
                           std::string_view where);

}  // namespace weir::app
