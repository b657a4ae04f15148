#pragma once

// Clang's thread-safety attributes (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), so
// the compiler checks what a header's prose promises: which lock guards a member, which lock a
// function needs held. Under GCC they expand to nothing; the clang check is
// tests/lint/check_thread_safety.py (ctest label lint).
//
// Use them through Mutex and MutexLock (detectors/base/mutex.h): std::mutex carries no
// attributes in libstdc++, so a member guarded by one is not checked.

#if defined(__clang__)
#define FRAUD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FRAUD_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (Mutex).
#define FRAUD_CAPABILITY(name) FRAUD_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a lock for its scope (MutexLock).
#define FRAUD_SCOPED_CAPABILITY FRAUD_THREAD_ANNOTATION(scoped_lockable)

// A member read or written only with `mu` held.
#define FRAUD_GUARDED_BY(mu) FRAUD_THREAD_ANNOTATION(guarded_by(mu))
// A pointer member whose pointee is read or written only with `mu` held.
#define FRAUD_PT_GUARDED_BY(mu) FRAUD_THREAD_ANNOTATION(pt_guarded_by(mu))

// A function its caller calls with these locks held (RocksDB's "REQUIRES: mutex held").
#define FRAUD_REQUIRES(...) FRAUD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// A function its caller calls without these locks (it takes them itself).
#define FRAUD_EXCLUDES(...) FRAUD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define FRAUD_ACQUIRE(...) FRAUD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define FRAUD_RELEASE(...) FRAUD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define FRAUD_TRY_ACQUIRE(...) FRAUD_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// The same for a lock held shared (a reader's hold on a SharedMutex).
#define FRAUD_REQUIRES_SHARED(...) FRAUD_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define FRAUD_ACQUIRE_SHARED(...) FRAUD_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define FRAUD_RELEASE_SHARED(...) FRAUD_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define FRAUD_TRY_ACQUIRE_SHARED(...) \
  FRAUD_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
// A function that returns only with the lock held, or fails fast (Mutex::assertHeld()).
#define FRAUD_ASSERT_CAPABILITY(mu) FRAUD_THREAD_ANNOTATION(assert_capability(mu))
// A function returning a reference to the lock `mu`.
#define FRAUD_RETURN_CAPABILITY(mu) FRAUD_THREAD_ANNOTATION(lock_returned(mu))
// Turns the check off for one function: say in a comment why the analysis cannot follow it.
#define FRAUD_NO_THREAD_SAFETY_ANALYSIS FRAUD_THREAD_ANNOTATION(no_thread_safety_analysis)
