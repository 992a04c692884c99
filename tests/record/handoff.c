/* tests/record/handoff.c: one thread allocates, another writes and frees
 * (issue 29 item 2, tests/test_threads_resident.c). Built plain: it runs
 * under the LD_PRELOAD recorder.
 *
 *   handoff [BLOCKS [MIB [HOLD_MS]]]   (defaults 8 4 300)
 *
 * The main thread mallocs BLOCKS blocks of MIB MiB without writing them and
 * passes them to a worker thread, which writes every page of each, holds
 * them all HOLD_MS ms, and frees them: the process's resident memory is the
 * blocks' pages once, made resident by the thread that did not allocate
 * them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static char **blocks;
static size_t nblocks, len;
static long hold_ms;

static void *writer(void *arg) {
  (void)arg;
  for (size_t k = 0; k < nblocks; k++)
    for (size_t i = 0; i < len; i += 4096) blocks[k][i] = (char)(k + i);
  /* A scratch block: the recorder reads the resident memory when a thread's
   * heap grows by a page or more, and at its ticks of 1 ms of the thread's
   * CPU time; the pages written after the last tick would be seen only at
   * the next reading, after the sleep. */
  char *volatile scratch = malloc(64 << 10);
  free(scratch);
  struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  long sum = 0;
  for (size_t k = 0; k < nblocks; k++) {
    sum += blocks[k][len - 4096];
    free(blocks[k]);  // the main thread's block
  }
  return (void *)sum;
}

int main(int argc, char **argv) {
  nblocks = argc > 1 ? (size_t)atol(argv[1]) : 8;
  len = (argc > 2 ? (size_t)atol(argv[2]) : 4) << 20;
  hold_ms = argc > 3 ? atol(argv[3]) : 300;
  if (nblocks < 1 || nblocks > 1024 || len == 0 || hold_ms < 0) return 2;
  blocks = malloc(nblocks * sizeof *blocks);
  if (!blocks) return 1;
  for (size_t k = 0; k < nblocks; k++)
    if (!(blocks[k] = malloc(len))) return 1;
  pthread_t th;
  if (pthread_create(&th, NULL, writer, NULL) != 0) return 1;
  void *sum;
  pthread_join(th, &sum);
  free(blocks);
  printf("%ld\n", (long)sum);
  return 0;
}
