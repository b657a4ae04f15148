#include "api/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace fraud::api {

void niceThisThread(int nice) {
  thread_local int applied = 0;
  if (nice <= 0 || applied == nice) return;
  applied = nice;
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  (void)::setpriority(PRIO_PROCESS, tid, nice);
}

}  // namespace fraud::api
