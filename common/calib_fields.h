/* common/calib_fields.h: the work figures of a calibration profile
 * (memstub_calib_costs, include/memstub/calib.h) in the profile's order,
 * for the code that names them: the profile's keys (calibration/profile.c)
 * and the figures compensation used (generator/compensate.c).
 *
 * MS__CALIB_COSTS(X) expands X(field, kind) for each field: kind TIME (a
 * time figure, keys time_FIELD_*), PER_FAULT or PER_PAGE (a line, keys
 * time_FIELD_base_* and time_FIELD_per_fault_* or _per_page_*). */
#ifndef MEMSTUB_CALIB_FIELDS_H
#define MEMSTUB_CALIB_FIELDS_H

#define MS__CALIB_COSTS(X)         \
  X(basic, TIME)                   \
  X(heap_alloc_nofault, TIME)      \
  X(heap_alloc_fault, TIME)        \
  X(heap_use, PER_FAULT)           \
  X(heap_shrink, TIME)             \
  X(heap_mmap_alloc_nofault, TIME) \
  X(heap_mmap_alloc_fault, TIME)   \
  X(heap_mmap_use, PER_FAULT)      \
  X(heap_mmap_shrink, PER_PAGE)    \
  X(heap_mmap_shrink_inpage, TIME) \
  X(heap_to_mmap, PER_PAGE)        \
  X(heap_from_mmap, TIME)          \
  X(stack_alloc_nofault, TIME)     \
  X(stack_alloc_fault, TIME)       \
  X(stack_use, PER_FAULT)          \
  X(stack_pop, TIME)

#endif
