// CronExpression: what Parse accepts and rejects (with which message), and
// when Next fires, in UTC and in zones with daylight saving time (the
// expected DST instants were checked against python3 zoneinfo).
#include "broker/base/cron_expression.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwire::base {
namespace {

using ::testing::HasSubstr;

absl::TimeZone Zone(const std::string& name) {
  absl::TimeZone zone;
  EXPECT_TRUE(absl::LoadTimeZone(name, &zone)) << name;
  return zone;
}

absl::Time ParseRfc3339(const std::string& text) {
  absl::Time time;
  std::string error;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, text, &time, &error)) << text << ": " << error;
  return time;
}

std::string Format(absl::Time time, absl::TimeZone zone) {
  if (time == absl::InfiniteFuture()) return "inf";
  return absl::FormatTime(absl::RFC3339_full, time, zone);
}

CronExpression MustParse(const std::string& text) {
  absl::StatusOr<CronExpression> cron = CronExpression::Parse(text);
  EXPECT_TRUE(cron.ok()) << text << ": " << cron.status();
  return cron.ok() ? *cron : *CronExpression::Parse("* * * * *");
}

TEST(CronExpressionTest, ParseRejectsWithAMessageNamingTheProblem) {
  struct Case {
    std::string text;
    std::string want;  // a substring of the message
  };
  const std::vector<Case> cases = {
      {"", "empty cron expression"},
      {" \t ", "empty cron expression"},
      {"* * * *", "expected 5 fields"},
      {"* * * * * * *", "got 7"},
      {"60 * * * *", "minute: 60 is out of range 0-59"},
      {"* 25 * * *", "hour: 25 is out of range 0-23"},
      {"* * 0 * *", "day-of-month: 0 is out of range 1-31"},
      {"* * 32 * *", "day-of-month: 32 is out of range 1-31"},
      {"* * * 13 *", "month: 13 is out of range 1-12"},
      {"* * * 0 *", "month: 0 is out of range 1-12"},
      {"* * * * 8", "day-of-week: 8 is out of range 0-7"},
      {"60 * * * * *", "second: 60 is out of range 0-59"},
      {"* 1-24 * * *", "hour: 24 is out of range 0-23"},
      {"99999999999 * * * *", "minute: 99999999999 is out of range 0-59"},
      {"1,,2 * * * *", "minute: empty list element (allowed 0-59)"},
      {"1, * * * *", "minute: empty list element"},
      {"* ,3 * * *", "hour: empty list element (allowed 0-23)"},
      {"*/0 * * * *", "minute: step 0 in \"*/0\" is out of range 1-60"},
      {"* 1-5/0 * * *", "hour: step 0 in \"1-5/0\" is out of range 1-24"},
      {"*/61 * * * *", "minute: step 61"},
      {"*/ * * * *", "minute: step \"\" in \"*/\" is not a number"},
      {"*/x * * * *", "minute: step \"x\""},
      {"*/5/2 * * * *", "minute: more than one step in \"*/5/2\""},
      {"5-2 * * * *", "minute: range 5-2 is reversed (allowed 0-59)"},
      {"* * * * SAT-SUN", "day-of-week: range SAT-SUN is reversed (allowed 0-7 or SUN-SAT)"},
      {"* * * DEC-JAN *", "month: range DEC-JAN is reversed"},
      {"* * * FOO *", "month: unknown name \"FOO\" (allowed 1-12 or JAN-DEC)"},
      {"* * * JAN-MON *", "month: unknown name \"MON\""},
      {"* * * * FUNDAY", "day-of-week: unknown name \"FUNDAY\" (allowed 0-7 or SUN-SAT)"},
      {"* * * * MONDAY", "day-of-week: unknown name \"MONDAY\""},
      {"JAN * * * *", "minute: \"JAN\" is not a number in 0-59"},
      {"5x * * * *", "minute: \"5x\" is not a number in 0-59"},
      {"* * 1L * *", "day-of-month: \"1L\" is not a number in 1-31"},
      {"1- * * * *", "minute: missing value in \"1-\" (allowed 0-59)"},
      {"-1 * * * *", "minute: missing value in \"-1\""},
      {"1-2-3 * * * *", "minute: \"1-2-3\" is not a value or a range"},
      {"*-5 * * * *", "minute: \"*\" is not a number"},
      {"? * * * *", "minute: \"?\" is only allowed in day-of-month and day-of-week"},
      {"* * * ? *", "month: \"?\" is only allowed"},
      {"* * ?/2 * *", "day-of-month: \"?\" must be the whole field"},
      {"* * * * ?,1", "day-of-week: \"?\" must be the whole field"},
      {"@reboot", "@reboot is not supported"},
      {"@every", "@every is not supported"},
      {"@every 5m", "a macro stands alone"},
      {"@daily 5", "a macro stands alone"},
      {"@sometimes", "unknown macro \"@sometimes\""},
      {"0 0 * * * extra", "day-of-week: unknown name \"extra\""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CronExpression> cron = CronExpression::Parse(c.text);
    ASSERT_FALSE(cron.ok()) << "\"" << c.text << "\" parsed as " << cron->text();
    EXPECT_EQ(cron.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(cron.status().message()), HasSubstr(c.want)) << c.text;
  }
}

TEST(CronExpressionTest, ParseAcceptsAndNormalises) {
  struct Case {
    std::string text;
    std::string want_text;
  };
  const std::vector<Case> cases = {
      {"* * * * *", "* * * * *"},
      {"  0\t0   *  * *  ", "0 0 * * *"},
      {"0 0 * * * *", "0 0 * * * *"},
      {"*/5,10-20/3,45,7/20 * * * *", "*/5,10-20/3,45,7/20 * * * *"},
      {"0 0 1 jan-Mar,JUL mon-FRI", "0 0 1 jan-Mar,JUL mon-FRI"},
      {"0 0 ? * 7", "0 0 ? * 7"},
      {"0 0 1 * ?", "0 0 1 * ?"},
      {"0 0 0 ? * SUN", "0 0 0 ? * SUN"},
      {"00 05 01 01 00", "00 05 01 01 00"},
      {"0-59 0-23 1-31 1-12 0-7", "0-59 0-23 1-31 1-12 0-7"},
      {"@yearly", "@yearly"},
      {"@annually", "@annually"},
      {"@monthly", "@monthly"},
      {"@weekly", "@weekly"},
      {" @Daily ", "@Daily"},
      {"@midnight", "@midnight"},
      {"@hourly", "@hourly"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CronExpression> cron = CronExpression::Parse(c.text);
    ASSERT_TRUE(cron.ok()) << c.text << ": " << cron.status();
    EXPECT_EQ(cron->text(), c.want_text);
  }
}

// Spellings of the same schedule fire at the same instants.
TEST(CronExpressionTest, EquivalentSpellingsFireAlike) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"@yearly", "0 0 1 1 *"},
      {"@annually", "0 0 1 JAN ?"},
      {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"},
      {"@midnight", "0 0 ? * *"},
      {"@hourly", "0 * * * *"},
      {"0 0 * * 7", "0 0 * * 0"},
      {"0 0 * * sun", "0 0 * * 0"},
      {"0 0 * * 5-7", "0 0 * * 5,6,0"},
      {"0 0 * * 0-7", "0 0 * * *"},
      {"0 0 * * 1/2", "0 0 * * 1,3,5"},
      {"0 0 * * */3", "0 0 * * 0,3,6"},
      {"0 9 * * MON-FRI", "0 9 * * 1-5"},
      {"0 0 1 jan-mar,Oct *", "0 0 1 1-3,10 *"},
      {"0 0 1 */3 *", "0 0 1 1,4,7,10 *"},
      {"5/15 * * * *", "5-59/15 * * * *"},
      {"5/15 * * * *", "5,20,35,50 * * * *"},
      {"0 */5 * * * *", "*/5 * * * *"},
      {"0 0 ? * 1", "0 0 * * 1"},
      {"0 0 13 * ?", "0 0 13 * *"},
  };
  const absl::TimeZone zones[] = {absl::UTCTimeZone(), Zone("Europe/Berlin")};
  for (const auto& [a, b] : pairs) {
    const CronExpression cron_a = MustParse(a);
    const CronExpression cron_b = MustParse(b);
    for (const absl::TimeZone& zone : zones) {
      absl::Time ta = ParseRfc3339("2026-01-01T00:00:00Z");
      absl::Time tb = ta;
      for (int i = 0; i < 200; ++i) {
        ta = cron_a.Next(ta, zone);
        tb = cron_b.Next(tb, zone);
        ASSERT_EQ(Format(ta, zone), Format(tb, zone)) << a << " vs " << b << " #" << i;
      }
    }
  }
}

TEST(CronExpressionTest, NextTable) {
  struct Case {
    std::string expr;
    std::string zone;
    std::string after;
    std::string want;  // RFC3339, or "inf" for absl::InfiniteFuture()
  };
  const std::vector<Case> cases = {
      // Every field kind, in UTC.
      {"* * * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"},
      {"* * * * *", "UTC", "2026-01-01T00:00:30.5Z", "2026-01-01T00:01:00Z"},
      {"0 0 * * *", "UTC", "2026-01-01T00:00:00.000001Z", "2026-01-02T00:00:00Z"},
      {"5 * * * *", "UTC", "2026-01-01T00:05:00Z", "2026-01-01T01:05:00Z"},
      {"*/15 * * * *", "UTC", "2026-01-01T00:14:59Z", "2026-01-01T00:15:00Z"},
      {"*/15 * * * *", "UTC", "2026-01-01T00:45:00Z", "2026-01-01T01:00:00Z"},
      {"10-20/5 8 * * *", "UTC", "2026-01-01T08:16:00Z", "2026-01-01T08:20:00Z"},
      {"10-20/5 8 * * *", "UTC", "2026-01-01T08:20:00Z", "2026-01-02T08:10:00Z"},
      {"7/20 */6 * * *", "UTC", "2026-01-01T06:47:00Z", "2026-01-01T12:07:00Z"},
      {"0 0,12 * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T12:00:00Z"},
      {"0 9 * * MON-FRI", "UTC", "2026-01-02T10:00:00Z", "2026-01-05T09:00:00Z"},
      {"0 0 * * 7", "UTC", "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z"},
      {"0 0 * * sun", "UTC", "2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"},
      {"0 12 * JAN,jul *", "UTC", "2026-02-01T00:00:00Z", "2026-07-01T12:00:00Z"},
      {"0 0 1 */3 *", "UTC", "2026-04-01T00:00:00Z", "2026-07-01T00:00:00Z"},
      // Month ends: the 31st skips the short months.
      {"0 0 31 * *", "UTC", "2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z"},
      {"0 0 31 * *", "UTC", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"},
      {"0 0 30 * *", "UTC", "2026-01-30T00:00:00Z", "2026-03-30T00:00:00Z"},
      // Feb 29 only in leap years; Feb 30 never.
      {"0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", "2028-02-29T00:00:00Z"},
      {"0 0 29 2 *", "UTC", "2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"},
      {"0 0 29 2 *", "UTC", "2096-02-29T00:00:00Z", "inf"},  // 2100 is no leap year
      {"0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z", "inf"},
      {"0 0 31 4,6,9,11 *", "UTC", "2026-01-01T00:00:00Z", "inf"},
      // Day-of-month and day-of-week: either, when both are restricted.
      {"0 0 13 * FRI", "UTC", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"},
      {"0 0 13 * FRI", "UTC", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z"},
      {"0 0 13 * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-13T00:00:00Z"},
      {"0 0 ? * FRI", "UTC", "2026-01-09T00:00:00Z", "2026-01-16T00:00:00Z"},
      {"0 0 29 2 MON", "UTC", "2026-02-23T00:00:00Z", "2027-02-01T00:00:00Z"},
      {"0 0 29 2 MON", "UTC", "2028-02-28T00:00:00Z", "2028-02-29T00:00:00Z"},
      // Six fields: seconds.
      {"*/10 * * * * *", "UTC", "2026-01-01T00:00:05Z", "2026-01-01T00:00:10Z"},
      {"*/10 * * * * *", "UTC", "2026-01-01T00:00:50Z", "2026-01-01T00:01:00Z"},
      {"30 15 10 * * *", "UTC", "2026-01-01T10:15:30Z", "2026-01-02T10:15:30Z"},
      // Crossing a year end; macros.
      {"0 0 1 1 *", "UTC", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z"},
      {"59 23 31 12 *", "UTC", "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"},
      {"*/10 * * * * *", "UTC", "2026-12-31T23:59:55Z", "2027-01-01T00:00:00Z"},
      {"@yearly", "UTC", "2026-06-01T00:00:00Z", "2027-01-01T00:00:00Z"},
      {"@monthly", "UTC", "2026-12-15T00:00:00Z", "2027-01-01T00:00:00Z"},
      {"@weekly", "UTC", "2026-12-28T00:00:00Z", "2027-01-03T00:00:00Z"},
      {"@hourly", "UTC", "2026-12-31T23:00:00Z", "2027-01-01T00:00:00Z"},
      // Other zones, away from transitions.
      {"0 9 * * *", "America/New_York", "2026-07-01T12:00:00Z", "2026-07-01T09:00:00-04:00"},
      {"0 9 * * *", "America/New_York", "2026-01-15T14:00:00Z", "2026-01-16T09:00:00-05:00"},
      {"0 0 1 1 *", "Europe/Berlin", "2026-12-31T22:00:00Z", "2027-01-01T00:00:00+01:00"},
      {"0 0 1 1 *", "Europe/Berlin", "2026-12-31T23:00:00Z", "2028-01-01T00:00:00+01:00"},
      // Spring forward, America/New_York 2026-03-08 02:00 EST -> 03:00 EDT:
      // the gap's matches fire once, at the transition (07:00Z).
      {"30 2 * * *", "America/New_York", "2026-03-08T00:00:00-05:00", "2026-03-08T03:00:00-04:00"},
      {"30 2 * * *", "America/New_York", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"},
      {"*/30 * * * *", "America/New_York", "2026-03-08T01:30:00-05:00",
       "2026-03-08T03:00:00-04:00"},
      {"*/30 * * * *", "America/New_York", "2026-03-08T03:00:00-04:00",
       "2026-03-08T03:30:00-04:00"},
      {"15,45 2 * * *", "America/New_York", "2026-03-08T01:59:59-05:00",
       "2026-03-08T03:00:00-04:00"},
      {"15,45 2 * * *", "America/New_York", "2026-03-08T03:00:00-04:00",
       "2026-03-09T02:15:00-04:00"},
      // Europe/Berlin 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z).
      {"30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z"},
      {"0 * * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z"},
      {"0 * * * *", "Europe/Berlin", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"},
      // Fall back, America/New_York 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z):
      // a fixed hour fires in the first pass only, other hours in both.
      {"30 1 * * *", "America/New_York", "2026-11-01T00:00:00-04:00", "2026-11-01T01:30:00-04:00"},
      {"30 1 * * *", "America/New_York", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"},
      {"30 1 * * *", "America/New_York", "2026-11-01T01:10:00-05:00", "2026-11-02T01:30:00-05:00"},
      {"*/15 1 * * *", "America/New_York", "2026-11-01T01:45:00-04:00",
       "2026-11-02T01:00:00-05:00"},
      {"0 * * * *", "America/New_York", "2026-11-01T00:30:00-04:00", "2026-11-01T01:00:00-04:00"},
      {"0 * * * *", "America/New_York", "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00"},
      {"0 * * * *", "America/New_York", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"},
      {"30 * * * *", "America/New_York", "2026-11-01T01:40:00-04:00", "2026-11-01T01:30:00-05:00"},
      {"0 0-3 * * *", "America/New_York", "2026-11-01T01:00:00-04:00",
       "2026-11-01T01:00:00-05:00"},
      {"* * * * * *", "America/New_York", "2026-11-01T01:59:59-04:00",
       "2026-11-01T01:00:00-05:00"},
      {"* * * * * *", "America/New_York", "2026-11-01T01:59:59-05:00",
       "2026-11-01T02:00:00-05:00"},
      // Europe/Berlin 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z).
      {"0 2 * * *", "Europe/Berlin", "2026-10-25T00:00:00+02:00", "2026-10-25T02:00:00+02:00"},
      {"0 2 * * *", "Europe/Berlin", "2026-10-25T02:00:00+02:00", "2026-10-26T02:00:00+01:00"},
      {"30 * * * *", "Europe/Berlin", "2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00"},
      // Australia/Lord_Howe shifts by 30 minutes: 2026-04-05 02:00 +11 ->
      // 01:30 +10:30, and 2026-10-04 02:00 +10:30 -> 02:30 +11.
      {"45 1 * * *", "Australia/Lord_Howe", "2026-04-05T01:00:00+11:00",
       "2026-04-05T01:45:00+11:00"},
      {"45 1 * * *", "Australia/Lord_Howe", "2026-04-05T01:45:00+11:00",
       "2026-04-06T01:45:00+10:30"},
      {"*/20 * * * *", "Australia/Lord_Howe", "2026-04-05T01:40:00+11:00",
       "2026-04-05T01:40:00+10:30"},
      {"*/20 * * * *", "Australia/Lord_Howe", "2026-04-05T01:40:00+10:30",
       "2026-04-05T02:00:00+10:30"},
      {"15 2 * * *", "Australia/Lord_Howe", "2026-10-04T00:00:00+10:30",
       "2026-10-04T02:30:00+11:00"},
      {"*/20 * * * *", "Australia/Lord_Howe", "2026-10-04T01:40:00+10:30",
       "2026-10-04T02:30:00+11:00"},
      {"*/20 * * * *", "Australia/Lord_Howe", "2026-10-04T02:30:00+11:00",
       "2026-10-04T02:40:00+11:00"},
  };
  for (const Case& c : cases) {
    const absl::TimeZone zone = Zone(c.zone);
    const CronExpression cron = MustParse(c.expr);
    const absl::Time after = ParseRfc3339(c.after);
    const absl::Time want = c.want == "inf" ? absl::InfiniteFuture() : ParseRfc3339(c.want);
    EXPECT_EQ(Format(cron.Next(after, zone), zone), Format(want, zone))
        << "\"" << c.expr << "\" in " << c.zone << " after " << c.after;
  }
}

// Whether `expr` should fire at `t`, decided instant by instant from the
// rules in the header (not from CronExpression): t is the end of a gap in
// which some civil time matches, or its civil time matches and is not the
// second pass of a repeated time of a fixed-hour job.
struct Schedule {
  std::string expr;
  std::string zone;
  std::string start;  // RFC3339: Next is first applied to this
  std::function<bool(absl::CivilSecond)> matches;
  bool fixed_hour;
  absl::Duration grid;  // every instant it can fire at is a multiple of this
};

bool GapEndsAtWithMatch(const Schedule& s, absl::TimeZone zone, absl::Time t) {
  const absl::CivilSecond before = zone.At(t - absl::Seconds(1)).cs;
  const absl::CivilSecond now = zone.At(t).cs;
  for (absl::CivilSecond c = before + 1; c < now; ++c) {
    if (s.matches(c)) return true;
  }
  return false;
}

bool IsSecondPass(absl::TimeZone zone, absl::Time t) {
  const absl::TimeZone::TimeInfo info = zone.At(zone.At(t).cs);
  return info.kind == absl::TimeZone::TimeInfo::REPEATED && t == info.post;
}

bool ShouldFire(const Schedule& s, absl::TimeZone zone, absl::Time t) {
  if (GapEndsAtWithMatch(s, zone, t)) return true;
  if (!s.matches(zone.At(t).cs)) return false;
  return !(s.fixed_hour && IsSecondPass(zone, t));
}

bool Weekday(absl::CivilSecond c, absl::Weekday day) {
  return absl::GetWeekday(absl::CivilDay(c)) == day;
}

bool AtMinute(absl::CivilSecond c, int minute) { return c.minute() == minute && c.second() == 0; }

// Next applied 1000 times: strictly increasing, each instant one the rules
// say fires, and no instant on the grid between two of them that should.
// The starts put DST transitions inside the 1000 steps.
TEST(CronExpressionTest, NextThousandTimesFiresExactlyWhenTheRulesSay) {
  const std::vector<Schedule> schedules = {
      {"*/15 * * * *", "America/New_York", "2026-03-05T00:00:00Z",
       [](absl::CivilSecond c) { return c.minute() % 15 == 0 && c.second() == 0; }, false,
       absl::Minutes(1)},
      {"*/15 * * * *", "Europe/Berlin", "2026-10-20T00:00:00Z",
       [](absl::CivilSecond c) { return c.minute() % 15 == 0 && c.second() == 0; }, false,
       absl::Minutes(1)},
      {"0 * * * *", "America/New_York", "2026-10-20T00:00:00Z",
       [](absl::CivilSecond c) { return AtMinute(c, 0); }, false, absl::Minutes(1)},
      {"30 2 * * *", "Europe/Berlin", "2026-01-01T00:00:00Z",
       [](absl::CivilSecond c) { return c.hour() == 2 && AtMinute(c, 30); }, true,
       absl::Minutes(1)},
      {"0 */2 * * *", "Europe/Berlin", "2026-03-01T00:00:00Z",
       [](absl::CivilSecond c) { return c.hour() % 2 == 0 && AtMinute(c, 0); }, false,
       absl::Minutes(1)},
      {"0 */2 * * *", "Europe/Berlin", "2026-09-15T00:00:00Z",
       [](absl::CivilSecond c) { return c.hour() % 2 == 0 && AtMinute(c, 0); }, false,
       absl::Minutes(1)},
      {"0,30 1 * * *", "America/New_York", "2026-01-01T00:00:00Z",
       [](absl::CivilSecond c) { return c.hour() == 1 && c.minute() % 30 == 0 && c.second() == 0; },
       true, absl::Minutes(1)},
      {"45 1 * * *", "Australia/Lord_Howe", "2026-01-01T00:00:00Z",
       [](absl::CivilSecond c) { return c.hour() == 1 && AtMinute(c, 45); }, true,
       absl::Minutes(1)},
      {"*/20 * * * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z",
       [](absl::CivilSecond c) { return c.second() % 20 == 0; }, false, absl::Seconds(1)},
      {"*/20 * * * * *", "Australia/Lord_Howe", "2026-10-03T13:00:00Z",
       [](absl::CivilSecond c) { return c.second() % 20 == 0; }, false, absl::Seconds(1)},
      {"0 */10 1-2 * * *", "Australia/Lord_Howe", "2026-03-01T00:00:00Z",
       [](absl::CivilSecond c) {
         return (c.hour() == 1 || c.hour() == 2) && c.minute() % 10 == 0 && c.second() == 0;
       },
       false, absl::Minutes(1)},
      {"0 */10 1-2 * * *", "Australia/Lord_Howe", "2026-09-01T00:00:00Z",
       [](absl::CivilSecond c) {
         return (c.hour() == 1 || c.hour() == 2) && c.minute() % 10 == 0 && c.second() == 0;
       },
       false, absl::Minutes(1)},
      {"0 9 * * MON-FRI", "UTC", "2026-01-01T00:00:00Z",
       [](absl::CivilSecond c) {
         return c.hour() == 9 && AtMinute(c, 0) && !Weekday(c, absl::Weekday::saturday) &&
                !Weekday(c, absl::Weekday::sunday);
       },
       true, absl::Hours(1)},
      {"0 0 13 * FRI", "UTC", "2026-01-01T00:00:00Z",
       [](absl::CivilSecond c) {
         return c.hour() == 0 && AtMinute(c, 0) &&
                (c.day() == 13 || Weekday(c, absl::Weekday::friday));
       },
       true, absl::Hours(24)},
      {"0 0 31 * *", "UTC", "2026-01-01T00:00:00Z",
       [](absl::CivilSecond c) { return c.day() == 31 && c.hour() == 0 && AtMinute(c, 0); },
       true, absl::Hours(24)},
  };
  int gap_firings = 0;
  int second_pass_firings = 0;
  for (const Schedule& s : schedules) {
    const absl::TimeZone zone = Zone(s.zone);
    const CronExpression cron = MustParse(s.expr);
    absl::Time previous = ParseRfc3339(s.start);
    for (int i = 0; i < 1000; ++i) {
      const absl::Time next = cron.Next(previous, zone);
      ASSERT_GT(next, previous) << s.expr << " #" << i;
      ASSERT_NE(next, absl::InfiniteFuture()) << s.expr << " #" << i;
      ASSERT_TRUE(ShouldFire(s, zone, next))
          << s.expr << " #" << i << " fired at " << Format(next, zone);
      if (GapEndsAtWithMatch(s, zone, next)) ++gap_firings;
      if (IsSecondPass(zone, next)) ++second_pass_firings;
      for (absl::Time t = previous + s.grid; t < next; t += s.grid) {
        ASSERT_FALSE(ShouldFire(s, zone, t))
            << s.expr << " #" << i << " missed " << Format(t, zone) << " (went from "
            << Format(previous, zone) << " to " << Format(next, zone) << ")";
      }
      previous = next;
    }
  }
  // The DST rules were exercised, not just passed by.
  EXPECT_GT(gap_firings, 5);
  EXPECT_GT(second_pass_firings, 5);
}

TEST(CronExpressionTest, NextAfterAnInfiniteTimeIsInfiniteFuture) {
  const CronExpression cron = MustParse("* * * * * *");
  EXPECT_EQ(cron.Next(absl::InfiniteFuture(), absl::UTCTimeZone()), absl::InfiniteFuture());
  EXPECT_EQ(cron.Next(absl::InfinitePast(), absl::UTCTimeZone()), absl::InfiniteFuture());
}

}  // namespace
}  // namespace jobwire::base
