// Weir's public C++ API: include this one header.
//
//   #include <weir/weir.h>
//   weir::Application app({.name = "counts", .data_dir = "./weir-data"});
//   app.FromTopic({.topic = "clicks"}).Aggregate({{"n", weir::agg::Count()}}).ToTopic("counts");
//   weir::Result<weir::RunSummary> summary = app.Run();
#pragma once

#include "weir/aggregator.h"
#include "weir/application.h"
#include "weir/key.h"
#include "weir/record.h"
#include "weir/status.h"
#include "weir/stream.h"
#include "weir/topic_consumer.h"
#include "weir/types.h"
#include "weir/value.h"
#include "weir/window.h"
#include "weir/window_definition.h"
