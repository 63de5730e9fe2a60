// ProcessMetrics: the standard Prometheus process metrics of this process,
// read from /proc at each scrape (nothing runs between scrapes):
//   process_cpu_seconds_total      user + system CPU time
//   process_resident_memory_bytes  resident set size
//   process_virtual_memory_bytes   virtual memory size
//   process_open_fds               open file descriptors
//   process_max_fds                the soft RLIMIT_NOFILE
//   process_start_time_seconds     start time, seconds since the Unix epoch
// The names and meanings are those of the Prometheus client libraries'
// process collectors, so that dashboards made for them work. A value that
// cannot be read (no /proc) is left out of the scrape.
//
// Thread safety: Collect may be called from any thread.
#ifndef JOBWIRE_BROKER_CORE_PROCESS_METRICS_H_
#define JOBWIRE_BROKER_CORE_PROCESS_METRICS_H_

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace jobwire::core {

class ProcessMetrics : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_PROCESS_METRICS_H_
