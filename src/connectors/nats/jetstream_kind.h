// The jetstream source kind (Application::FromJetStream; YAML `source: {jetstream: {url, stream,
// subject, durable, max_deliver, ack_wait_ms, dead_letter_subject}, key, timestamp, dead_letter,
// bounded}`): one partition, read through a durable pull consumer (jetstream_source.h), each
// message acknowledged only once what the pipeline made of it is checkpointed.
#pragma once

#include "dataflow/kind_registry.h"

namespace weir::nats {

// Adds the jetstream source kind to `kinds` (the `weir` binary does; a program of its own that
// loads YAML naming it must too).
void RegisterJetStreamSource(dataflow::KindRegistry& kinds);

}  // namespace weir::nats
