// The NATS JetStream source: a durable pull consumer of one stream, read as one partition.
//
// Delivery: every message JetStream delivers becomes one delivery with its own position (a
// counter local to this source object); the record's identity (SourceBatch::identities) is the
// message's stream sequence, the same on every redelivery. The source redelivers by itself
// (RedeliversItself() is true): the task resolves each delivery exactly once with Resolve();
//   - kAck is queued and sent to JetStream only in OnCheckpointCommitted(), so that what the
//     pipeline made of the message is durable before the message is;
//   - kNak is sent at once (JetStream redelivers at once, as a new delivery);
//   - kTerm is sent at once (JetStream never delivers the message again).
// A delivery left unresolved is redelivered by JetStream after `ack_wait`, and after a restart
// (a source destroyed without OnCheckpointCommitted() sends none of its queued acks). A queued
// ack is kept alive (JetStream's "in progress") while it waits for the checkpoint, as long as
// Poll() is called more often than every ack_wait / 4.
//
// Text: each record's SourceBatch::json is the message's data, as published, so that a sink may
// write a value no step changed as those bytes. It is valid while the task processes the record:
// the message lives until its delivery is resolved; a nak or term keeps it until the next Poll (a
// step holding the record may resolve it during its processing), an ack until the checkpoint that
// sends the ack (never within a record's processing).
//
// Durability: JetStream's durable consumer keeps the position: SavePosition() is "" and
// RestorePosition() accepts only "". At least once: a crash between a checkpoint and its acks
// redelivers what that checkpoint already covered.
//
// Bad input is never an error. Malformed JSON (or a missing / mistyped key or timestamp field)
// goes to TaskContext::RawDeadLetter and the message is acknowledged at the next checkpoint. A
// message JetStream has delivered more than `max_deliver` times (the consumer's own MaxDeliver
// is unlimited, so that Weir decides) is published to `dead_letter_subject` (see README.md for
// the message), sent to RawDeadLetter, and terminated at the next checkpoint.
//
// Threads: a source belongs to its task's thread; libnats runs its own I/O threads inside.
// Errors: OpenJetStreamSource returns kInvalidArgument for bad options or a consumer JetStream
// refuses (a filter outside the stream), kUnavailable naming the URL when the server cannot be
// reached or has no JetStream, kNotFound naming the stream when it does not exist,
// kFailedPrecondition when the durable consumer exists with a configuration Weir cannot use
// (push, another filter subject, another ack policy). Poll() returns kUnavailable once the
// connection is closed for good (libnats gives up reconnecting); while it reconnects, kIdle.
#pragma once

#include <memory>

#include "dataflow/sources.h"
#include "weir/status.h"
#include "weir/stream.h"

namespace weir::nats {

// Connects to `options.url`, creates the durable pull consumer `options.durable` on
// `options.stream` if it is missing (explicit acks, `options.subject` as its filter, AckWait
// `options.ack_wait`, unlimited MaxDeliver) and updates its AckWait / MaxDeliver /
// MaxAckPending if they differ. Bounded: the source ends once every message up to the stream's
// last sequence at open has been delivered and resolved and none is outstanding.
Result<std::unique_ptr<dataflow::Source>> OpenJetStreamSource(
    const JetStreamSourceOptions& options);

}  // namespace weir::nats
