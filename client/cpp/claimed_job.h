// The Job a Worker's handler gets for a delivery (ClaimedJob): its fields,
// its stop signal and its Progress, which reports through the Client and
// raises the signal when the broker answers that the run was cancelled or
// timed out.
#ifndef JOBWIRE_CLIENT_CPP_CLAIMED_JOB_H_
#define JOBWIRE_CLIENT_CPP_CLAIMED_JOB_H_

#include <memory>

#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/job.h"
#include "client/cpp/run_signal.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::client {

// The job of `claimed`, received at `received` (its deadline counts from
// then), whose stop signal is `signal` and whose Progress reports through
// `client`, which must outlive the job.
Job FromClaimed(const v1::ClaimedJob& claimed, std::shared_ptr<RunSignal> signal, Client* client,
                absl::Time received);

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_CLAIMED_JOB_H_
