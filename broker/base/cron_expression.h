// Cron expressions: parsing the standard syntax and computing the next time
// a schedule fires, in a given time zone, with cron's daylight-saving rules.
//
//   absl::StatusOr<CronExpression> cron = CronExpression::Parse("30 2 * * MON-FRI");
//   if (!cron.ok()) return cron.status();  // INVALID_ARGUMENT, names the field
//   absl::Time next = cron->Next(absl::Now(), zone);
//
// Syntax. Five fields (minute hour day-of-month month day-of-week) or six
// (second first, then the five), separated by spaces or tabs:
//
//   second        0-59
//   minute        0-59
//   hour          0-23
//   day-of-month  1-31         also '?' (= '*')
//   month         1-12         also JAN-DEC
//   day-of-week   0-7          also SUN-SAT; 0 and 7 are Sunday; also '?' (= '*')
//
// Each field is a list of elements joined by ',', each element one of
//   *       every value (for day-of-week: 0-6)
//   a       a single value
//   a-b     a range, a <= b (no wrap-around: SAT-SUN is an error, use SAT,SUN)
//   */n     every n-th value from the minimum
//   a-b/n   every n-th value from a up to b
//   a/n     every n-th value from a up to the maximum (day-of-week: up to 6)
// where a and b are numbers or, in the month and day-of-week fields, names
// (case-insensitive, three letters). '?' must be the whole field. Macros stand
// alone: @yearly = @annually = "0 0 1 1 *", @monthly = "0 0 1 * *",
// @weekly = "0 0 * * 0", @daily = @midnight = "0 0 * * *", @hourly =
// "0 * * * *" (case-insensitive; no @reboot, no @every).
//
// Days. When both day fields are restricted (neither is exactly '*' or '?'),
// a day matches when EITHER matches ("0 0 13 * FRI": every 13th and every
// Friday), as in standard cron. When one of them is '*' or '?', only the other
// counts. A stepped star such as "*/2" counts as restricted (unlike Vixie
// cron, which looks only at the first character).
//
// Daylight saving time, as Vixie cron / cronie do. The fields are read as
// civil (wall-clock) time in the zone passed to Next():
//  - Spring forward (a gap, e.g. Europe/Berlin 2026-03-29 02:00 -> 03:00): a
//    matching civil time that does not exist fires once, at the transition
//    instant (the first instant after the gap, 03:00 CEST). Several matching
//    times in the same gap ("*/15 * * * *") fire once together, and a match
//    at the first civil time after the gap (03:00) is that same firing.
//  - Fall back (an overlap, e.g. Europe/Berlin 2026-10-25 03:00 -> 02:00):
//    when the hour field is FIXED (a list of single values, no '*', range or
//    step: "30 2 * * *", "0 1,13 * * *"), a repeated civil time fires once, in
//    the first pass (the earlier instant). Any other hour field ("0 * * * *",
//    "*/15 * * * *", "0 0-5 * * *", "0 */2 * * *") fires at its matching times
//    in both passes, as the distinct instants they are.
//
// Thread safety: immutable after Parse; copies and concurrent calls to the
// const methods are safe.
#ifndef JOBWIRE_BROKER_BASE_CRON_EXPRESSION_H_
#define JOBWIRE_BROKER_BASE_CRON_EXPRESSION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace jobwire::base {

class CronExpression {
 public:
  // Parses `text` (syntax above). INVALID_ARGUMENT for anything else, with a
  // message naming the field, the bad part and the allowed range, e.g.
  // `hour: 25 is out of range 0-23`, `minute: step 0 in "*/0" ...`,
  // `month: unknown name "FOO" ...`; wrong field counts, empty input and
  // unsupported macros have messages of their own.
  static absl::StatusOr<CronExpression> Parse(absl::string_view text);

  // The first instant strictly after `after` at which the expression fires,
  // reading the fields as civil time in `zone` (with the daylight-saving
  // rules above). absl::InfiniteFuture() when it does not fire within the
  // five years (of civil time) after `after` ("0 0 30 2 *"), and when `after`
  // is infinite. Steps field by field (months, days, hours, minutes,
  // seconds), so a call costs at most a few thousand cheap steps, usually a
  // handful.
  absl::Time Next(absl::Time after, absl::TimeZone zone) const;

  // The text it was parsed from, normalised: fields joined by single spaces.
  const std::string& text() const { return text_; }

 private:
  CronExpression() = default;

  // The first civil time >= `from` and <= `limit` that matches every field.
  std::optional<absl::CivilSecond> NextMatch(absl::CivilSecond from,
                                             absl::CivilSecond limit) const;
  bool DayMatches(absl::CivilDay day) const;

  std::string text_;
  // Bit v is set when value v matches. Day-of-week: 0 (Sunday) to 6.
  uint64_t seconds_ = 0;
  uint64_t minutes_ = 0;
  uint64_t hours_ = 0;
  uint64_t days_of_month_ = 0;
  uint64_t months_ = 0;
  uint64_t days_of_week_ = 0;
  bool day_of_month_star_ = false;  // the field is exactly '*' or '?'
  bool day_of_week_star_ = false;
  bool hour_fixed_ = false;  // only single values: fires once in a repeated hour
};

}  // namespace jobwire::base

#endif  // JOBWIRE_BROKER_BASE_CRON_EXPRESSION_H_
