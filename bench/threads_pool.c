/* bench/threads_pool.c: a worker pool that passes blocks between threads, a
 * real multi-threaded program of our own for bench/real/threads (issue 29
 * item 4). Not part of memstub: built plain, it runs under the recorder.
 *
 *   threads_pool [WORKERS [BLOCKS [BLOCK_KIB [ROUNDS]]]]   (defaults 2 100 1024 12)
 *
 * The main thread fills BLOCKS input blocks of BLOCK_KIB KiB with
 * deterministic text and queues them; WORKERS threads each take a block,
 * transform it ROUNDS times (CPU work), write a result block of their own
 * (half the input's size), free the input (a block of the main thread's:
 * a cross-thread free) and queue the result; the main thread folds each
 * result into a checksum and frees it (a block of a worker's). At most
 * 2 * WORKERS + 2 blocks are in flight, so the heap stays bounded while the
 * blocks move between every pair of threads. Prints the checksum. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
  struct item *next;
  unsigned char *data;
  size_t len;
} item;

// A queue of items with a bound on what it holds (0: none).
typedef struct queue {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  item *head, *tail;
  size_t n, cap;
  int closed;
} queue;

static void q_init(queue *q, size_t cap) {
  memset(q, 0, sizeof *q);
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  q->cap = cap;
}

static void q_put(queue *q, item *it) {
  pthread_mutex_lock(&q->mu);
  while (q->cap && q->n >= q->cap) pthread_cond_wait(&q->cv, &q->mu);
  it->next = NULL;
  if (q->tail) q->tail->next = it;
  else q->head = it;
  q->tail = it;
  q->n++;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

// The next item, or NULL once the queue is closed and empty.
static item *q_get(queue *q) {
  pthread_mutex_lock(&q->mu);
  while (!q->head && !q->closed) pthread_cond_wait(&q->cv, &q->mu);
  item *it = q->head;
  if (it) {
    q->head = it->next;
    if (!q->head) q->tail = NULL;
    q->n--;
    pthread_cond_broadcast(&q->cv);
  }
  pthread_mutex_unlock(&q->mu);
  return it;
}

static void q_close(queue *q) {
  pthread_mutex_lock(&q->mu);
  q->closed = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

static queue in_q, out_q;
static int rounds = 12;

static void *worker(void *arg) {
  (void)arg;
  item *it;
  while ((it = q_get(&in_q))) {
    size_t half = it->len / 2;
    unsigned char *out = malloc(half);
    if (!out) abort();
    // Rounds of a byte-wise mix over the input: the work, then the result.
    uint32_t h = 2166136261u;
    for (int r = 0; r < rounds; r++)
      for (size_t i = 0; i < it->len; i++) h = (h ^ it->data[i]) * 16777619u;
    for (size_t i = 0; i < half; i++) out[i] = (unsigned char)(it->data[2 * i] ^ (h >> (i & 24)));
    free(it->data);  // the main thread's block
    it->data = out;
    it->len = half;
    q_put(&out_q, it);
  }
  return NULL;
}

typedef struct collector {
  size_t blocks;
  uint64_t sum;
} collector;

static void *collect(void *arg) {
  collector *c = arg;
  for (size_t k = 0; k < c->blocks; k++) {
    item *it = q_get(&out_q);
    if (!it) break;
    for (size_t i = 0; i < it->len; i += 64) c->sum = c->sum * 31 + it->data[i];
    free(it->data);  // a worker's block
    free(it);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int workers = argc > 1 ? atoi(argv[1]) : 2;
  size_t blocks = argc > 2 ? (size_t)atol(argv[2]) : 100;
  size_t len = (argc > 3 ? (size_t)atol(argv[3]) : 1024) * 1024;
  rounds = argc > 4 ? atoi(argv[4]) : 12;
  if (workers < 1 || workers > 64 || blocks < 1 || len < 64 || rounds < 0) {
    fprintf(stderr, "usage: threads_pool [WORKERS [BLOCKS [BLOCK_KIB [ROUNDS]]]]\n");
    return 2;
  }
  q_init(&in_q, (size_t)workers + 1);
  q_init(&out_q, 0);
  pthread_t th[64], col;
  for (int w = 0; w < workers; w++)
    if (pthread_create(&th[w], NULL, worker, NULL) != 0) return 1;
  collector c = {blocks, 0};
  if (pthread_create(&col, NULL, collect, &c) != 0) return 1;
  uint32_t x = 29;
  for (size_t k = 0; k < blocks; k++) {
    item *it = malloc(sizeof *it);
    unsigned char *d = malloc(len);
    if (!it || !d) abort();
    for (size_t i = 0; i < len; i++) {  // deterministic text: letters and spaces
      x = x * 1103515245u + 12345u;
      d[i] = (x >> 16) % 27 == 26 ? ' ' : (unsigned char)('a' + (x >> 16) % 27);
    }
    it->data = d;
    it->len = len;
    q_put(&in_q, it);
  }
  q_close(&in_q);
  for (int w = 0; w < workers; w++) pthread_join(th[w], NULL);
  q_close(&out_q);
  pthread_join(col, NULL);
  printf("%016llx\n", (unsigned long long)c.sum);
  return 0;
}
