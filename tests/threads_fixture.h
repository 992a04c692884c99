/* tests/threads_fixture.h: the 4-thread trace of tests/test_threads.c and
 * bench/bench_threads.c (one definition, so the test and the benchmark
 * measure the same thing). */
#ifndef MEMSTUB_TESTS_THREADS_FIXTURE_H
#define MEMSTUB_TESTS_THREADS_FIXTURE_H

#include <stdint.h>

#include "memstub/trace.h"

/* Thread 0 creates 1 and 2, 1 creates 3; 0 joins 2 then 1; 3 is never
 * joined. Stacks of different depths (thread 3 to about 150 KiB), heaps of
 * different shapes (thread 2 through an mmapped block), and one cross-thread
 * free: 5000 bytes thread 1 allocates at 30 ms, freed by thread 2 at 90 ms.
 * stagger > 0 moves thread k's rows k x stagger ns later, so that no two
 * threads' rows coincide. A new valid trace, or NULL when out of memory. */
memstub_trace *ms_test_threads_fixture(int64_t stagger);

#endif
