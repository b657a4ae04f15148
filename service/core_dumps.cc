#include "service/core_dumps.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace fraud::service {

base::Status disableCoreDumps() {
  // Lowering the hard limit too means nothing later in the process can raise it again.
  const rlimit none{.rlim_cur = 0, .rlim_max = 0};
  if (::setrlimit(RLIMIT_CORE, &none) != 0) {
    return base::Status::failed(std::string("setrlimit(RLIMIT_CORE, 0): ") + std::strerror(errno));
  }
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return base::Status::failed(std::string("prctl(PR_SET_DUMPABLE, 0): ") + std::strerror(errno));
  }
  return {};
}

}  // namespace fraud::service
