#include "state/rocksdb_version.h"

#include <rocksdb/version.h>

namespace fraud::state {

std::string rocksDbVersion() { return rocksdb::GetRocksVersionAsString(/*with_patch=*/true); }

}  // namespace fraud::state
