// ThreadSanitizer intercepts pthreads but not the C11 <threads.h> functions, whose glibc versions
// call pthreads internally where no interceptor sees them. librdkafka uses C11 threads, so under
// TSan its threads would be unknown (crashing in the allocator) and its locks invisible (false
// races). Preloaded in the tsan build (tests/CMakeLists.txt), these definitions route C11 thread,
// mutex and condition calls through the intercepted pthread ones. glibc defines thrd_t as
// pthread_t and mtx_t/cnd_t as unions over pthread_mutex_t/pthread_cond_t, so the casts hold.
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

static int result(int err) {
  switch (err) {
    case 0:
      return thrd_success;
    case ETIMEDOUT:
      return thrd_timedout;
    case EBUSY:
      return thrd_busy;
    case ENOMEM:
    case EAGAIN:
      return thrd_nomem;
    default:
      return thrd_error;
  }
}

struct start {
  thrd_start_t func;
  void* arg;
};

static void* trampoline(void* p) {
  struct start s = *(struct start*)p;
  free(p);
  return (void*)(intptr_t)s.func(s.arg);
}

int thrd_create(thrd_t* thread, thrd_start_t func, void* arg) {
  struct start* s = malloc(sizeof(*s));
  if (s == NULL) return thrd_nomem;
  s->func = func;
  s->arg = arg;
  const int err = pthread_create(thread, NULL, trampoline, s);
  if (err != 0) free(s);
  return result(err);
}

int thrd_join(thrd_t thread, int* res) {
  void* value = NULL;
  const int err = pthread_join(thread, &value);
  if (err == 0 && res != NULL) *res = (int)(intptr_t)value;
  return result(err);
}

int thrd_detach(thrd_t thread) { return result(pthread_detach(thread)); }

int mtx_init(mtx_t* mutex, int type) {
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  if (type & mtx_recursive) pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
  const int err = pthread_mutex_init((pthread_mutex_t*)mutex, &attributes);
  pthread_mutexattr_destroy(&attributes);
  return result(err);
}

int mtx_lock(mtx_t* mutex) { return result(pthread_mutex_lock((pthread_mutex_t*)mutex)); }
int mtx_trylock(mtx_t* mutex) { return result(pthread_mutex_trylock((pthread_mutex_t*)mutex)); }
int mtx_timedlock(mtx_t* mutex, const struct timespec* deadline) {
  return result(pthread_mutex_timedlock((pthread_mutex_t*)mutex, deadline));
}
int mtx_unlock(mtx_t* mutex) { return result(pthread_mutex_unlock((pthread_mutex_t*)mutex)); }
void mtx_destroy(mtx_t* mutex) { pthread_mutex_destroy((pthread_mutex_t*)mutex); }

int cnd_init(cnd_t* cond) { return result(pthread_cond_init((pthread_cond_t*)cond, NULL)); }
int cnd_signal(cnd_t* cond) { return result(pthread_cond_signal((pthread_cond_t*)cond)); }
int cnd_broadcast(cnd_t* cond) { return result(pthread_cond_broadcast((pthread_cond_t*)cond)); }
int cnd_wait(cnd_t* cond, mtx_t* mutex) {
  return result(pthread_cond_wait((pthread_cond_t*)cond, (pthread_mutex_t*)mutex));
}
int cnd_timedwait(cnd_t* cond, mtx_t* mutex, const struct timespec* deadline) {
  return result(pthread_cond_timedwait((pthread_cond_t*)cond, (pthread_mutex_t*)mutex, deadline));
}
void cnd_destroy(cnd_t* cond) { pthread_cond_destroy((pthread_cond_t*)cond); }
