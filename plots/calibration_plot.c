// The calibration's fits (memstub calibrate --plot), drawn by gnuplot with
// plots/calibration.gp: the samples go to temporary data files, the script
// draws them with the fitted models, and the image appears atomically.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnuplot.h"
#include "memstub/calib.h"
#include "ms_common.h"

static int write_series(const char *path, const memstub_calib_sample *v, size_t n,
                        memstub_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  fputs("# x value model\n", f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%g %g %g\n", v[i].faults, v[i].value, v[i].predicted);
  if (n == 0) fputs("0 NaN NaN\n", f);  // gnuplot refuses an empty file
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) return memstub_error_set(err, -EIO, "%s: write failed", path);
  return 0;
}

static int write_vars(const char *path, const memstub_calib *c, memstub_error *err) {
  const memstub_profile *p = &c->profile;
  const memstub_calib_costs *h = &p->hot;
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  fprintf(f, "# written by memstub calibrate for plots/calibration.gp\n");
  char cpu[160];
  snprintf(cpu, sizeof cpu, "%s", p->cpu);
  for (char *q = cpu; *q; q++)
    if (*q == '\'' || (unsigned char)*q < 0x20) *q = ' ';
  fprintf(f, "title = 'memstub calibration: %s, %s, %lld repetitions, %s'\n", cpu, p->kernel,
          (long long)p->repetitions, p->date);
  fprintf(f, "heap_use = '%.0f ns + %.0f ns x faults (R² %.2f)'\n", h->heap_use.base.ns,
          h->heap_use.per_fault.ns, h->heap_use.r2);
  fprintf(f, "heap_mmap_use = '%.0f ns + %.0f ns x faults (R² %.2f)'\n", h->heap_mmap_use.base.ns,
          h->heap_mmap_use.per_fault.ns, h->heap_mmap_use.r2);
  fprintf(f, "heap_alloc = '%.0f ns without a fault, %.0f ns with'\n", h->heap_alloc_nofault.ns,
          h->heap_alloc_fault.ns);
  fprintf(f, "stack_use = '%.0f ns + %.0f ns x faults (R² %.2f)'\n", h->stack_use.base.ns,
          h->stack_use.per_fault.ns, h->stack_use.r2);
  fprintf(f, "stack_retouch = 'cached stack: %.0f ns + %.0f ns x faults'\n",
          p->stack_use_retouch.base.ns, p->stack_use_retouch.per_fault.ns);
  fprintf(f, "stack_alloc = '%.0f ns without a fault, %.0f ns with'\n", h->stack_alloc_nofault.ns,
          h->stack_alloc_fault.ns);
  fprintf(f, "stack_bytes = 'offset %lld B + %lld B per frame (R² %.4f)'\n",
          (long long)p->stack_offset, (long long)p->stack_per_frame, p->stack_fit_r2);
  fprintf(f, "basic = 'time_basic %.1f ns = %.0f cycles, SCV %.3g'\n", h->basic.ns, h->basic.cycles,
          h->basic.scv);
  fprintf(f, "basic_ns = %g\n", h->basic.ns);
  // The models' coefficients, ns (bytes for the stack).
  fprintf(f, "hu_a = %g\nhu_b = %g\nmu_a = %g\nmu_b = %g\n", h->heap_use.base.ns,
          h->heap_use.per_fault.ns, h->heap_mmap_use.base.ns, h->heap_mmap_use.per_fault.ns);
  fprintf(f, "su_a = %g\nsu_b = %g\nsr_a = %g\nsr_b = %g\n", h->stack_use.base.ns,
          h->stack_use.per_fault.ns, p->stack_use_retouch.base.ns,
          p->stack_use_retouch.per_fault.ns);
  fprintf(f, "ha0 = %g\nha1 = %g\nsa0 = %g\nsa1 = %g\n", h->heap_alloc_nofault.ns,
          h->heap_alloc_fault.ns, h->stack_alloc_nofault.ns, h->stack_alloc_fault.ns);
  fprintf(f, "so = %lld\nsf = %lld\n", (long long)p->stack_offset, (long long)p->stack_per_frame);
  // The cold fits (docs/calibration.md, "Cold costs"); cold = 0 without them.
  fprintf(f, "cold = %d\n", p->cold_delay > 0);
  char delay[MS__FMT_MAX];
  fprintf(f, "cold_title = 'cold (%s sleeps), measured'\n",
          ms__fmt_ns(p->cold_delay, delay, sizeof delay));
  fprintf(f, "cold_heap_mmap_use = 'cold median: %.0f ns + %.0f ns x faults'\n",
          p->cold.heap_mmap_use.base.ns, p->cold.heap_mmap_use.per_fault.ns);
  fprintf(f, "cold_stack_use = 'cold median: %.0f ns + %.0f ns x faults'\n",
          p->cold.stack_use.base.ns, p->cold.stack_use.per_fault.ns);
  fprintf(f, "cmu_a = %g\ncmu_b = %g\ncsu_a = %g\ncsu_b = %g\n", p->cold.heap_mmap_use.base.ns,
          p->cold.heap_mmap_use.per_fault.ns, p->cold.stack_use.base.ns,
          p->cold.stack_use.per_fault.ns);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) return memstub_error_set(err, -EIO, "%s: write failed", path);
  return 0;
}

int memstub_calib_plot(const memstub_calib *c, const char *out, memstub_error *err) {
  ms__gnuplot g;
  int rc = ms__gnuplot_begin(&g, out, "calibration.gp", NULL, NULL, NULL, 0, err);
  if (rc < 0) return rc;
  char *path = NULL;
  for (size_t i = 0; rc == 0 && i < MS__ARRAY_SIZE(c->samples); i++) {
    char name[32];
    snprintf(name, sizeof name, "s%zu.dat", i);
    path = ms__gnuplot_path(&g, name);
    rc = path ? write_series(path, c->samples[i], c->nsamples[i], err)
              : memstub_error_set(err, -ENOMEM, "out of memory");
    free(path);
  }
  if (rc == 0) {
    path = ms__gnuplot_path(&g, "basic.dat");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) {
      rc = memstub_error_set(err, path ? -errno : -ENOMEM, "%s: cannot write",
                             path ? path : "basic.dat");
    } else {
      for (size_t i = 0; i < c->nbasic; i++) fprintf(f, "%zu %g\n", i + 1, c->basic_rep_ns[i]);
      if (c->nbasic == 0) fputs("0 NaN\n", f);
      if (fclose(f) != 0) rc = memstub_error_set(err, -EIO, "%s: write failed", path);
    }
    free(path);
  }
  if (rc == 0) {
    path = ms__gnuplot_path(&g, "vars.gp");
    rc = path ? write_vars(path, c, err) : memstub_error_set(err, -ENOMEM, "out of memory");
    free(path);
  }
  if (rc == 0) rc = ms__gnuplot_render(&g, out, NULL, err);
  ms__gnuplot_end(&g);
  return rc;
}
