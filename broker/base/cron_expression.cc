#include "broker/base/cron_expression.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "broker/base/status_macros.h"

namespace jobwire::base {
namespace {

constexpr std::array<absl::string_view, 12> kMonthNames = {
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<absl::string_view, 7> kDayNames = {"SUN", "MON", "TUE", "WED",
                                                        "THU", "FRI", "SAT"};

// One field of the expression: its name in messages, its values, and the
// names that stand for values (names[i] is first_name_value + i).
struct FieldSpec {
  absl::string_view name;
  int min;
  int max;
  int star_max;  // the top of '*' and of "a/n" (day-of-week: 6, not 7)
  bool allows_question;
  const absl::string_view* names;
  int name_count;
  int first_name_value;
};

constexpr FieldSpec kSecond = {"second", 0, 59, 59, false, nullptr, 0, 0};
constexpr FieldSpec kMinute = {"minute", 0, 59, 59, false, nullptr, 0, 0};
constexpr FieldSpec kHour = {"hour", 0, 23, 23, false, nullptr, 0, 0};
constexpr FieldSpec kDayOfMonth = {"day-of-month", 1, 31, 31, true, nullptr, 0, 0};
constexpr FieldSpec kMonth = {"month", 1, 12, 12, false, kMonthNames.data(), 12, 1};
constexpr FieldSpec kDayOfWeek = {"day-of-week", 0, 7, 6, true, kDayNames.data(), 7, 0};

struct ParsedField {
  uint64_t bits = 0;
  bool star = false;           // exactly '*' or '?'
  bool single_values = true;   // every element is a single value
};

// "0-59", "1-12 or JAN-DEC".
std::string Allowed(const FieldSpec& spec) {
  std::string allowed = absl::StrCat(spec.min, "-", spec.max);
  if (spec.names != nullptr) {
    absl::StrAppend(&allowed, " or ", spec.names[0], "-", spec.names[spec.name_count - 1]);
  }
  return allowed;
}

absl::Status FieldError(const FieldSpec& spec, absl::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat(spec.name, ": ", detail));
}

bool AllDigits(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), absl::ascii_isdigit);
}

// A value (number or name) of `spec`; `element` is the list element it is
// part of, for messages.
absl::StatusOr<int> ParseValue(const FieldSpec& spec, absl::string_view token,
                               absl::string_view element) {
  if (token.empty()) {
    return FieldError(spec, absl::StrCat("missing value in \"", element, "\" (allowed ",
                                         Allowed(spec), ")"));
  }
  if (AllDigits(token)) {
    int value = 0;
    if (!absl::SimpleAtoi(token, &value) || value < spec.min || value > spec.max) {
      return FieldError(spec, absl::StrCat(token, " is out of range ", spec.min, "-", spec.max));
    }
    return value;
  }
  if (spec.names == nullptr) {
    return FieldError(spec, absl::StrCat("\"", token, "\" is not a number in ", Allowed(spec)));
  }
  for (int i = 0; i < spec.name_count; ++i) {
    if (absl::EqualsIgnoreCase(token, spec.names[i])) return spec.first_name_value + i;
  }
  return FieldError(spec, absl::StrCat("unknown name \"", token, "\" (allowed ", Allowed(spec),
                                       ")"));
}

// One list element: "*", "a", "a-b", with an optional "/n".
absl::Status ParseElement(const FieldSpec& spec, absl::string_view element, ParsedField* field) {
  if (element.empty()) {
    return FieldError(spec, absl::StrCat("empty list element (allowed ", Allowed(spec), ")"));
  }
  if (element.find('?') != absl::string_view::npos) {
    return FieldError(spec, spec.allows_question
                                ? absl::StrCat("\"?\" must be the whole field, not \"", element,
                                               "\"")
                                : absl::StrCat("\"?\" is only allowed in day-of-month and "
                                               "day-of-week (allowed ", Allowed(spec), ")"));
  }
  std::vector<absl::string_view> parts = absl::StrSplit(element, '/');
  if (parts.size() > 2) {
    return FieldError(spec, absl::StrCat("more than one step in \"", element, "\""));
  }
  const absl::string_view base = parts[0];
  const bool has_step = parts.size() == 2;
  int step = 1;
  if (has_step) {
    const int max_step = spec.max - spec.min + 1;
    if (!AllDigits(parts[1])) {
      return FieldError(spec, absl::StrCat("step \"", parts[1], "\" in \"", element,
                                           "\" is not a number in 1-", max_step));
    }
    if (!absl::SimpleAtoi(parts[1], &step) || step < 1 || step > max_step) {
      return FieldError(spec, absl::StrCat("step ", parts[1], " in \"", element,
                                           "\" is out of range 1-", max_step));
    }
  }
  int low = 0;
  int high = 0;
  if (base == "*") {
    low = spec.min;
    high = spec.star_max;
  } else {
    std::vector<absl::string_view> ends = absl::StrSplit(base, '-');
    if (ends.size() > 2) {
      return FieldError(spec, absl::StrCat("\"", element, "\" is not a value or a range a-b in ",
                                           Allowed(spec)));
    }
    JW_ASSIGN_OR_RETURN(low, ParseValue(spec, ends[0], element));
    if (ends.size() == 2) {
      JW_ASSIGN_OR_RETURN(high, ParseValue(spec, ends[1], element));
      if (low > high) {
        return FieldError(spec, absl::StrCat("range ", base, " is reversed (allowed ",
                                             Allowed(spec), ")"));
      }
    } else {
      high = has_step ? std::max(low, spec.star_max) : low;
    }
  }
  for (int v = low; v <= high; v += step) field->bits |= uint64_t{1} << v;
  if (base == "*" || base.find('-') != absl::string_view::npos || has_step) {
    field->single_values = false;
  }
  return absl::OkStatus();
}

absl::StatusOr<ParsedField> ParseField(const FieldSpec& spec, absl::string_view text) {
  ParsedField field;
  if (text == "?" && spec.allows_question) {
    field.star = true;
    text = "*";
  } else if (text == "*") {
    field.star = true;
  }
  for (absl::string_view element : absl::StrSplit(text, ',')) {
    JW_RETURN_IF_ERROR(ParseElement(spec, element, &field));
  }
  if (&spec == &kDayOfWeek && (field.bits & (uint64_t{1} << 7)) != 0) {
    field.bits = (field.bits | 1) & ~(uint64_t{1} << 7);  // 7 is Sunday, as 0
  }
  return field;
}

// The five fields a macro ("@daily") stands for; INVALID_ARGUMENT for an
// unknown or unsupported one.
absl::StatusOr<absl::string_view> ExpandMacro(absl::string_view macro) {
  static constexpr std::pair<absl::string_view, absl::string_view> kMacros[] = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"}};
  for (const auto& [name, fields] : kMacros) {
    if (absl::EqualsIgnoreCase(macro, name)) return fields;
  }
  if (absl::EqualsIgnoreCase(macro, "@reboot") || absl::EqualsIgnoreCase(macro, "@every")) {
    return absl::InvalidArgumentError(absl::StrCat(macro, " is not supported"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown macro \"", macro,
      "\" (allowed @yearly @annually @monthly @weekly @daily @midnight @hourly)"));
}

// The lowest set bit of `bits` at or above `from` (< 64), or -1.
int NextBit(uint64_t bits, int from) {
  const uint64_t above = bits & (~uint64_t{0} << from);
  return above == 0 ? -1 : __builtin_ctzll(above);
}

}  // namespace

absl::StatusOr<CronExpression> CronExpression::Parse(absl::string_view text) {
  const std::vector<absl::string_view> tokens =
      absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (tokens.empty()) return absl::InvalidArgumentError("empty cron expression");
  CronExpression cron;
  cron.text_ = absl::StrJoin(tokens, " ");
  std::vector<absl::string_view> fields = tokens;
  if (absl::StartsWith(tokens[0], "@")) {
    if (tokens.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a macro stands alone: \"", cron.text_, "\" has ", tokens.size() - 1,
          " more field(s)"));
    }
    JW_ASSIGN_OR_RETURN(absl::string_view expanded, ExpandMacro(tokens[0]));
    fields = absl::StrSplit(expanded, ' ');
  }
  if (fields.size() != 5 && fields.size() != 6) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (second first), "
        "got ", fields.size(), " in \"", cron.text_, "\""));
  }
  if (fields.size() == 5) fields.insert(fields.begin(), "0");
  const FieldSpec* specs[] = {&kSecond, &kMinute, &kHour, &kDayOfMonth, &kMonth, &kDayOfWeek};
  ParsedField parsed[6];
  for (int i = 0; i < 6; ++i) {
    JW_ASSIGN_OR_RETURN(parsed[i], ParseField(*specs[i], fields[i]));
  }
  cron.seconds_ = parsed[0].bits;
  cron.minutes_ = parsed[1].bits;
  cron.hours_ = parsed[2].bits;
  cron.hour_fixed_ = parsed[2].single_values;
  cron.days_of_month_ = parsed[3].bits;
  cron.day_of_month_star_ = parsed[3].star;
  cron.months_ = parsed[4].bits;
  cron.days_of_week_ = parsed[5].bits;
  cron.day_of_week_star_ = parsed[5].star;
  return cron;
}

bool CronExpression::DayMatches(absl::CivilDay day) const {
  // absl::Weekday counts from Monday = 0; cron from Sunday = 0.
  const int weekday = (static_cast<int>(absl::GetWeekday(day)) + 1) % 7;
  const bool dom = (days_of_month_ >> day.day()) & 1;
  const bool dow = (days_of_week_ >> weekday) & 1;
  if (day_of_month_star_ || day_of_week_star_) return dom && dow;
  return dom || dow;
}

std::optional<absl::CivilSecond> CronExpression::NextMatch(absl::CivilSecond c,
                                                           absl::CivilSecond limit) const {
  while (c <= limit) {
    const int month = NextBit(months_, c.month());
    if (month < 0) {
      c = absl::CivilSecond(c.year() + 1, 1, 1);
      continue;
    }
    if (month != c.month()) {
      c = absl::CivilSecond(c.year(), month, 1);
      continue;
    }
    if (!DayMatches(absl::CivilDay(c))) {
      c = absl::CivilSecond(absl::CivilDay(c) + 1);
      continue;
    }
    const int hour = NextBit(hours_, c.hour());
    if (hour < 0) {
      c = absl::CivilSecond(absl::CivilDay(c) + 1);
      continue;
    }
    if (hour != c.hour()) {
      c = absl::CivilSecond(c.year(), c.month(), c.day(), hour);
      continue;
    }
    const int minute = NextBit(minutes_, c.minute());
    if (minute < 0) {
      c = absl::CivilSecond(absl::CivilHour(c) + 1);
      continue;
    }
    if (minute != c.minute()) {
      c = absl::CivilSecond(c.year(), c.month(), c.day(), c.hour(), minute);
      continue;
    }
    const int second = NextBit(seconds_, c.second());
    if (second < 0) {
      c = absl::CivilSecond(absl::CivilMinute(c) + 1);
      continue;
    }
    return absl::CivilSecond(c.year(), c.month(), c.day(), c.hour(), c.minute(), second);
  }
  return std::nullopt;
}

// Walks the matching civil times in civil order and maps each to the
// instants it fires at: a unique time to its instant, a skipped one to the
// transition, a repeated one to its first pass (and, unless the hour is
// fixed, its second pass too). The first-pass instants never decrease in
// civil order, so the first one after `after` ends the walk; second-pass
// instants, which can come later than the first pass of later civil times,
// are kept as candidates until then.
absl::Time CronExpression::Next(absl::Time after, absl::TimeZone zone) const {
  if (after == absl::InfiniteFuture() || after == absl::InfinitePast()) {
    return absl::InfiniteFuture();
  }
  const absl::CivilSecond after_civil = zone.At(after).cs;
  absl::CivilSecond start = after_civil;
  // In the first pass of a repeated stretch, earlier civil times of the
  // stretch still have second-pass instants after `after`: start from the
  // stretch's beginning.
  const absl::TimeZone::TimeInfo at_start = zone.At(start);
  if (at_start.kind == absl::TimeZone::TimeInfo::REPEATED && after < at_start.trans) {
    start = zone.At(at_start.trans).cs;
  }
  const absl::CivilSecond limit(start.year() + 5, start.month(), start.day(), start.hour(),
                                start.minute(), start.second());

  absl::Time best = absl::InfiniteFuture();  // the earliest second-pass candidate
  for (std::optional<absl::CivilSecond> c = NextMatch(start, limit); c.has_value();
       // Once there is a candidate, the civil times up to `after_civil` can
       // only offer later second passes: skip them.
       c = NextMatch(best == absl::InfiniteFuture() ? *c + 1 : std::max(*c, after_civil) + 1,
                     limit)) {
    const absl::TimeZone::TimeInfo info = zone.At(*c);
    absl::Time first = info.pre;
    absl::Time second = absl::InfiniteFuture();
    if (info.kind == absl::TimeZone::TimeInfo::SKIPPED) {
      first = info.trans;
    } else if (info.kind == absl::TimeZone::TimeInfo::REPEATED && !hour_fixed_) {
      second = info.post;
    }
    if (first > after) return std::min(first, best);
    if (second > after) best = std::min(best, second);
  }
  return best;
}

}  // namespace jobwire::base
