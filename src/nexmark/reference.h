// The Nexmark queries computed in batch by DuckDB: the reference that `weir bench nexmark`
// checks Weir's streaming results against.
//
// Contract: LoadEvents puts the first `events` events of a generator into the tables person,
// auction and bid (the reference's field names; times in epoch ms, prices in cents), and
// ReferenceRows runs one query's SQL over them, handing each output row in CanonicalRow form.
// Windows are aligned to the epoch and half-open [start, end); event times are taken as
// positive (window starts use integer division). Each query's output columns, in order:
//   q0  every bid: auction, bidder, price, dateTime, extra
//   q1  every bid: auction, bidder, (double)price * 0.908 (an IEEE double product), dateTime,
//       extra
//   q2  bids with auction % 123 = 0: auction, price
//   q3  auction A x person P on A.seller = P.id, A.category = 10, P.state in (OR, ID, CA):
//       P.name, P.city, P.state, A.id
//   q4  per category, the average (Fixed4) over auctions of their final price, the highest bid
//       with A.dateTime <= B.dateTime <= A.expires; auctions without such a bid left out:
//       category, average
//   q5  hopping windows of 10 s every 2 s: the auctions with the most bids in each window:
//       auction, count, window start
//   q7  tumbling 10 s windows: the bids at each window's highest price: auction, price, bidder,
//       dateTime, extra
//   q8  distinct people created in a tumbling 10 s window in which they also opened an auction:
//       id, name, window start
//   q11 per bidder, sessions of bids no more than 10 s (10000 ms included) apart: bidder, count,
//       first dateTime, last dateTime + 1
//   q12 tumbling 10 s windows: bids per bidder: bidder, count, window start, window end
// Thread safety: as sql::Database (one thread at a time per database).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "nexmark/generator.h"
#include "nexmark/query.h"
#include "sql/database.h"
#include "weir/status.h"

namespace weir::nexmark {

// Creates person, auction and bid (replacing any of that name) and fills them with events
// [0, events) of `generator`.
[[nodiscard]] Status LoadEvents(sql::Database& db, const NexmarkGenerator& generator,
                                int64_t events);

std::string ReferenceSql(Query query);

// Runs ReferenceSql(query) and calls on_row with each output row's canonical form (valid during
// the call only). Rows come in no particular order.
[[nodiscard]] Status ReferenceRows(
    sql::Database& db, Query query,
    const std::function<void(std::string_view canonical_row)>& on_row);

}  // namespace weir::nexmark
