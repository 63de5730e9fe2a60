#include "broker/core/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace jobwire::core {
namespace {

std::optional<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The fields of /proc/<pid>/stat after the command name (which may hold
// spaces and parentheses, so it is skipped up to the last ')'): element 0 is
// field 3 (state) of proc(5).
std::vector<std::string> StatFields(const std::string& stat) {
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  return absl::StrSplit(absl::string_view(stat).substr(close + 1), ' ', absl::SkipEmpty());
}

// Field `n` (1-based, as proc(5) numbers them) of /proc/<pid>/stat.
std::optional<double> StatField(const std::vector<std::string>& fields, size_t n) {
  double v = 0;
  if (n < 3 || n - 3 >= fields.size() || !absl::SimpleAtod(fields[n - 3], &v)) return std::nullopt;
  return v;
}

std::optional<double> BootTime(const std::string& proc_stat) {
  std::optional<std::string> text = ReadAll(proc_stat);
  if (!text) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (absl::ConsumePrefix(&line, "btime ")) {
      double v = 0;
      if (absl::SimpleAtod(line, &v)) return v;
    }
  }
  return std::nullopt;
}

std::optional<double> OpenFds(const std::string& fd_dir) {
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) return std::nullopt;
  double n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // the descriptor opendir itself holds
}

void Add(std::vector<prometheus::MetricFamily>* out, const char* name, const char* help,
         prometheus::MetricType type, std::optional<double> value) {
  if (!value) return;
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = *value;
  } else {
    metric.gauge.value = *value;
  }
  family.metric.push_back(std::move(metric));
  out->push_back(std::move(family));
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessMetrics::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  std::optional<std::string> stat = ReadAll("/proc/self/stat");
  std::vector<std::string> fields = stat ? StatFields(*stat) : std::vector<std::string>();
  std::optional<double> utime = StatField(fields, 14), stime = StatField(fields, 15);
  std::optional<double> start = StatField(fields, 22), vsize = StatField(fields, 23),
                        rss = StatField(fields, 24);
  std::optional<double> boot = BootTime("/proc/stat");

  Add(&out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds",
      MetricType::Counter,
      utime && stime ? std::optional<double>((*utime + *stime) / ticks) : std::nullopt);
  Add(&out, "process_resident_memory_bytes", "Resident memory size in bytes", MetricType::Gauge,
      rss ? std::optional<double>(*rss * page) : std::nullopt);
  Add(&out, "process_virtual_memory_bytes", "Virtual memory size in bytes", MetricType::Gauge,
      vsize);
  Add(&out, "process_open_fds", "Number of open file descriptors", MetricType::Gauge,
      OpenFds("/proc/self/fd"));
  rlimit limit{};
  Add(&out, "process_max_fds", "Maximum number of open file descriptors", MetricType::Gauge,
      getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
          ? std::optional<double>(static_cast<double>(limit.rlim_cur))
          : std::nullopt);
  Add(&out, "process_start_time_seconds",
      "Start time of the process since unix epoch in seconds", MetricType::Gauge,
      start && boot ? std::optional<double>(*boot + *start / ticks) : std::nullopt);
  return out;
}

}  // namespace jobwire::core
