#pragma once

#include "detectors/base/status.h"

namespace fraud::service {

// Keeps what the process holds in memory (the card-hash key, the API token, TLS keys, clear card
// numbers of records in flight) out of core files: RLIMIT_CORE 0 (soft and hard), and
// PR_SET_DUMPABLE 0, which also stops the kernel's core-dump pipe (systemd-coredump, apport) and
// makes /proc/PID/mem, /proc/PID/environ and ptrace unavailable to other processes of the same
// user. Call once at start, before secrets are read and before any thread starts.
// An error saying what failed, or ok.
[[nodiscard]] base::Status disableCoreDumps();

}  // namespace fraud::service
