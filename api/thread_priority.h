#pragma once

namespace fraud::api {

// Lowers the calling thread's CPU priority to niceness `nice` (on Linux niceness belongs to each
// thread), so that under CPU contention the service's ingest thread runs before the API's
// threads. The first call with a given value on a thread does it; later ones return at once.
// 0 (or less) leaves the thread as it is. Never fails the caller: a refused change is ignored.
// Thread-safe: it touches only the calling thread.
void niceThisThread(int nice);

}  // namespace fraud::api
